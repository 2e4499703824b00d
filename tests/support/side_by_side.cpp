#include "support/side_by_side.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "support/paths.h"
#include "support/perf_script.h"

namespace offwake::test {
namespace {

constexpr int kStartTimeoutMs = 60'000;  // loading BPF took over 2 s beside a compiler; a bound, not a pause
constexpr int kPollMs = 10;

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The tracepoints that process `pid` has BPF programs attached to (its bpf_link descriptors'
// tp_name in /proc/PID/fdinfo).
std::vector<std::string> attached_tracepoints(pid_t pid) {
  std::vector<std::string> out;
  std::error_code ec;
  const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
  for (const auto& e : std::filesystem::directory_iterator(fds, ec)) {
    std::error_code link_ec;
    if (std::filesystem::read_symlink(e.path(), link_ec).string() != "anon_inode:bpf_link") continue;
    std::istringstream info(read_file("/proc/" + std::to_string(pid) + "/fdinfo/" + e.path().filename().string()));
    for (std::string line; std::getline(info, line);)
      if (line.rfind("tp_name:", 0) == 0) out.push_back(words(line.substr(8)).empty() ? "" : words(line.substr(8))[0]);
  }
  return out;
}

}  // namespace

SideBySide::SideBySide(const TempDir& dir, const SideBySideOptions& o)
    : offwake_data_(dir.file("offwake.data")),
      perf_data_(dir.file("dwarf.data")),
      offwake_err_(dir.file("offwake.err")),
      perf_err_(dir.file("dwarf.err")),
      ctl_(dir.file("perf-ctl")),
      ack_(dir.file("perf-ack")) {
  // perf offwake record first: the kernel leaks the build-id bit of the MMAP2 records it asks
  // for onto those of the events it reports to after it, and Debian's perf then aborts reading
  // its own file (see stock_record in tests/e2e/convert_test.cpp). The newest side-band event
  // is reported to first, so perf record, started second, gets clean records.
  std::vector<std::string> off{kOffwake, "record", "-o", offwake_data_};
  std::string pids;
  for (pid_t p : o.pids) pids += (pids.empty() ? "" : ",") + std::to_string(p);
  off.insert(off.end(), {"-p", pids});
  for (const std::string& w : words(o.offwake_options)) off.push_back(w);
  offwake_ = std::make_unique<Spawned>(off, offwake_err_);
  if (!wait_attached()) return;

  // perf record answers "ping" on its control FIFO from its main loop, after it enabled its
  // events. -B -N: no build-id processing, which the leak above can make abort. Only the
  // switch-outs that block (S, D): each sample copies up to 64 KB of stack, and a waker of
  // ours that spins on sched_yield() would make thousands of R ones.
  if (mkfifo(ctl_.c_str(), 0600) != 0 || mkfifo(ack_.c_str(), 0600) != 0) {
    ADD_FAILURE() << "mkfifo in " << dir.path();
    return;
  }
  ack_fd_ = open(ack_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  perf_ = std::make_unique<Spawned>(
      std::vector<std::string>{kDebianPerf, "record", "-q", "-B", "-N", "-a", "-m", "4096", "--call-graph",
                               "dwarf," + std::to_string(o.dwarf_stack_bytes), "-e", "sched:sched_switch", "--filter",
                               "prev_comm == \"" + o.comm + "\" && prev_state & 3", "-e", "sched:sched_waking", "--filter",
                               "comm == \"" + o.comm + "\"", "--control", "fifo:" + ctl_ + "," + ack_, "-o",
                               perf_data_},
      perf_err_);
  ready_ = wait_perf_ack();
}

SideBySide::~SideBySide() {
  if (ctl_fd_ >= 0) close(ctl_fd_);
  if (ack_fd_ >= 0) close(ack_fd_);
}

// Our BPF programs are attached once sched_switch's is: it is attached last
// (OffwakeBpf::attach in perf-plugin/bpf/offwake_loader.cpp), after the targets are set.
bool wait_attached(Spawned& offwake, const std::string& err_file) {
  for (int waited = 0; waited < kStartTimeoutMs; waited += kPollMs) {
    if (!offwake.running()) {
      ADD_FAILURE() << "perf offwake record exited before it attached: " << read_file(err_file);
      return false;
    }
    // The tracepoint back end attaches no program: with -v it says when it records.
    if (read_file(err_file).find("[ perf offwake record: recording (tracepoint back end) ]") != std::string::npos)
      return true;
    bool sw = false, wk = false;
    for (const std::string& tp : attached_tracepoints(offwake.pid())) {
      sw |= tp == "sched_switch";
      wk |= tp == "sched_waking";
    }
    if (sw && wk) return true;
    usleep(kPollMs * 1000);
  }
  ADD_FAILURE() << "perf offwake record not attached after " << kStartTimeoutMs << " ms";
  return false;
}

bool SideBySide::wait_attached() { return offwake::test::wait_attached(*offwake_, offwake_err_); }

bool SideBySide::wait_perf_ack() {
  for (int waited = 0; waited < kStartTimeoutMs; waited += kPollMs) {
    if (!perf_->running()) {
      ADD_FAILURE() << "perf record exited before it recorded: " << read_file(perf_err_);
      return false;
    }
    if (ctl_fd_ < 0) {
      ctl_fd_ = open(ctl_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);  // ENXIO until perf opened it
      if (ctl_fd_ >= 0 && write(ctl_fd_, "ping\n", 5) != 5) {
        ADD_FAILURE() << "writing perf record's control FIFO";
        return false;
      }
    }
    pollfd p{ack_fd_, POLLIN, 0};
    char buf[16];
    if (ctl_fd_ >= 0 && poll(&p, 1, kPollMs) == 1 && (p.revents & POLLIN) && read(ack_fd_, buf, sizeof buf) > 0)
      return true;
    if (ctl_fd_ < 0) usleep(kPollMs * 1000);
  }
  ADD_FAILURE() << "perf record did not answer its ping after " << kStartTimeoutMs << " ms";
  return false;
}

SideBySideRecording SideBySide::stop() {
  SideBySideRecording r;
  r.offwake_data = offwake_data_;
  r.perf_data = perf_data_;
  // perf record ends on "stop" at its control FIFO with status 0 (on SIGINT it raises SIGINT
  // again once done); SIGINT if it was never told it.
  if (perf_ && !(ctl_fd_ >= 0 && write(ctl_fd_, "stop\n", 5) == 5)) perf_->signal(SIGINT);
  if (offwake_) offwake_->signal(SIGINT);
  if (perf_) r.perf_status = perf_->wait(kStartTimeoutMs);
  if (offwake_) r.offwake_status = offwake_->wait(kStartTimeoutMs);
  r.offwake_err = read_file(offwake_err_);
  r.perf_err = read_file(perf_err_);
  r.offwake_script = run(std::string(kDebianPerf) + " script " + kOffwakeStackFields + " -i " + offwake_data_);
  r.ours = parse_stack_samples(r.offwake_script.out);
  // stderr of perf's script: "'trace' not valid for software events. Ignoring." for its other events.
  r.perf_script = run(std::string(kDebianPerf) + " script " + kDwarfStackFields + " -i " + perf_data_);
  r.perfs = parse_stack_samples(r.perf_script.out);
  return r;
}

}  // namespace offwake::test
