// parse_tracing_data: the HEADER_TRACING_DATA layout perf record writes (trace-cmd 0.6), in
// both byte orders; every truncation and corruption is an Error, never a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "perfdata/bytes.h"
#include "perfdata/format.h"
#include "perfdata/reader.h"
#include "perfdata/tracing_data.h"

namespace offwake::perfdata {
namespace {

using perfdata::Bytes;

const std::string kSwitchFormat =
    "name: sched_switch\nID: 372\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n";
const std::string kWakingFormat =
    "name: sched_waking\nID: 375\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n";

// Writes integers in the chosen byte order.
struct Builder {
  bool big = false;
  Bytes b;
  void raw(const std::string& s) { b.insert(b.end(), s.begin(), s.end()); }
  void cstr(const std::string& s) {
    raw(s);
    b.push_back(0);
  }
  void u8(uint8_t v) { b.push_back(v); }
  void uint(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * (big ? n - 1 - i : i))));
  }
  void sized8(const std::string& s) {
    uint(s.size(), 8);
    raw(s);
  }
};

Bytes section(bool big = false) {
  Builder w;
  w.big = big;
  w.raw(std::string("\x17\x08\x44tracing", 10));
  w.cstr("0.6");
  w.u8(big ? 1 : 0);
  w.u8(8);
  w.uint(4096, 4);
  w.cstr("header_page");
  w.sized8("field: u64 timestamp;\n");
  w.cstr("header_event");
  w.sized8("# compressed entry header\n");
  w.uint(1, 4);  // one ftrace event
  w.sized8("name: function\nID: 1\nformat:\n");
  w.uint(1, 4);  // one system
  w.cstr("sched");
  w.uint(2, 4);
  w.sized8(kSwitchFormat);
  w.sized8(kWakingFormat);
  w.uint(0, 4);  // kallsyms
  w.uint(3, 4);  // printk
  w.raw("a\nb");
  w.uint(5, 8);  // saved_cmdlines
  w.raw("1 sh\n");
  return w.b;
}

TEST(TracingData, FindsTheSchedFormats) {
  auto td = parse_tracing_data(section());
  ASSERT_TRUE(td) << td.error().message();
  EXPECT_EQ(td->version, "0.6");
  EXPECT_FALSE(td->big_endian);
  EXPECT_EQ(td->long_size, 8);
  EXPECT_EQ(td->page_size, 4096u);
  ASSERT_EQ(td->events.size(), 3u);
  ASSERT_NE(td->format("sched", "sched_switch"), nullptr);
  EXPECT_EQ(*td->format("sched", "sched_switch"), kSwitchFormat);
  EXPECT_EQ(*td->format("sched", "sched_waking"), kWakingFormat);
  EXPECT_NE(td->format("ftrace", "function"), nullptr);
  EXPECT_EQ(td->format("sched", "sched_wakeup"), nullptr);
  EXPECT_EQ(td->format("irq", "sched_switch"), nullptr);
}

TEST(TracingData, ReadsTheOtherByteOrder) {
  auto td = parse_tracing_data(section(true));
  ASSERT_TRUE(td) << td.error().message();
  EXPECT_TRUE(td->big_endian);
  EXPECT_EQ(td->page_size, 4096u);
  EXPECT_NE(td->format("sched", "sched_waking"), nullptr);
}

// Cut anywhere before the printk formats end: an error that says it is truncated or overrun.
TEST(TracingData, EveryTruncationIsAnError) {
  const Bytes full = section();
  const size_t needed = full.size() - 8 - 5;  // saved_cmdlines are not needed
  for (size_t n = 0; n < needed; ++n) {
    Bytes cut(full.begin(), full.begin() + static_cast<ptrdiff_t>(n));
    auto td = parse_tracing_data(cut);
    ASSERT_FALSE(td) << "length " << n;
    const std::string m = td.error().message();
    EXPECT_TRUE(m.find("truncated") != std::string::npos || m.find("overruns") != std::string::npos ||
                m.find("magic") != std::string::npos)
        << "length " << n << ": " << m;
  }
}

TEST(TracingData, CorruptionsAreErrors) {
  {
    Bytes b = section();
    b[0] = 'X';
    auto td = parse_tracing_data(b);
    ASSERT_FALSE(td);
    EXPECT_NE(td.error().message().find("bad magic"), std::string::npos);
  }
  {
    Bytes b = section();
    b[14] = 7;  // the byte order flag, after "\x17\x08\x44tracing" "0.6\0"
    auto td = parse_tracing_data(b);
    ASSERT_FALSE(td);
    EXPECT_NE(td.error().message().find("byte order"), std::string::npos);
  }
  {
    Bytes b = section();
    b[20] = 'X';  // "header_page" misspelt
    auto td = parse_tracing_data(b);
    ASSERT_FALSE(td);
    EXPECT_NE(td.error().message().find("header_page"), std::string::npos) << td.error().message();
  }
  {
    // A format size far beyond the section.
    Bytes b = section();
    const std::string name = "name: sched_switch";
    auto it = std::search(b.begin(), b.end(), name.begin(), name.end());
    ASSERT_NE(it, b.end());
    for (int i = 1; i <= 8; ++i) *(it - i) = 0x7f;
    auto td = parse_tracing_data(b);
    ASSERT_FALSE(td);
    EXPECT_NE(td.error().message().find("overruns"), std::string::npos) << td.error().message();
  }
  {
    // A format without its name line.
    Bytes b = section();
    const std::string name = "name: sched_waking";
    auto it = std::search(b.begin(), b.end(), name.begin(), name.end());
    ASSERT_NE(it, b.end());
    *it = 'N';
    auto td = parse_tracing_data(b);
    ASSERT_FALSE(td);
    EXPECT_NE(td.error().message().find("no \"name:\" line"), std::string::npos) << td.error().message();
  }
}

// Debian perf 6.1's own recordings of the tracepoints (the fuzz seeds, see their README): a
// file without PERF_SAMPLE_IDENTIFIER (ids found by position) and a stream whose tracing data
// follows its record. Both read to the end, and their tracing data has the sched formats.
TEST(TracingData, StockPerfRecordingsReadToTheEnd) {
  for (const char* name : {"stock_perf61_task_sched.data", "stock_perf61_pipe_sched.data"}) {
    SCOPED_TRACE(name);
    auto r = perfdata::PerfDataReader::open(std::string(OFFWAKE_SOURCE_DIR) + "/tests/perfdata/fuzz-corpus/" + name);
    ASSERT_TRUE(r) << r.error().message();
    size_t samples = 0;
    for (;;) {
      auto rec = r->next();
      ASSERT_TRUE(rec) << rec.error().message();
      if (!*rec) break;
      if (const auto* s = std::get_if<perfdata::SampleRecord>(&**rec)) {
        ++samples;
        const perfdata::EventDesc* e = r->event_for(*s);
        ASSERT_NE(e, nullptr);
        EXPECT_EQ(e->attr.type, PERF_TYPE_TRACEPOINT);
        EXPECT_FALSE(s->raw.empty());
      }
    }
    EXPECT_GT(samples, 0u);
    const auto& sections = r->info().other_sections;
    auto it = sections.find(perfdata::kFeatTracingData);
    ASSERT_NE(it, sections.end());
    auto td = parse_tracing_data(it->second);
    ASSERT_TRUE(td) << td.error().message();
    EXPECT_NE(td->format("sched", "sched_switch"), nullptr);
    EXPECT_NE(td->format("sched", "sched_waking"), nullptr);
  }
}

}  // namespace
}  // namespace offwake::perfdata
