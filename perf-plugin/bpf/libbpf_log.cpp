#include "bpf/libbpf_log.h"

#include <bpf/libbpf.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>

namespace offwake::bpf {
namespace {

std::mutex g_mutex;
int g_verbosity = 0;
std::string* g_capture = nullptr;

int print_fn(enum libbpf_print_level level, const char* fmt, va_list ap) {
  char buf[4096];
  va_list copy;
  va_copy(copy, ap);
  int n = std::vsnprintf(buf, sizeof(buf), fmt, copy);
  va_end(copy);
  std::string msg;
  if (n >= static_cast<int>(sizeof(buf))) {
    // Verifier logs come in long pieces; keep them whole.
    msg.resize(static_cast<size_t>(n) + 1);
    std::vsnprintf(msg.data(), msg.size(), fmt, ap);
    msg.resize(static_cast<size_t>(n));
  } else if (n > 0) {
    msg.assign(buf, static_cast<size_t>(n));
  }

  std::lock_guard lock(g_mutex);
  if (g_capture && level <= LIBBPF_INFO) g_capture->append(msg);
  int shown = g_verbosity <= 0 ? -1 : g_verbosity == 1 ? LIBBPF_INFO : LIBBPF_DEBUG;
  if (static_cast<int>(level) <= shown) std::fputs(msg.c_str(), stderr);
  return n;
}

void install_once() {
  static std::once_flag once;
  std::call_once(once, [] { libbpf_set_print(print_fn); });
}

}  // namespace

void set_libbpf_verbosity(int level) {
  install_once();
  std::lock_guard lock(g_mutex);
  g_verbosity = level;
}

int libbpf_verbosity() {
  std::lock_guard lock(g_mutex);
  return g_verbosity;
}

LibbpfLogCapture::LibbpfLogCapture() {
  install_once();
  std::lock_guard lock(g_mutex);
  g_capture = &log_;
}

LibbpfLogCapture::~LibbpfLogCapture() {
  std::lock_guard lock(g_mutex);
  if (g_capture == &log_) g_capture = nullptr;
}

std::string LibbpfLogCapture::text(size_t max_bytes) const {
  std::lock_guard lock(g_mutex);
  if (log_.size() <= max_bytes) return log_;
  return "[... " + std::to_string(log_.size() - max_bytes) + " bytes cut ...]\n" +
         log_.substr(log_.size() - max_bytes);
}

std::string verifier_refusal(const std::string& libbpf_log) {
  // libbpf: "libbpf: prog 'NAME': -- BEGIN PROG LOAD LOG --\n<log>-- END PROG LOAD LOG --\n"
  // "libbpf: prog 'NAME': failed to load: -13". A log of a million instructions is longer than
  // what is kept of it (LibbpfLogCapture::text()): its tail, where the reason is, may come
  // without its beginning, and the program is then named by the line after it.
  static const std::string prog = "prog '", begin = "': -- BEGIN PROG LOAD LOG --\n",
                           end = "-- END PROG LOAD LOG --";
  const size_t stop = libbpf_log.rfind(end);
  if (stop == std::string::npos) return {};
  const size_t at = libbpf_log.rfind(begin, stop);
  std::string name;
  size_t line = 0;
  if (at != std::string::npos) {
    const size_t name_at = libbpf_log.rfind(prog, at);
    if (name_at != std::string::npos) name = libbpf_log.substr(name_at + prog.size(), at - name_at - prog.size());
    line = at + begin.size();
  } else if (const size_t after = libbpf_log.find(prog, stop); after != std::string::npos) {
    const size_t quote = libbpf_log.find('\'', after + prog.size());
    if (quote != std::string::npos) name = libbpf_log.substr(after + prog.size(), quote - after - prog.size());
  }
  if (name.empty()) name = "a program";
  std::string reason;
  while (line < stop) {
    size_t eol = libbpf_log.find('\n', line);
    if (eol == std::string::npos || eol > stop) eol = stop;
    const std::string text = libbpf_log.substr(line, eol - line);
    // The statistics that end every log, and the verifier's own verdict on the whole
    // ("verification time", "stack depth") say nothing of why.
    if (!text.empty() && text.rfind("processed ", 0) != 0 && text.rfind("verification time", 0) != 0 &&
        text.rfind("stack depth", 0) != 0 && text.rfind("[... ", 0) != 0)
      reason = text;
    line = eol + 1;
  }
  return reason.empty() ? name : name + ": " + reason;
}

}  // namespace offwake::bpf
