#include "support/go_pprof.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <regex>
#include <sstream>

namespace offwake::test {

namespace {

// The command line of `go tool pprof ARGS` with everything go writes kept under `home`.
std::string go_pprof_command(const TempDir& home, const std::string& args) {
  return "env HOME=" + home.path() + " GOPATH=" + home.file("go") + " GOCACHE=" + home.file("cache") +
         " GOMODCACHE=" + home.file("mod") + " PPROF_TMPDIR=" + home.file("pprof") +
         " GOENV=off GOFLAGS= GOTOOLCHAIN=local GOPROXY=off GOTELEMETRY=off" +
         " PATH=/usr/lib/go/bin:$PATH go tool pprof " + args;
}

// A port of 127.0.0.1 that nothing listens on now (the kernel's choice for a bind to port 0).
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

bool accepts(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  close(fd);
  return ok;
}

}  // namespace

RunResult go_pprof(const std::string& args) {
  TempDir home;  // outlives the run: go and pprof write nothing anywhere else
  return run(go_pprof_command(home, args));
}

PprofWebUi::PprofWebUi(const std::string& profile) {
  port_ = free_port();
  if (port_ == 0) {
    error_ = "no free port on 127.0.0.1";
    return;
  }
  const std::string command = "exec " + go_pprof_command(home_, "-no_browser -http=127.0.0.1:" +
                                                                    std::to_string(port_) + " '" + profile + "'") +
                              " >" + home_.file("pprof.log") + " 2>&1";
  pid_ = fork();
  if (pid_ == 0) {
    setpgid(0, 0);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  if (pid_ < 0) {
    error_ = std::string("fork: ") + strerror(errno);
    return;
  }
  setpgid(pid_, pid_);
  // A guard against a server that never comes up, not a timing: it listens within a second.
  for (int i = 0; i < 600; ++i) {
    if (accepts(port_)) return;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      error_ = "go tool pprof -http exited: " + read_file(home_.file("pprof.log"));
      return;
    }
    usleep(100'000);
  }
  error_ = "go tool pprof -http did not listen within 60 s: " + read_file(home_.file("pprof.log"));
}

PprofWebUi::~PprofWebUi() {
  if (pid_ <= 0) return;
  kill(-pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

std::string PprofWebUi::url(const std::string& page) const {
  return "http://127.0.0.1:" + std::to_string(port_) + "/ui/" + page;
}

bool PprofRawSample::has_function(const std::string& name) const {
  for (const auto& f : functions)
    if (f == name) return true;
  return false;
}

std::string PprofRawSample::label(const std::string& key) const {
  auto it = labels.find(key);
  return it == labels.end() ? "" : it->second;
}

int64_t PprofRaw::total(size_t value_index) const {
  int64_t sum = 0;
  for (const auto& s : samples)
    if (value_index < s.values.size()) sum += s.values[value_index];
  return sum;
}

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

PprofRaw parse_pprof_raw(const std::string& text, std::string* error) {
  // " 201481763         10: 1 2 3 " (values, then location ids)
  static const std::regex sample_re(R"(^((?:\s+-?\d+)+):((?:\s+\d+)*)\s*$)");
  // "                comm:[wl_pipe] state:[S]" (labels, sorted by key)
  static const std::regex labels_re(R"(^ {16}\S)");
  static const std::regex label_re(R"(([^\s:]+):\[(.*?)\](?=\s|$))");
  // "     3: 0x55555555522e M=2 wl_wait_for_message /usr/bin/wl_pipe:0 s=0"
  // "    12: 0x0 [unknown waker] :0 s=0" (a name with a space, no mapping nor file)
  static const std::regex location_re(R"(^\s*(\d+): 0x[0-9a-f]+ (?:M=\d+ )?(?:\[F\] )?(.+) \S*:-?\d+ s=-?\d+)");
  PprofRaw p;
  enum { kHeader, kSampleTypes, kSamples, kLocations, kMappings } section = kHeader;
  std::istringstream in(text);
  std::smatch m;
  auto fail = [&](const std::string& line) {
    if (error && error->empty()) *error = "unexpected line: '" + line + "'";
  };
  for (std::string line; std::getline(in, line);) {
    if (line == "Samples:") section = kSampleTypes;
    else if (line == "Locations") section = kLocations;
    else if (line == "Mappings") section = kMappings;
    else if (section == kHeader) {
      if (starts_with(line, "Comment: ")) p.comments.push_back(line.substr(9));
      else if (starts_with(line, "PeriodType: ")) p.period_type = line.substr(12);
      else if (starts_with(line, "Period: ")) p.period = std::stoll(line.substr(8));
    } else if (section == kSampleTypes) {
      p.sample_types = words(line);
      section = kSamples;
    } else if (section == kSamples) {
      if (std::regex_match(line, m, sample_re)) {
        PprofRawSample s;
        for (const auto& v : words(m[1].str())) s.values.push_back(std::stoll(v));
        for (const auto& id : words(m[2].str())) s.location_ids.push_back(std::stoull(id));
        p.samples.push_back(std::move(s));
      } else if (std::regex_search(line, labels_re) && !p.samples.empty()) {
        for (auto it = std::sregex_iterator(line.begin(), line.end(), label_re); it != std::sregex_iterator(); ++it)
          p.samples.back().labels[(*it)[1].str()] = (*it)[2].str();
      } else {
        fail(line);
      }
    } else if (section == kLocations) {
      if (std::regex_search(line, m, location_re)) p.location_functions[std::stoull(m[1].str())] = m[2].str();
      else fail(line);
    } else if (!line.empty()) {
      p.mappings.push_back(line);
    }
  }
  for (auto& s : p.samples)
    for (uint64_t id : s.location_ids) {
      auto it = p.location_functions.find(id);
      if (it == p.location_functions.end()) fail("no location " + std::to_string(id));
      else s.functions.push_back(it->second);
    }
  return p;
}

PprofTop parse_pprof_top(const std::string& text) {
  // "202259595ns 49.53% 49.53% 202259595ns 49.53%  wl_wait_for_message"
  static const std::regex row_re(R"(^\s*(\S+)\s+\S+%\s+\S+%\s+(\S+)\s+\S+%\s+(.+)$)");
  static const std::regex total_re(R"(^Showing nodes accounting for .*% of (\S+) total)");
  PprofTop top;
  std::istringstream in(text);
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (starts_with(line, "File: ")) top.file = line.substr(6);
    else if (starts_with(line, "Type: ")) top.type = line.substr(6);
    else if (std::regex_search(line, m, total_re)) top.total = m[1].str();
    else if (std::regex_match(line, m, row_re) && m[1].str() != "flat") top.rows[m[3].str()] = {m[1].str(), m[2].str()};
  }
  return top;
}

std::string PprofTrace::label(const std::string& key) const {
  auto it = labels.find(key);
  return it == labels.end() ? "" : it->second;
}

size_t PprofTrace::position(const std::string& name, size_t from) const {
  for (size_t i = from; i < functions.size(); ++i)
    if (functions[i] == name) return i;
  return functions.size();
}

PprofTraces parse_pprof_traces(const std::string& text, std::string* error) {
  // printTraces: labels as "%10s:  %s", stack lines as "%10s   %s", the value on the first.
  static const std::regex label_re(R"(^ *(\S+):  (.*)$)");
  static const std::regex frame_re(R"(^ *(\S*)   (\S.*)$)");
  PprofTraces out;
  std::istringstream in(text);
  std::smatch m;
  bool in_trace = false;
  for (std::string line; std::getline(in, line);) {
    if (starts_with(line, "-----------+")) {
      out.traces.emplace_back();
      in_trace = true;
    } else if (!in_trace) {
      if (starts_with(line, "File: ")) out.file = line.substr(6);
      else if (starts_with(line, "Type: ")) out.type = line.substr(6);
    } else {
      PprofTrace& t = out.traces.back();
      if (t.functions.empty() && std::regex_match(line, m, label_re)) {
        t.labels[m[1].str()] = m[2].str();
      } else if (std::regex_match(line, m, frame_re) && (m[1].length() > 0) == t.functions.empty()) {
        if (t.functions.empty()) t.value = m[1].str();  // on the first stack line only
        t.functions.push_back(m[2].str());
      } else if (error && error->empty()) {
        *error = "unexpected line: '" + line + "'";
      }
    }
  }
  // The last separator closes the last trace: it opens none.
  if (!out.traces.empty() && out.traces.back().functions.empty() && out.traces.back().labels.empty())
    out.traces.pop_back();
  return out;
}

}  // namespace offwake::test
