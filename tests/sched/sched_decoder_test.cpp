// SchedDecoder: libtraceevent reads the fields where the format says they are.
#include "sched/sched_decoder.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "offwake.h"

namespace offwake::sched {
namespace {

// sched_switch and sched_waking as Linux 6.18 describes them, with the fields moved (a
// different layout than the running kernel's) to show that nothing is hard-coded.
const char* kSwitch = R"(name: sched_switch
ID: 900
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:pid_t next_pid;	offset:8;	size:4;	signed:1;
	field:pid_t prev_pid;	offset:12;	size:4;	signed:1;
	field:long prev_state;	offset:16;	size:8;	signed:1;
	field:char prev_comm[16];	offset:24;	size:16;	signed:0;
	field:char next_comm[16];	offset:40;	size:16;	signed:0;

print fmt: "prev_comm=%s prev_pid=%d prev_state=%s%s ==> next_comm=%s next_pid=%d", REC->prev_comm, REC->prev_pid, (REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? __print_flags(REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1), "|", { 0x00000001, "S" }, { 0x00000002, "D" }, { 0x00000004, "T" }, { 0x00000008, "t" }, { 0x00000010, "X" }, { 0x00000020, "Z" }, { 0x00000040, "P" }, { 0x00000080, "I" }) : "R", REC->prev_state & (((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) ? "+" : "", REC->next_comm, REC->next_pid
)";

const char* kWaking = R"(name: sched_waking
ID: 901
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:pid_t pid;	offset:8;	size:4;	signed:1;
	field:char comm[16];	offset:12;	size:16;	signed:0;
	field:int target_cpu;	offset:28;	size:4;	signed:1;

print fmt: "comm=%s pid=%d target_cpu=%03d", REC->comm, REC->pid, REC->target_cpu
)";

template <typename T>
void put(std::vector<uint8_t>& b, size_t off, T v) {
  if (b.size() < off + sizeof v) b.resize(off + sizeof v);
  std::memcpy(b.data() + off, &v, sizeof v);
}

void put_str(std::vector<uint8_t>& b, size_t off, const char* s) {
  if (b.size() < off + 16) b.resize(off + 16);
  std::strncpy(reinterpret_cast<char*>(b.data() + off), s, 16);
}

std::vector<uint8_t> switch_record(uint32_t prev, uint64_t state, uint32_t next) {
  std::vector<uint8_t> b(56);
  put<uint16_t>(b, 0, 900);
  put<int32_t>(b, 8, static_cast<int32_t>(next));
  put<int32_t>(b, 12, static_cast<int32_t>(prev));
  put<int64_t>(b, 16, static_cast<int64_t>(state));
  put_str(b, 24, "blocker");
  put_str(b, 40, "runner");
  return b;
}

TEST(SchedDecoder, ReadsFieldsWhereTheFormatPutsThem) {
  auto d = SchedDecoder::from_formats(kSwitch, kWaking);
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_EQ(d->switch_id(), 900u);
  EXPECT_EQ(d->waking_id(), 901u);
  SchedEvent e;
  ASSERT_TRUE(d->decode(switch_record(42, 0x1, 43), e).ok());
  EXPECT_EQ(e.kind, SchedKind::kSwitch);
  EXPECT_EQ(e.prev_tid, 42u);
  EXPECT_EQ(e.next_tid, 43u);
  EXPECT_EQ(e.prev_state, OFFWAKE_STATE_INTERRUPTIBLE);
  EXPECT_EQ(e.prev_comm, "blocker");
  EXPECT_EQ(e.next_comm, "runner");
  // D, I (an idle kernel thread's wait), R+ (preempted), R, and a dead task.
  ASSERT_TRUE(d->decode(switch_record(42, 0x2, 43), e).ok());
  EXPECT_EQ(e.prev_state, OFFWAKE_STATE_UNINTERRUPTIBLE);
  ASSERT_TRUE(d->decode(switch_record(42, 0x80, 43), e).ok());
  EXPECT_EQ(e.prev_state, OFFWAKE_STATE_UNINTERRUPTIBLE | OFFWAKE_STATE_NOLOAD);
  ASSERT_TRUE(d->decode(switch_record(42, 0x100, 43), e).ok());
  EXPECT_EQ(e.prev_state, 0u);
  ASSERT_TRUE(d->decode(switch_record(42, 0, 43), e).ok());
  EXPECT_EQ(e.prev_state, 0u);
  ASSERT_TRUE(d->decode(switch_record(42, 0x10, 43), e).ok());
  EXPECT_FALSE(state_is_block(e.prev_state));

  std::vector<uint8_t> w(32);
  put<uint16_t>(w, 0, 901);
  put<uint8_t>(w, 2, 0x08 | 0x01);  // hardirq, irqs off
  put<int32_t>(w, 8, 77);
  put_str(w, 12, "sleeper");
  ASSERT_TRUE(d->decode(w, e).ok());
  EXPECT_EQ(e.kind, SchedKind::kWaking);
  EXPECT_EQ(e.target_tid, 77u);
  EXPECT_EQ(e.target_comm, "sleeper");
  EXPECT_EQ(e.irq, OFFWAKE_WAKER_HARDIRQ);
  put<uint8_t>(w, 2, 0x10);
  ASSERT_TRUE(d->decode(w, e).ok());
  EXPECT_EQ(e.irq, OFFWAKE_WAKER_SOFTIRQ);
  put<uint8_t>(w, 2, 0x01);
  ASSERT_TRUE(d->decode(w, e).ok());
  EXPECT_EQ(e.irq, 0u);
}

TEST(SchedDecoder, RefusesWhatItCannotRead) {
  auto d = SchedDecoder::from_formats(kSwitch, kWaking);
  ASSERT_TRUE(d.ok());
  SchedEvent e;
  auto rec = switch_record(1, 1, 2);
  EXPECT_FALSE(d->decode(std::span<const uint8_t>(rec.data(), 20), e).ok()) << "truncated";
  EXPECT_FALSE(d->decode(std::span<const uint8_t>(rec.data(), 1), e).ok()) << "shorter than common_type";
  put<uint16_t>(rec, 0, 555);
  Status s = d->decode(rec, e);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("555"), std::string::npos) << s.error().message();
  // Formats that are not what they claim, or lack a field.
  EXPECT_FALSE(SchedDecoder::from_formats(kWaking, kWaking).ok());
  EXPECT_FALSE(SchedDecoder::from_formats("garbage", kWaking).ok());
  std::string no_pid = kWaking;
  no_pid.replace(no_pid.find("pid_t pid;"), 10, "pid_t xyz;");
  auto bad = SchedDecoder::from_formats(kSwitch, no_pid);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("pid"), std::string::npos) << bad.error().message();
}

// The running kernel's own formats (tracefs is mounted by make test and .ci/run).
TEST(SchedDecoder, ReadsTheRunningKernelsFormats) {
  auto d = SchedDecoder::from_tracefs();
  ASSERT_TRUE(d.ok()) << d.error().message();
  EXPECT_GT(d->switch_id(), 0u);
  EXPECT_NE(d->switch_id(), d->waking_id());
}

}  // namespace
}  // namespace offwake::sched
