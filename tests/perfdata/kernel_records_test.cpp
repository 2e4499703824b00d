// The records the reader leaves as OtherRecord and perf offwake convert decodes: MMAP (as the
// MMAP2 it stands for), SWITCH (in or out, with its sample_id) and perf's THREAD_MAP (whom
// perf record followed), laid out as the kernel and perf write them.
#include "perfdata/kernel_records.h"

#include <gtest/gtest.h>

#include "perfdata/bytes.h"
#include "perfdata/format.h"
#include "perfdata/sample_encoder.h"

namespace offwake::perfdata {
namespace {

perf_event_attr id_attr() {
  perf_event_attr a{};
  a.size = sizeof a;
  a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
  a.sample_id_all = 1;
  return a;
}

const SampleId kTrailer{100, 101, 0x1234567, 42, 0, 3};

TEST(KernelRecords, MmapBecomesMmap2OfAnExecutableMapping) {
  ByteWriter w;
  w.put(uint32_t{0xffffffff});  // pid -1: the kernel's
  w.put(uint32_t{0});
  w.put(uint64_t{0xffffffff81000000});
  w.put(uint64_t{0x2000000});
  w.put(uint64_t{0xffffffff81000000});
  w.put_padded_string("[kernel.kallsyms]_text", 8);
  put_sample_id(w, id_attr(), kTrailer);
  const OtherRecord o{PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL, w.take()};
  ASSERT_TRUE(is_mmap(o));
  auto m = decode_mmap(o, id_attr());
  ASSERT_TRUE(m) << m.error().message();
  EXPECT_EQ(m->cpumode, PERF_RECORD_MISC_KERNEL);
  EXPECT_EQ(m->pid, 0xffffffffu);
  EXPECT_EQ(m->start, 0xffffffff81000000u);
  EXPECT_EQ(m->len, 0x2000000u);
  EXPECT_EQ(m->pgoff, 0xffffffff81000000u);
  EXPECT_EQ(m->filename, "[kernel.kallsyms]_text");
  EXPECT_EQ(m->prot, 5u);  // PROT_READ | PROT_EXEC
  EXPECT_TRUE(m->build_id.empty());
  EXPECT_EQ(m->sample_id, kTrailer);
}

TEST(KernelRecords, ShortMmapIsAnError) {
  ByteWriter w;
  w.put(uint32_t{1});
  const OtherRecord o{PERF_RECORD_MMAP, 0, w.take()};
  EXPECT_FALSE(decode_mmap(o, id_attr()));
}

TEST(KernelRecords, SwitchInAndOut) {
  ByteWriter w;
  put_sample_id(w, id_attr(), kTrailer);
  const OtherRecord in{PERF_RECORD_SWITCH, 0, w.bytes()};
  const OtherRecord out{PERF_RECORD_SWITCH, PERF_RECORD_MISC_SWITCH_OUT, w.bytes()};
  ASSERT_TRUE(is_switch(in) && is_switch(out));
  EXPECT_FALSE(is_switch_out(in));
  EXPECT_TRUE(is_switch_out(out));
  auto s = decode_switch(in, id_attr());
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_FALSE(s->out);
  EXPECT_EQ(s->sample_id, kTrailer);
  EXPECT_FALSE(decode_switch(OtherRecord{PERF_RECORD_SWITCH, 0, {1, 2}}, id_attr()));
  EXPECT_FALSE(is_switch(OtherRecord{PERF_RECORD_MMAP, 0, {}}));
}

Bytes thread_map(std::initializer_list<int64_t> pids, uint64_t nr) {
  ByteWriter w;
  w.put(nr);
  for (int64_t pid : pids) {
    w.put(static_cast<uint64_t>(pid));
    w.put_zeros(16);  // comm
  }
  return w.take();
}

TEST(KernelRecords, ThreadMapSaysWhetherPerTask) {
  const auto decode = [](Bytes b) { return decode_thread_map(OtherRecord{kRecordThreadMap, 0, std::move(b)}); };
  auto system_wide = decode(thread_map({-1}, 1));
  ASSERT_TRUE(system_wide);
  EXPECT_FALSE(system_wide->per_task());
  auto per_task = decode(thread_map({1234, 1235}, 2));
  ASSERT_TRUE(per_task);
  EXPECT_TRUE(per_task->per_task());
  EXPECT_EQ(per_task->pids, (std::vector<int64_t>{1234, 1235}));
  // A record shorter than its count keeps the entries it holds; without one it says nothing.
  auto cut = decode(thread_map({1234}, 5));
  ASSERT_TRUE(cut);
  EXPECT_EQ(cut->pids, (std::vector<int64_t>{1234}));
  auto empty = decode(thread_map({}, 3));
  ASSERT_TRUE(empty);
  EXPECT_FALSE(empty->per_task());
  EXPECT_FALSE(decode({1, 2, 3}));
  EXPECT_TRUE(is_thread_map(OtherRecord{kRecordThreadMap, 0, {}}));
  EXPECT_TRUE(is_user_record(OtherRecord{kRecordThreadMap, 0, {}}));
  EXPECT_FALSE(is_user_record(OtherRecord{PERF_RECORD_SWITCH, 0, {}}));
}

}  // namespace
}  // namespace offwake::perfdata
