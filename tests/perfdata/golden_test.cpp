// Golden files: the writer's output for fixed inputs, byte for byte. A change in the format
// shows up here as a diff to review; regenerate with OFFWAKE_REGENERATE_GOLDEN=1 (never by hand).
// The same switch writes the seed inputs of the reader's fuzz corpus.
#include <linux/perf_event.h>
#include <sys/mman.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <variant>

#include "fixtures.h"
#include "perfdata/reader.h"
#include "support/golden_file.h"
#include "support/perf_decoded.h"
#include "support/perf_script.h"
#include "support/run.h"

namespace offwake::perfdata {
namespace {

const std::string kPerfdataDir = OFFWAKE_SOURCE_DIR "/tests/perfdata";

using offwake::test::check_golden;

TEST(Golden, PipeModeStream) {
  Bytes produced = test::write_to_memory(Mode::kPipe, test::two_events(), test::every_record());
  check_golden(kPerfdataDir + "/golden/pipe_two_events.data", produced);

  // The golden itself reads back as its inputs.
  auto back = test::read_all(produced);
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->records, test::every_record());
  EXPECT_EQ(back->info.host, test::fixed_host());
}

// perf reads the golden: Debian's perf script shows each of its samples (the LOST records in
// it make perf warn, as they should).
TEST(Golden, PerfReadsTheGolden) {
  auto r = offwake::test::run("perf script -F comm,tid,period,event -i " + kPerfdataDir + "/golden/pipe_two_events.data");
  ASSERT_EQ(r.status, 0) << r.err;
  size_t samples = 0;
  for (const Record& rec : test::every_record()) samples += std::holds_alternative<SampleRecord>(rec);
  ASSERT_GT(samples, 0u);
  size_t shown = 0;
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) shown += line.find(" offwake:") != std::string::npos;
  EXPECT_EQ(shown, samples) << r.out;
}

// The callchain as the perf.data format lays it out: a PERF_CONTEXT_* marker wherever the
// context changes, then that context's ips, leaf first.
std::vector<uint64_t> with_context_markers(const Callchain& chain) {
  std::vector<uint64_t> out;
  bool first = true;
  FrameContext last = FrameContext::kKernel;
  for (const Frame& f : chain.frames()) {
    if (first || f.context != last) out.push_back(f.context == FrameContext::kKernel ? PERF_CONTEXT_KERNEL : PERF_CONTEXT_USER);
    first = false;
    last = f.context;
    out.push_back(f.ip);
  }
  return out;
}

// The name of the event whose ids include `id`.
std::string event_of(const std::vector<EventDesc>& events, uint64_t id) {
  for (const EventDesc& e : events)
    for (uint64_t i : e.ids)
      if (i == id) return e.name;
  return "?";
}

// An independent reading of the golden, field by field: Debian's perf decodes each sample to
// the values of the record it was written from (its event, pid, tid, cpu, time, period, ip,
// cpumode, callchain with its context markers, raw payload padded to a u64 boundary), and
// prints the other records with theirs. Our own reader is not the judge here.
TEST(Golden, PerfDecodesEveryFieldOfTheGolden) {
  const std::string golden = kPerfdataDir + "/golden/pipe_two_events.data";
  std::string error;
  const auto got = offwake::test::perf_decoded_samples(offwake::test::kDebianPerf, golden, &error);
  ASSERT_TRUE(error.empty()) << error;
  std::vector<SampleRecord> want;
  for (const Record& rec : test::every_record())
    if (const auto* s = std::get_if<SampleRecord>(&rec)) want.push_back(*s);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("sample " + std::to_string(i));
    const SampleRecord& w = want[i];
    const auto& g = got[i];
    EXPECT_EQ(g.event, event_of(test::two_events(), w.id));
    EXPECT_EQ(g.pid, w.pid);
    EXPECT_EQ(g.tid, w.tid);
    EXPECT_EQ(g.cpu, w.cpu);
    EXPECT_EQ(g.time, w.time);
    EXPECT_EQ(g.period, w.period);
    EXPECT_EQ(g.ip, w.ip);
    EXPECT_EQ(g.cpumode, w.misc & PERF_RECORD_MISC_CPUMODE_MASK);
    EXPECT_EQ(g.chain, with_context_markers(w.callchain));
    std::vector<uint64_t> ips;
    for (const Frame& f : w.callchain.frames()) ips.push_back(f.ip);
    EXPECT_EQ(g.frames, ips);
    std::vector<uint8_t> raw = w.raw;
    if (!raw.empty())
      while ((sizeof(uint32_t) + raw.size()) % sizeof(uint64_t)) raw.push_back(0);
    EXPECT_EQ(g.raw, raw);
  }

  // The other records, as perf script prints them (its own formats: FORK/EXIT are
  // (pid:tid):(ppid:ptid), MMAP2 [start(len) @ pgoff <build id> or maj:min ino generation]).
  auto r = offwake::test::run(std::string(offwake::test::kDebianPerf) +
                              " script --show-task-events --show-mmap-events --show-lost-events -F tid -i " + golden);
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<std::string> shown;
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line))
    if (size_t at = line.find("PERF_RECORD_"); at != std::string::npos) shown.push_back(line.substr(at));
  std::vector<std::string> expected;
  char buf[512];
  for (const Record& rec : test::every_record()) {
    if (const auto* c = std::get_if<CommRecord>(&rec)) {
      snprintf(buf, sizeof buf, "PERF_RECORD_COMM%s: %s:%u/%u", c->exec ? " exec" : "", c->comm.c_str(), c->pid, c->tid);
    } else if (const auto* m = std::get_if<Mmap2Record>(&rec)) {
      std::string file_id;  // the build id if the record has one, else the device and inode
      if (!m->build_id.empty()) {
        file_id = " <";
        for (uint8_t i = 0; i < m->build_id.size; ++i) {
          snprintf(buf, sizeof buf, "%02x", m->build_id.bytes[i]);
          file_id += buf;
        }
        file_id += ">";
      } else {
        snprintf(buf, sizeof buf, " %02x:%02x %lu %lu", m->maj, m->min, static_cast<unsigned long>(m->ino),
                 static_cast<unsigned long>(m->ino_generation));
        file_id = buf;
      }
      const std::string prot = std::string(m->prot & PROT_READ ? "r" : "-") + (m->prot & PROT_WRITE ? "w" : "-") +
                               (m->prot & PROT_EXEC ? "x" : "-") + (m->flags & MAP_PRIVATE ? "p" : "s");
      snprintf(buf, sizeof buf, "PERF_RECORD_MMAP2 %u/%u: [%#lx(%#lx) @ %#lx%s]: %s %s", m->pid, m->tid,
               static_cast<unsigned long>(m->start), static_cast<unsigned long>(m->len),
               static_cast<unsigned long>(m->pgoff), file_id.c_str(), prot.c_str(), m->filename.c_str());
    } else if (const auto* t = std::get_if<TaskRecord>(&rec)) {
      snprintf(buf, sizeof buf, "PERF_RECORD_%s(%u:%u):(%u:%u)", t->exit ? "EXIT" : "FORK", t->pid, t->tid, t->ppid, t->ptid);
    } else if (const auto* l = std::get_if<LostRecord>(&rec)) {
      snprintf(buf, sizeof buf, "PERF_RECORD_LOST lost %lu", static_cast<unsigned long>(l->lost));
    } else {
      continue;  // samples (above), and records perf script does not print
    }
    expected.push_back(buf);
  }
  EXPECT_EQ(shown, expected) << r.out;
}

TEST(Golden, WriterOutputIsDeterministic) {
  // Nothing from the clock, the pid or uninitialised memory may leak into the output.
  for (Mode mode : {Mode::kFile, Mode::kPipe}) {
    EXPECT_EQ(test::write_to_memory(mode, test::two_events(), test::every_record()),
              test::write_to_memory(mode, test::two_events(), test::every_record()));
  }
}

TEST(FuzzSeeds, AreTheWritersOutput) {
  const std::string dir = kPerfdataDir + "/fuzz-corpus/";
  check_golden(dir + "file_two_events.data",
               test::write_to_memory(Mode::kFile, test::two_events(), test::every_record()));
  check_golden(dir + "file_one_event.data",
               test::write_to_memory(Mode::kFile, test::one_event(), test::few_records()));
  check_golden(dir + "pipe_one_event.data",
               test::write_to_memory(Mode::kPipe, test::one_event(), test::few_records()));
}

}  // namespace
}  // namespace offwake::perfdata
