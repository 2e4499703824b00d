// perf offwake script: the embedded Python host against real recordings, compared with the
// real `perf script -s` on the same files. As root (it records).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "support/blocked_samples.h"
#include "support/paths.h"
#include "support/perf_script.h"
#include "support/run.h"
#include "support/tolerances.h"
#include "support/truth.h"

namespace offwake::test {
namespace {

// One recording of wl_pipe shared by the tests of this file.
class ScriptHost : public ::testing::Test {
 protected:
  // A failed assertion here would turn every test of the suite into "Skipped": the outcome
  // is kept, and each test fails on it in SetUp().
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    record_ = run(kOffwake + " record -o " + data() + " -- " + kWorkloads + "wl_pipe -n 10");
    truth_ = parse_truth(record_.out);
  }
  void SetUp() override { ASSERT_EQ(record_.status, 0) << "the suite's recording failed: " << record_.err; }
  static void TearDownTestSuite() { delete dir_; }
  static std::string data() { return dir_->file("perf.data"); }
  static std::string script(const std::string& name, const std::string& text) {
    std::string path = dir_->file(name);
    std::ofstream(path) << text;
    return path;
  }
  static inline TempDir* dir_ = nullptr;
  static inline RunResult record_;
  static inline std::vector<Truth> truth_;
};

// Uses only keys perf's own host provides.
const char* kPortable = R"(
import sys
def trace_begin():
    print("begin", sys.argv[1:])
def process_event(d):
    s = d["sample"]
    frames = ",".join("%x:%s:%s" % (f["ip"], f.get("sym", {}).get("name", "?"), f["dso"]) for f in d["callchain"])
    print(d["ev_name"], d["comm"], s["pid"], s["tid"], s["period"], s["time"], frames)
def trace_end():
    print("end")
)";

TEST_F(ScriptHost, SameOutputAsPerfScript) {
  std::string s = script("portable.py", kPortable);
  auto ours = run(kOffwake + " script -i " + data() + " -s " + s + " -- one two");
  auto perfs = run("perf script -i " + data() + " -s " + s + " -- one two");
  ASSERT_EQ(ours.status, 0) << ours.err;
  ASSERT_EQ(perfs.status, 0) << perfs.err;
  EXPECT_EQ(ours.out, perfs.out);
  EXPECT_NE(ours.out.find("begin ['one', 'two']"), std::string::npos) << ours.out;
  EXPECT_NE(ours.out.find("wl_wait_for_message"), std::string::npos);
  EXPECT_EQ(ours.out.substr(ours.out.size() - 4), "end\n");
}

// The keys perf fills for every sample, from fields these recordings have or never have,
// are there with perf's values: the sample's DSO's build id and mapping, empty branch stacks
// and registers, no weight, transaction or data source. On an --on-cpu recording, whose
// samples are in user space too. Two differences, kept out of the comparison: the kernel's
// mapping ends where the recording's MMAP2 record says (perf moves it to where its symbols
// end), and "values" is an empty list (perf gives a tuple with a NULL in it).
TEST_F(ScriptHost, PerfsKeysForFieldsNotRecordedAreThere) {
  TempDir dir;
  const std::string data = dir.file("oncpu.data");
  auto rec = run(kOffwake + " record -q --on-cpu -o " + data + " -- " + kWorkloads + "wl_spin_block -n 5 -m 20");
  ASSERT_EQ(rec.status, 0) << rec.err;
  const std::string s = script("perf_keys.py", R"(
def process_event(d):
    s = d["sample"]
    kernel = d.get("dso") == "[kernel.kallsyms]"
    print(d["ev_name"], s["ip"], d.get("dso"), d.get("dso_bid"), d.get("dso_map_start"),
          None if kernel else d.get("dso_map_end"), d["brstack"], d["brstacksym"], repr(d["iregs"]),
          repr(d["uregs"]), s["weight"], s["transaction"], s["datasrc"], s["datasrc_decode"])
)");
  auto ours = run(kOffwake + " script -i " + data + " -s " + s);
  auto perfs = run("perf script -i " + data + " -s " + s);
  ASSERT_EQ(ours.status, 0) << ours.err;
  ASSERT_EQ(perfs.status, 0) << perfs.err;
  EXPECT_EQ(ours.out, perfs.out);
  EXPECT_NE(ours.out.find("wl_spin_block "), std::string::npos)
      << "no sample in the workload's own code\n" << rec.err << ours.out.substr(0, 2000);
  EXPECT_NE(ours.out.find("[kernel.kallsyms]"), std::string::npos);
  auto values = run(kOffwake + " script -i " + data + " -s " +
                    script("values.py", "def process_event(d):\n    print(repr(d['sample']['values']))\n"));
  EXPECT_EQ(values.status, 0) << values.err;
  EXPECT_EQ(values.out.substr(0, 3), "[]\n");
}

TEST_F(ScriptHost, OffwakeKeysNameTheWaker) {
  ASSERT_EQ(truth_.size(), 1u);
  const Truth& t = truth_[0];
  std::string s = script("waker.py", R"(
def process_event(d):
    if d["ev_name"] != "offwake-time" or "waker" not in d:
        return
    w = d["waker"]
    names = [f.get("sym", {}).get("name", "?") for f in w["callchain"]]
    mine = [f.get("sym", {}).get("name", "?") for f in d["callchain"]]
    print(d["sample"]["tid"], d["state"], d["count"], d["sample"]["period"], w["tid"], w["comm"].replace(" ", "_"),
          w["context"],
          "wl_wait_for_message" in mine, "wl_send_message" in names)
)");
  auto r = run(kOffwake + " script -i " + data() + " -s " + s);
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream in(r.out);
  uint64_t count = 0, ns = 0, unseen = 0, unseen_ns = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    uint64_t tid, c, period, waker_tid;
    std::string state, comm, context, in_blocked, in_waker;
    f >> tid >> state >> c >> period >> waker_tid >> comm >> context >> in_blocked >> in_waker;
    if (tid != t.tid || in_blocked != "True") continue;
    count += c;
    ns += period;
    EXPECT_EQ(state, "S");
    if (comm == "[no_waker_seen]") {  // a wakeup the kernel did not trace: bounded, below
      unseen += c;
      unseen_ns += period;
      continue;
    }
    EXPECT_EQ(waker_tid, t.waker_tid);
    EXPECT_EQ(context, "thread");
    EXPECT_EQ(in_waker, "True") << line;
  }
  // The count exact (as the kernel counts them: wl_blocks_so_far, tests/workloads/wl_common.h),
  // the time within 5% (kBlockedTimeTolerance). Every waker is the parent, but for wakeups the
  // kernel did not trace (about one recording in twenty has one): as rarely as the truth allows
  // (expect_misses_within_truth), each counted by the summary.
  expect_misses_within_truth(unseen, unseen_ns, t, "without a waker");
  EXPECT_LE(unseen, blocks_without_waker(record_.err)) << record_.err;
  EXPECT_EQ(count, t.count) << r.out;
  EXPECT_LT(std::abs(static_cast<double>(ns) - t.blocked_ns) / t.blocked_ns, kBlockedTimeTolerance);
}

TEST_F(ScriptHost, HandlersAreOptional) {
  std::string s = script("top_level_only.py", "print('top level ran')\n");
  auto r = run(kOffwake + " script -i " + data() + " -s " + s);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "top level ran\n");
}

TEST_F(ScriptHost, ExceptionPrintsTracebackAndFails) {
  std::string s = script("raises.py", "def process_event(d):\n    raise ValueError('broken handler')\n");
  auto r = run(kOffwake + " script -i " + data() + " -s " + s);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("Traceback"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ValueError: broken handler"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Python error in process_event()"), std::string::npos) << r.err;
}

TEST_F(ScriptHost, SyntaxErrorAndSysExit) {
  auto bad = run(kOffwake + " script -i " + data() + " -s " + script("syntax.py", "def (:\n"));
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("SyntaxError"), std::string::npos) << bad.err;
  auto exits = run(kOffwake + " script -i " + data() + " -s " +
                   script("exits.py", "import sys\ndef trace_begin():\n    sys.exit(3)\n"));
  EXPECT_EQ(exits.status, 3) << exits.err;
  EXPECT_EQ(exits.err, "") << "perf and python3 say nothing of a sys.exit(N)";
  // At the top level, as python3 script.py: the script ends there with that status.
  for (int status : {0, 3}) {
    auto top = run(kOffwake + " script -i " + data() + " -s " +
                   script("top" + std::to_string(status) + ".py",
                          "import sys\nsys.exit(" + std::to_string(status) + ")\ndef trace_end():\n    print('ran')\n"));
    EXPECT_EQ(top.status, status) << top.err;
    EXPECT_EQ(top.err, "");
    EXPECT_EQ(top.out, "") << "nothing runs after the top level's sys.exit()";
  }
  // Beyond a byte, what python3 itself returns.
  auto wide = run(kOffwake + " script -i " + data() + " -s " +
                  script("exits300.py", "import sys\ndef trace_begin():\n    sys.exit(300)\n"));
  EXPECT_EQ(wide.status, 44) << wide.err;
  EXPECT_EQ(wide.err, "");
  // A string argument: Python prints it, status 1, and that is all, at the top level or in a handler.
  for (const char* where : {"sys.exit('bye, said the script')\n", "def process_event(d):\n    sys.exit('bye, said the script')\n"}) {
    auto says = run(kOffwake + " script -i " + data() + " -s " + script("says.py", std::string("import sys\n") + where));
    EXPECT_EQ(says.status, 1) << where;
    EXPECT_EQ(says.err, "bye, said the script\n") << where;
  }
  auto zero = run(kOffwake + " script -i " + data() + " -s " +
                  script("exit0.py", "import sys\ndef process_event(d):\n    sys.exit(0)\n"));
  EXPECT_EQ(zero.status, 0) << zero.err;
}

TEST_F(ScriptHost, BadInput) {
  auto no_script = run(kOffwake + " script -i " + data());
  EXPECT_EQ(no_script.status, 129);
  auto missing = run(kOffwake + " script -i " + dir_->file("nope.data") + " -s " + script("x.py", ""));
  EXPECT_EQ(missing.status, 1);
  EXPECT_EQ(missing.err, "perf offwake script: opening " + dir_->file("nope.data") + ": No such file or directory\n");
  auto not_perf = run(kOffwake + " script -i " + script("junk.data", "junk junk junk junk") + " -s " + script("y.py", ""));
  EXPECT_EQ(not_perf.status, 1);
  EXPECT_NE(not_perf.err.find("not a perf.data file"), std::string::npos) << not_perf.err;
  auto no_such_script = run(kOffwake + " script -i " + data() + " -s " + dir_->file("none.py"));
  EXPECT_EQ(no_such_script.status, 1);
  EXPECT_NE(no_such_script.err.find("opening script"), std::string::npos);
  // A directory opens, and would run as an empty script.
  auto directory = run(kOffwake + " script -i " + data() + " -s " + dir_->path());
  EXPECT_EQ(directory.status, 1);
  EXPECT_EQ(directory.err, "perf offwake script: opening script " + dir_->path() + ": Is a directory\n");
  // And as the input: the cause said once.
  auto input_directory = run(kOffwake + " script -i " + dir_->path() + " -s " + script("z.py", ""));
  EXPECT_EQ(input_directory.status, 1);
  EXPECT_EQ(input_directory.err, "perf offwake script: opening " + dir_->path() + ": Is a directory\n");
}

// A reader of standard output that goes away (script | head) ends the script quietly, status 0,
// through perf too (a death by SIGPIPE made perf say "FATAL: unable to run 'perf-offwake'").
TEST_F(ScriptHost, ClosedStandardOutputIsAQuietEnd) {
  const std::string many = script("many.py", "def trace_end():\n    for i in range(1000000):\n        print(i)\n");
  auto r = run(kOffwake + " script -i " + data() + " -s " + many + " | head -1; exit ${PIPESTATUS[0]}");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "0\n");
  EXPECT_EQ(r.err, "");
  auto report = run(kOffwake + " report --folded -i " + data() + " | head -c 1; exit ${PIPESTATUS[0]}");
  EXPECT_EQ(report.status, 0) << report.err;
  EXPECT_EQ(report.err, "");
}

// Any other BrokenPipeError is the script's own exception: its traceback, status 1, and what
// the script printed before it still printed (it was taken for a closed standard output: a
// quiet status 0).
TEST_F(ScriptHost, BrokenPipeOfTheScriptsOwnIsAnError) {
  const std::string own = script("own_pipe.py", R"(
import subprocess
def trace_begin():
    print("before")
def process_event(d):
    p = subprocess.Popen(["true"], stdin=subprocess.PIPE)
    p.wait()
    p.stdin.write(b"x" * 100000)  # true has exited: EPIPE
    p.stdin.flush()
def trace_end():
    print("never")
)");
  auto r = run(kOffwake + " script -i " + data() + " -s " + own + " | cat; exit ${PIPESTATUS[0]}");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.out, "before\n");
  EXPECT_NE(r.err.find("Traceback"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("BrokenPipeError"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Python error in process_event()"), std::string::npos) << r.err;
  // At the top level too; standard output a file here.
  auto top = run(kOffwake + " script -i " + data() + " -s " +
                 script("own_pipe_top.py", "import os\nprint('before')\nr, w = os.pipe()\nos.close(r)\nos.write(w, b'x')\n"));
  EXPECT_EQ(top.status, 1) << top.err;
  EXPECT_EQ(top.out, "before\n");
  EXPECT_NE(top.err.find("BrokenPipeError"), std::string::npos) << top.err;
}

// Paths are bytes: a script's name or folder that is not UTF-8 is decoded as python3 decodes
// argv (the filesystem encoding, surrogateescape) and runs, as under perf 6.1. Its name crashed
// the host (__file__ set from a null object); a working directory like it failed every
// script with a UnicodeDecodeError from setting sys.path.
TEST_F(ScriptHost, PathsThatAreNotUtf8) {
  const std::string odd = dir_->file("dir\xff");
  ASSERT_EQ(mkdir(odd.c_str(), 0755), 0);
  const std::string text =
      "import os, sys\n"
      "print('ran', os.path.exists(__file__), os.path.exists(sys.argv[0]),\n"
      "      sys.path[0] == os.path.dirname(os.path.abspath(__file__)))\n";
  const std::string name = odd + "/script\xfe.py";
  std::ofstream(name) << text;
  auto ours = run(kOffwake + " script -i " + data() + " -s '" + name + "'");
  EXPECT_EQ(ours.status, 0) << ours.err;
  EXPECT_EQ(ours.out, "ran True True True\n") << ours.err;
  auto perfs = run("perf script -i " + data() + " -s '" + name + "'");
  EXPECT_EQ(perfs.out, ours.out) << perfs.err;
  // In that folder, the script named relative to it.
  std::ofstream(odd + "/plain.py") << text;
  auto in_odd = run("cd '" + odd + "' && " + kOffwake + " script -i " + data() + " -s plain.py");
  EXPECT_EQ(in_odd.status, 0) << in_odd.err;
  EXPECT_EQ(in_odd.out, "ran True True True\n") << in_odd.err;
  EXPECT_EQ(in_odd.err, "");
  // A message to sys.exit() that holds such bytes is printed as python3 prints it.
  std::ofstream(odd + "/exits.py") << "import os, sys\nsys.exit('in ' + os.path.basename(os.getcwd()))\n";
  auto says = run("cd '" + odd + "' && " + kOffwake + " script -i " + data() + " -s exits.py");
  EXPECT_EQ(says.status, 1);
  EXPECT_EQ(says.err, run("cd '" + odd + "' && python3 exits.py").err);
  EXPECT_EQ(says.err, "in dir\\udcff\n");
}

// Ctrl-C stops the reading at the next event; trace_end() runs and the status is 0, as under
// perf script (it killed the host, and trace_end() never ran). timeout sends the SIGINT: its
// child has SIGINT's default disposition whatever the test's shell has.
TEST_F(ScriptHost, InterruptRunsTraceEnd) {
  const std::string counts = script("counts.py", R"(
import sys, time
n = 0
def process_event(d):
    global n
    n += 1
    time.sleep(float(sys.argv[1]))
def trace_end():
    print("end after", n)
)");
  auto all = run(kOffwake + " script -i " + data() + " -s " + counts + " -- 0");
  ASSERT_EQ(all.status, 0) << all.err;
  const int total = std::stoi(all.out.substr(all.out.rfind(' ')));
  ASSERT_GE(total, 4) << "the recording has too few samples to stop in the middle";
  // 0.5 s an event: the whole recording would take 2 s at least; interrupted after 1 s.
  auto r = run("timeout --preserve-status -s INT 1 " + kOffwake + " script -i " + data() + " -s " + counts + " -- 0.5");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  ASSERT_EQ(r.out.rfind("end after ", 0), 0u) << r.out;
  const int done = std::stoi(r.out.substr(r.out.rfind(' ')));
  EXPECT_GE(done, 1);
  EXPECT_LT(done, total) << "every event was read: the interrupt did not stop the reading";
}

// Scripts written for perf find its Python helpers through PERF_EXEC_PATH, which perf script
// sets: perf's own skeleton (perf script -g python) appends its Perf-Trace-Util folder to
// sys.path and imports Core from it. Unset, that was a KeyError.
TEST_F(ScriptHost, PerfsSkeletonRuns) {
  TempDir here;
  auto generated = run("cd " + here.path() + " && perf script -i " + data() + " -g python");
  ASSERT_EQ(generated.status, 0) << generated.err;
  const std::string skeleton = here.file("perf-script.py");
  ASSERT_NE(read_file(skeleton).find("os.environ['PERF_EXEC_PATH']"), std::string::npos) << read_file(skeleton);
  auto ours = run("env -u PERF_EXEC_PATH " + kOffwake + " script -i " + data() + " -s " + skeleton);
  EXPECT_EQ(ours.status, 0) << ours.err;
  EXPECT_EQ(ours.err, "");
  EXPECT_NE(ours.out.find("in trace_begin"), std::string::npos) << ours.out;
  EXPECT_NE(ours.out.find("in trace_end"), std::string::npos) << ours.out;
  auto perfs = run("perf script -i " + data() + " -s " + skeleton);
  EXPECT_EQ(ours.out, perfs.out);
}

// Where PERF_EXEC_PATH comes from when the environment does not set it: the folder of
// perf-offwake when it has perf's scripts (installed in perf's exec path), else the exec path
// of the perf on PATH; neither, it stays unset. A PERF_EXEC_PATH given is kept.
TEST_F(ScriptHost, PerfExecPathWhereItIs) {
  const std::string shows = script("exec_path.py", "import os\nprint(os.environ.get('PERF_EXEC_PATH'))\n");
  const std::string run_it = " script -i " + data() + " -s " + shows;
  auto kept = run("PERF_EXEC_PATH=/my/perf " + kOffwake + run_it);
  EXPECT_EQ(kept.out, "/my/perf\n") << kept.err;

  // The build tree's perf-offwake has no scripts beside it: perf's, if it has them.
  auto perfs = run("perf --exec-path");
  ASSERT_EQ(perfs.status, 0) << perfs.err;
  struct stat st {};
  const std::string perf_dir = perfs.out.substr(0, perfs.out.find('\n'));
  const bool perf_has_scripts = stat((perf_dir + "/scripts/python/Perf-Trace-Util").c_str(), &st) == 0;
  auto from_perf = run("env -u PERF_EXEC_PATH " + kOffwake + run_it);
  EXPECT_EQ(from_perf.out, (perf_has_scripts ? perf_dir : "None") + "\n") << from_perf.err;

  TempDir installed;
  const std::string copy = installed.file("perf-offwake");
  ASSERT_EQ(run("mkdir -p " + installed.file("scripts/python/Perf-Trace-Util") + " && (ln " + kOffwake + " " + copy +
                " 2>/dev/null || cp " + kOffwake + " " + copy + ")").status, 0);
  auto own = run("env -u PERF_EXEC_PATH " + copy + run_it);
  EXPECT_EQ(own.out, installed.path() + "\n") << own.err;
  // No perf on PATH: unset, and no word about it.
  auto none = run("env -u PERF_EXEC_PATH PATH=/nonexistent " + kOffwake + run_it);
  EXPECT_EQ(none.status, 0) << none.err;
  EXPECT_EQ(none.out, "None\n");
  EXPECT_EQ(none.err, "");
}

TEST_F(ScriptHost, ReadsAStream) {
  auto r = run(kOffwake + " record -q -o - -- " + kWorkloads + "wl_sleep -n 3 2>/dev/null | " + kOffwake +
               " script -i - -s " + script("count.py", "n = 0\ndef process_event(d):\n    global n\n    n += 1\ndef trace_end():\n    print('samples', n)\n"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("samples "), std::string::npos);
  EXPECT_EQ(r.out.find("samples 0"), std::string::npos) << r.out;
}

// Without -i, a pipe on standard input is the input, as perf script reads one; else perf.data
// (run() gives every command a file as standard input).
TEST_F(ScriptHost, APipeOnStandardInputIsTheDefaultInput) {
  const std::string count = script("count2.py", "n = 0\ndef process_event(d):\n    global n\n    n += 1\n"
                                                "def trace_end():\n    print('samples', n)\n");
  auto r = run(kOffwake + " record -q -o - -- " + kWorkloads + "wl_sleep -n 3 2>/dev/null | " + kOffwake +
               " script -s " + count);
  EXPECT_EQ(r.status, 0) << r.err;
  // The naps' stack: a blocked sample and its waker's (more if a wakeup went unseen).
  ASSERT_EQ(r.out.rfind("samples ", 0), 0u) << r.out;
  EXPECT_GE(std::stoi(r.out.substr(8)), 2) << r.out;
  TempDir empty;
  auto none = run("cd " + empty.path() + " && " + kOffwake + " script -s " + count);
  EXPECT_EQ(none.status, 1);
  EXPECT_EQ(none.err, "perf offwake script: opening perf.data: No such file or directory\n");
}

}  // namespace
}  // namespace offwake::test
