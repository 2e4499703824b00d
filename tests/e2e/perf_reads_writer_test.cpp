// End to end: a perf.data written by PerfDataWriter about a live process (symbols_target,
// built by this test suite) is read by the real perf (Debian's perf 6.1): perf report and
// perf script must name its functions, comm and periods, in file mode and in pipe mode,
// without a word on stderr.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "perfdata/writer.h"
#include "support/live_target.h"
#include "support/paths.h"
#include "support/run.h"
#include "support/test_events.h"
#include "synth/elf_file.h"
#include "synth/host_info.h"
#include "synth/kernel_maps.h"
#include "synth/proc_maps.h"

namespace offwake {
namespace {

using namespace perfdata;

const std::string& kTarget = test::kSymbolsTarget;

// The runtime address of `function`+4 in the live process, through its mapping of the ELF.
uint64_t runtime_address(pid_t pid, const ElfFile& elf, const std::string& function) {
  auto sym = elf.find_function(function);
  EXPECT_TRUE(sym.has_value()) << function;
  if (!sym) return 0;
  auto off = elf.file_offset_of(sym->value + 4);
  EXPECT_TRUE(off.has_value());
  auto maps = read_proc_maps(pid);
  EXPECT_TRUE(maps.ok());
  for (const auto& m : *maps) {
    if (m.path == elf.path() && m.perms[2] == 'x' && *off >= m.pgoff && *off < m.pgoff + (m.end - m.start))
      return m.start + (*off - m.pgoff);
  }
  ADD_FAILURE() << "no executable mapping of " << elf.path() << " holds " << function;
  return 0;
}

EventDesc offwake_like_event() { return test::callchain_event("offwake-time"); }

// Writes: synthesized records of the live target and the kernel, then three samples:
// one 3 ms sample in schedule <- st_leaf <- st_middle <- main, two 1 ms samples in st_middle.
void write_recording(PerfDataWriter& w, pid_t pid) {
  auto elf = ElfFile::open(kTarget);
  ASSERT_TRUE(elf.ok()) << elf.error().message();
  auto kallsyms = Kallsyms::load();
  ASSERT_TRUE(kallsyms.ok()) << kallsyms.error().message();
  auto kmap = kernel_mmap(*kallsyms);
  ASSERT_TRUE(kmap.ok()) << kmap.error().message();
  ASSERT_TRUE(w.write(*kmap).ok());
  w.add_build_id(kernel_build_id_entry());
  BuildIdCache cache;
  auto s = synthesize_process(pid, cache, [&](const Record& r) { return w.write(r); });
  ASSERT_TRUE(s.ok()) << s.error().message();
  ASSERT_TRUE(w.finished_init().ok());

  uint64_t leaf = runtime_address(pid, *elf, "st_leaf");
  uint64_t middle = runtime_address(pid, *elf, "st_middle");
  uint64_t main_fn = runtime_address(pid, *elf, "main");
  auto schedule = kallsyms->address_of("schedule");
  ASSERT_TRUE(schedule.has_value());

  SampleRecord a;
  a.id = 1;
  a.pid = a.tid = static_cast<uint32_t>(pid);
  a.time = 1'000'000'000;
  a.period = 3'000'000;
  a.callchain.push(*schedule + 4, FrameContext::kKernel);
  a.callchain.push(leaf, FrameContext::kUser);
  a.callchain.push(middle, FrameContext::kUser);
  a.callchain.push(main_fn, FrameContext::kUser);
  a.ip = a.callchain.frames().front().ip;
  ASSERT_TRUE(w.write(a).ok());

  SampleRecord b = a;
  b.callchain = Callchain();
  b.callchain.push(middle, FrameContext::kUser);
  b.callchain.push(main_fn, FrameContext::kUser);
  b.ip = middle;
  b.period = 1'000'000;
  for (int i = 0; i < 2; ++i) {
    b.time += 1000;
    ASSERT_TRUE(w.write(b).ok());
  }
  ASSERT_TRUE(w.finished_round().ok());
}

void expect_report(const std::string& report) {
  EXPECT_NE(report.find("of event 'offwake-time'"), std::string::npos) << report;
  EXPECT_NE(report.find("Event count (approx.): 5000000"), std::string::npos) << report;
  // The leaf of the 3 ms stack is the kernel's schedule, of the 2 ms stack st_middle.
  EXPECT_TRUE(std::regex_search(report, std::regex(R"(60\.00%\s+symbols_target\s+\[kernel\.kallsyms\]\s+\[k\] schedule)")))
      << report;
  EXPECT_TRUE(std::regex_search(report, std::regex(R"(40\.00%\s+symbols_target\s+symbols_target\s+\[\.\] st_middle)")))
      << report;
}

void expect_script(const std::string& script, pid_t pid) {
  const std::string p = std::to_string(pid);
  // Three samples with their periods; the callchains name every function.
  EXPECT_TRUE(std::regex_search(script, std::regex("symbols_target\\s+" + p + "\\s+3000000")))
      << script;
  const std::regex one_ms("symbols_target\\s+" + p + "\\s+1000000");
  EXPECT_EQ(std::distance(std::sregex_iterator(script.begin(), script.end(), one_ms), std::sregex_iterator()), 2)
      << script;
  for (const char* fn : {"schedule", "st_leaf", "st_middle", "main"})
    EXPECT_TRUE(std::regex_search(script, std::regex(std::string("\\s") + fn + "\\+0x"))) << fn << "\n" << script;
  EXPECT_EQ(script.find("[unknown]"), std::string::npos) << script;
}

const char* kReport = "perf report --stdio --no-children --sort comm,dso,sym -g none --percent-limit 0 -i ";
const char* kScript = "perf script -F comm,tid,period,ip,sym,symoff -i ";

TEST(PerfReadsWriter, FileMode) {
  test::TempDir dir;
  const std::string path = dir.file("perf.data");
  pid_t pid;
  {
    test::LiveTarget target;
    pid = target.pid();
    auto w = PerfDataWriter::create_file(path, {offwake_like_event()}, collect_host_info({"test"}));
    ASSERT_TRUE(w.ok()) << w.error().message();
    write_recording(*w, pid);
    ASSERT_TRUE(w->close().ok());
  }  // the target has exited: symbols must come from what the file says

  auto report = test::run(kReport + path);
  EXPECT_EQ(report.status, 0) << report.err;
  EXPECT_EQ(report.err, "");
  expect_report(report.out);

  auto script = test::run(kScript + path);
  EXPECT_EQ(script.status, 0) << script.err;
  EXPECT_EQ(script.err, "");
  expect_script(script.out, pid);

  auto header = test::run("perf report --header-only -i " + path);
  EXPECT_EQ(header.err, "");
  for (const char* line : {"# hostname : ", "# os release : ", "# arch : ", "# nrcpus online : ",
                           "# cpudesc : ", "# total memory : ", "# cmdline : test",
                           "# event : name = offwake-time"})
    EXPECT_NE(header.out.find(line), std::string::npos) << line << "\n" << header.out;
}

TEST(PerfReadsWriter, PipeMode) {
  pid_t pid;
  Bytes stream;
  {
    test::LiveTarget target;
    pid = target.pid();
    auto w = PerfDataWriter::create(std::make_unique<MemorySink>(false), Mode::kPipe,
                                    {offwake_like_event()}, collect_host_info({"test"}));
    ASSERT_TRUE(w.ok()) << w.error().message();
    write_recording(*w, pid);
    ASSERT_TRUE(w->close().ok());
    stream = static_cast<const MemorySink&>(w->sink()).data();
  }
  const std::string input(stream.begin(), stream.end());
  auto script = test::run(std::string(kScript) + "-", input);
  EXPECT_EQ(script.status, 0) << script.err;
  EXPECT_EQ(script.err, "");
  expect_script(script.out, pid);

  auto report = test::run(std::string(kReport) + "-", input);
  EXPECT_EQ(report.status, 0) << report.err;
  EXPECT_EQ(report.err, "");
  expect_report(report.out);
}

TEST(PerfReadsWriter, InterruptedWriterLeavesNoCompleteFile) {
  test::TempDir dir;
  const std::string path = dir.file("perf.data");
  {
    auto w = PerfDataWriter::create_file(path, {offwake_like_event()}, collect_host_info({}));
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->finished_round().ok());
    // destroyed without close(): as if the recorder died
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  auto report = test::run(kReport + path);
  EXPECT_NE(report.status, 0);
}

TEST(PerfReadsWriter, OutputIsPrivate) {
  test::TempDir dir;
  const std::string path = dir.file("perf.data");
  auto w = PerfDataWriter::create_file(path, {offwake_like_event()}, collect_host_info({}));
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->close().ok());
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

}  // namespace
}  // namespace offwake
