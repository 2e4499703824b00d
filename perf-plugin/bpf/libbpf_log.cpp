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

}  // namespace offwake::bpf
