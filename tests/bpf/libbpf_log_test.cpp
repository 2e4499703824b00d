// verifier_refusal(): the program and the reason, read from libbpf's own words on a refused
// load, as this machine's libbpf (1.1) and 6.18 kernel wrote them for a build whose switch
// program went past the BPF stack's limit.
#include <gtest/gtest.h>

#include <string>

#include "bpf/libbpf_log.h"

namespace offwake::bpf {
namespace {

const std::string kRefused =
    "libbpf: Error in bpf_create_map_xattr(aggregates):Invalid argument(-22). Retrying without BTF.\n"
    "libbpf: prog 'offwake_switch': BPF program load failed: Permission denied\n"
    "libbpf: prog 'offwake_switch': -- BEGIN PROG LOAD LOG --\n"
    "Func#16 ('kstack_place') is safe for any args that match its prototype\n"
    "combined stack size of 5 calls is 528. Too large\n"
    "processed 190340 insns (limit 1000000) max_states_per_insn 55 total_states 10097 peak_states 8288 "
    "mark_read 0\n"
    "-- END PROG LOAD LOG --\n"
    "libbpf: prog 'offwake_switch': failed to load: -13\n"
    "libbpf: failed to load object 'offwake'\n";

TEST(VerifierRefusal, NamesTheProgramAndTheVerifiersLastWord) {
  EXPECT_EQ(verifier_refusal(kRefused), "offwake_switch: combined stack size of 5 calls is 528. Too large");
}

TEST(VerifierRefusal, TheLastRefusalOfSeveral) {
  const std::string two = "libbpf: prog 'offwake_waking': -- BEGIN PROG LOAD LOG --\nR1 invalid mem access 'scalar'\n"
                          "processed 12 insns\n-- END PROG LOAD LOG --\n" +
                          kRefused;
  EXPECT_EQ(verifier_refusal(two), "offwake_switch: combined stack size of 5 calls is 528. Too large");
}

// A log longer than what the capture keeps: its tail, cut as LibbpfLogCapture::text() cuts.
TEST(VerifierRefusal, ALogWhoseBeginningWasCut) {
  const std::string tail = "[... 9000000 bytes cut ...]\n"
                           "1234: (79) r1 = *(u64 *)(r6 +0)\n"
                           "R6 invalid mem access 'scalar'\n"
                           "processed 190340 insns (limit 1000000) max_states_per_insn 55\n"
                           "-- END PROG LOAD LOG --\n"
                           "libbpf: prog 'offwake_waking': failed to load: -13\n"
                           "libbpf: failed to load object 'offwake'\n";
  EXPECT_EQ(verifier_refusal(tail), "offwake_waking: R6 invalid mem access 'scalar'");
}

TEST(VerifierRefusal, NoneWithoutALog) {
  EXPECT_EQ(verifier_refusal(""), "");
  EXPECT_EQ(verifier_refusal("libbpf: prog 'offwake_switch': BPF program load failed: Operation not permitted\n"
                             "libbpf: permission error while running as root; try raising 'ulimit -l'? current "
                             "value: 8.0 MiB\n"),
            "");
}

TEST(VerifierRefusal, AnEmptyLogNamesTheProgramOnly) {
  EXPECT_EQ(verifier_refusal("libbpf: prog 'offwake_exit': -- BEGIN PROG LOAD LOG --\n-- END PROG LOAD LOG --\n"),
            "offwake_exit");
}

}  // namespace
}  // namespace offwake::bpf
