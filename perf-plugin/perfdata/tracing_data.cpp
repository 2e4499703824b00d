#include "perfdata/tracing_data.h"

#include <bit>
#include <cstring>

#include "util/printable.h"

namespace offwake::perfdata {

namespace {

template <typename T>
T byte_swapped(T v) {
  if constexpr (sizeof(T) == 8) return __builtin_bswap64(v);
  else if constexpr (sizeof(T) == 4) return __builtin_bswap32(v);
  else if constexpr (sizeof(T) == 2) return __builtin_bswap16(v);
  else return v;
}

constexpr char kMagic[] = "\x17\x08\x44tracing";  // 10 bytes without the NUL
constexpr size_t kMagicSize = sizeof kMagic - 1;

// A bounds-checked cursor over the section, in the byte order the section declares.
class Cursor {
 public:
  explicit Cursor(std::span<const uint8_t> d) : d_(d) {}
  void set_swap(bool swap) { swap_ = swap; }
  size_t pos() const { return pos_; }
  size_t remaining() const { return d_.size() - pos_; }

  template <typename T>
  Result<T> get(const char* what) {
    if (remaining() < sizeof(T)) return truncated(what);
    T v;
    std::memcpy(&v, d_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return swap_ ? byte_swapped(v) : v;
  }
  // A NUL-terminated string.
  Result<std::string> cstring(const char* what) {
    const auto* start = d_.data() + pos_;
    const void* nul = remaining() ? std::memchr(start, 0, remaining()) : nullptr;
    if (!nul) return truncated(what);
    std::string s(reinterpret_cast<const char*>(start), static_cast<const uint8_t*>(nul) - start);
    pos_ += s.size() + 1;
    return s;
  }
  Result<std::string> text(uint64_t n, const char* what) {
    if (n > remaining()) return Error::bad_input(std::string(what) + " of " + std::to_string(n) + " bytes at offset " +
                                      std::to_string(pos_) + " overruns the tracing data (" +
                                      std::to_string(remaining()) + " bytes left)");
    std::string s(reinterpret_cast<const char*>(d_.data() + pos_), static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return s;
  }

 private:
  Error truncated(const char* what) const {
    return Error::bad_input(std::string("tracing data is truncated in ") + what + " at offset " + std::to_string(pos_));
  }
  std::span<const uint8_t> d_;
  size_t pos_ = 0;
  bool swap_ = false;
};

#define TD_GET(var, expr)                   \
  auto var##_r = (expr);                    \
  if (!var##_r) return var##_r.error();     \
  auto var = std::move(var##_r).value()

// "name: sched_switch\n" -> "sched_switch".
std::string format_name(const std::string& text) {
  static const std::string key = "name: ";
  if (text.compare(0, key.size(), key) != 0) return {};
  size_t end = text.find('\n');
  std::string n = text.substr(key.size(), end == std::string::npos ? std::string::npos : end - key.size());
  while (!n.empty() && (n.back() == ' ' || n.back() == '\r')) n.pop_back();
  return n;
}

Status header_file(Cursor& c, const char* name) {
  TD_GET(label, c.cstring(name));
  if (label != name) return Error::bad_input(std::string("tracing data: expected \"") + name + "\" at offset " +
                                  std::to_string(c.pos() - label.size() - 1) + ", found " + quote_text(label.substr(0, 32)));
  TD_GET(size, c.get<uint64_t>(name));
  TD_GET(body, c.text(size, name));
  (void)body;
  return ok_status();
}

Status event_formats(Cursor& c, const std::string& system, TracingData& td) {
  TD_GET(count, c.get<uint32_t>("an event count"));
  for (uint32_t i = 0; i < count; ++i) {
    TD_GET(size, c.get<uint64_t>("an event format's size"));
    TD_GET(text, c.text(size, "an event format"));
    EventFormat f;
    f.system = system;
    f.name = format_name(text);
    if (f.name.empty())
      return Error::bad_input("tracing data: format " + std::to_string(i) + " of system " + system +
                              " has no \"name:\" line");
    f.text = std::move(text);
    td.events.push_back(std::move(f));
  }
  return ok_status();
}

}  // namespace

const std::string* TracingData::format(const std::string& system, const std::string& name) const {
  for (const auto& e : events)
    if (e.system == system && e.name == name) return &e.text;
  return nullptr;
}

Result<TracingData> parse_tracing_data(std::span<const uint8_t> section) {
  TracingData td;
  if (section.size() < kMagicSize || std::memcmp(section.data(), kMagic, kMagicSize) != 0)
    return Error::bad_input("tracing data: bad magic (not a trace-cmd/perf tracing header)");
  Cursor c(section.subspan(kMagicSize));
  TD_GET(version, c.cstring("the version"));
  td.version = version;
  TD_GET(endian, c.get<uint8_t>("the byte order"));
  TD_GET(long_size, c.get<uint8_t>("the long size"));
  if (endian > 1) return Error::bad_input("tracing data: bad byte order flag " + std::to_string(endian));
  td.big_endian = endian == 1;
  c.set_swap(td.big_endian != (std::endian::native == std::endian::big));
  td.long_size = long_size;
  TD_GET(page_size, c.get<uint32_t>("the page size"));
  td.page_size = page_size;

  OFFWAKE_TRY(header_file(c, "header_page"));
  OFFWAKE_TRY(header_file(c, "header_event"));
  OFFWAKE_TRY(event_formats(c, "ftrace", td));
  TD_GET(systems, c.get<uint32_t>("the system count"));
  for (uint32_t i = 0; i < systems; ++i) {
    TD_GET(system, c.cstring("a system name"));
    OFFWAKE_TRY(event_formats(c, system, td));
  }
  // kallsyms, ftrace_printk and saved_cmdlines follow; nothing here needs them, but a section
  // that ends before them is cut short.
  TD_GET(kallsyms, c.get<uint32_t>("the kallsyms size"));
  OFFWAKE_TRY(c.text(kallsyms, "kallsyms"));
  TD_GET(printk, c.get<uint32_t>("the printk formats size"));
  OFFWAKE_TRY(c.text(printk, "the printk formats"));
  return td;
}

}  // namespace offwake::perfdata
