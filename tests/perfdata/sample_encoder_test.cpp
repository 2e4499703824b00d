// PERF_RECORD_SAMPLE and the sample_id trailer: round trips for every supported sample_type
// bit, the exact byte layout, and rejection of the bits this implementation does not encode.
#include "perfdata/sample_encoder.h"

#include <gtest/gtest.h>

#include <bit>
#include <optional>
#include <random>

#include "perfdata/format.h"

namespace offwake::perfdata {
namespace {

static_assert(std::endian::native == std::endian::little, "byte arrays below are little-endian");

constexpr uint64_t kEveryBit[] = {
    PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_IP,     PERF_SAMPLE_TID,    PERF_SAMPLE_TIME,
    PERF_SAMPLE_ADDR,       PERF_SAMPLE_ID,     PERF_SAMPLE_STREAM_ID, PERF_SAMPLE_CPU,
    PERF_SAMPLE_PERIOD,     PERF_SAMPLE_CALLCHAIN, PERF_SAMPLE_RAW, PERF_SAMPLE_REGS_USER,
    PERF_SAMPLE_STACK_USER, PERF_SAMPLE_DATA_SRC, PERF_SAMPLE_CGROUP};

// The user registers of the samples below: three of them (bits 0, 7 and 8: ax, sp, ip).
constexpr uint64_t kRegsMask = 0x181;

perf_event_attr attr_with(uint64_t sample_type, bool sample_id_all = false) {
  perf_event_attr a{};
  a.size = sizeof a;
  a.sample_type = sample_type;
  a.sample_id_all = sample_id_all;
  a.sample_regs_user = kRegsMask;
  a.sample_stack_user = 32;
  return a;
}

// Every field distinct and non-zero, so a field written in the wrong slot shows.
SampleRecord full_sample() {
  SampleRecord s;
  s.misc = PERF_RECORD_MISC_KERNEL;
  s.id = 0x1111111111111111;
  s.ip = 0xffffffff81002222;
  s.pid = 0x3333;
  s.tid = 0x3334;
  s.time = 0x4444444444;
  s.addr = 0x5555555555;
  s.stream_id = 0x6666;
  s.cpu = 7;
  s.period = 0x8888;
  s.callchain.push(0xffffffff81002222, FrameContext::kKernel);
  s.callchain.push(0x401000, FrameContext::kUser);
  s.callchain.push(0x402000, FrameContext::kUser);
  s.raw = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8};  // 4 + 12 = 16: no padding needed
  s.user_stack.abi = PERF_SAMPLE_REGS_ABI_64;
  s.user_stack.regs_mask = kRegsMask;
  s.user_stack.regs = {0x9191, 0x7ffd0000, 0x401234};
  s.user_stack.stack_size = 32;
  s.user_stack.stack = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};  // 12 of the 32 bytes filled
  s.data_src = 0xa0a0;
  s.cgroup = 0xb0b0b0b0b;
  return s;
}

// What decoding gives back: the fields sample_type does not select are zero.
SampleRecord selected(const SampleRecord& s, uint64_t t) {
  SampleRecord e;
  e.misc = s.misc;
  if (t & (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_ID)) e.id = s.id;
  if (t & PERF_SAMPLE_IP) e.ip = s.ip;
  if (t & PERF_SAMPLE_TID) e.pid = s.pid, e.tid = s.tid;
  if (t & PERF_SAMPLE_TIME) e.time = s.time;
  if (t & PERF_SAMPLE_ADDR) e.addr = s.addr;
  if (t & PERF_SAMPLE_STREAM_ID) e.stream_id = s.stream_id;
  if (t & PERF_SAMPLE_CPU) e.cpu = s.cpu;
  if (t & PERF_SAMPLE_PERIOD) e.period = s.period;
  if (t & PERF_SAMPLE_CALLCHAIN) e.callchain = s.callchain;
  if (t & PERF_SAMPLE_RAW) e.raw = s.raw;
  if (t & PERF_SAMPLE_REGS_USER) {
    e.user_stack.abi = s.user_stack.abi;
    e.user_stack.regs_mask = s.user_stack.regs_mask;
    e.user_stack.regs = s.user_stack.regs;
  }
  if (t & PERF_SAMPLE_STACK_USER) {
    e.user_stack.stack_size = s.user_stack.stack_size;
    e.user_stack.stack = s.user_stack.stack;
  }
  if (t & PERF_SAMPLE_DATA_SRC) e.data_src = s.data_src;
  if (t & PERF_SAMPLE_CGROUP) e.cgroup = s.cgroup;
  return e;
}

perf_event_header header_of(const Bytes& b) {
  perf_event_header h{};
  EXPECT_GE(b.size(), sizeof h);
  if (b.size() >= sizeof h) std::memcpy(&h, b.data(), sizeof h);
  return h;
}

Result<SampleRecord> round_trip(uint64_t sample_type, const SampleRecord& s) {
  perf_event_attr a = attr_with(sample_type);
  auto bytes = encode_sample(a, s);
  if (!bytes) return bytes.error();
  perf_event_header h = header_of(*bytes);
  EXPECT_EQ(h.type, uint32_t{PERF_RECORD_SAMPLE});
  EXPECT_EQ(h.size, bytes->size());
  EXPECT_EQ(h.size % 8, 0u);
  return decode_sample(a, h.misc, std::span(*bytes).subspan(sizeof h));
}

TEST(SampleEncoder, RoundTripsEachBitAlone) {
  const SampleRecord s = full_sample();
  for (uint64_t bit : kEveryBit) {
    SCOPED_TRACE("sample_type bit " + std::to_string(std::countr_zero(bit)));
    auto back = round_trip(bit, s);
    ASSERT_TRUE(back) << back.error().message();
    EXPECT_EQ(*back, selected(s, bit));
  }
}

TEST(SampleEncoder, RoundTripsAllBitsTogether) {
  const SampleRecord s = full_sample();
  auto back = round_trip(kSupportedSampleType, s);
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(*back, s);
}

TEST(SampleEncoder, RoundTripsRandomSubsets) {
  std::mt19937_64 rng(20240601);
  SampleRecord s = full_sample();
  for (int i = 0; i < 200; ++i) {
    uint64_t t = rng() & kSupportedSampleType;
    SCOPED_TRACE("sample_type " + std::to_string(t));
    // Vary the callchain and RAW lengths too (RAW kept at a size that needs no padding).
    s.callchain = Callchain();
    for (uint64_t k = 0, n = rng() % 6; k < n; ++k)
      s.callchain.push(0x400000 + k, k % 3 ? FrameContext::kUser : FrameContext::kKernel);
    s.raw.assign(4 + 8 * (rng() % 4), static_cast<uint8_t>(i));
    auto back = round_trip(t, s);
    ASSERT_TRUE(back) << back.error().message();
    EXPECT_EQ(*back, selected(s, t));
  }
}

TEST(SampleEncoder, ExactByteLayout) {
  // IDENTIFIER, IP, TID, TIME, ADDR, ID, STREAM_ID, CPU, PERIOD, CALLCHAIN, RAW.
  SampleRecord s;
  s.misc = PERF_RECORD_MISC_USER;
  s.id = 0x0102030405060708;
  s.ip = 0x1112131415161718;
  s.pid = 0x21222324;
  s.tid = 0x25262728;
  s.time = 0x3132333435363738;
  s.addr = 0x4142434445464748;
  s.stream_id = 0x5152535455565758;
  s.cpu = 0x61626364;
  s.period = 0x7172737475767778;
  s.callchain.push(0x81, FrameContext::kKernel);
  s.callchain.push(0x82, FrameContext::kUser);
  s.raw = {0xa1, 0xa2, 0xa3, 0xa4, 0xa5};  // 4 + 5 = 9 bytes: padded to 16, size field 12

  // 8 header + 9 * 8 fixed fields + 8 nr + 4 * 8 ips + 16 raw = 136 bytes.
  const uint8_t expected[] = {
      0x09, 0x00, 0x00, 0x00, 0x02, 0x00, 0x88, 0x00,  // type 9 (SAMPLE), misc 2 (USER), size 136
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // IDENTIFIER
      0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11,  // IP
      0x24, 0x23, 0x22, 0x21, 0x28, 0x27, 0x26, 0x25,  // TID: pid, tid
      0x38, 0x37, 0x36, 0x35, 0x34, 0x33, 0x32, 0x31,  // TIME
      0x48, 0x47, 0x46, 0x45, 0x44, 0x43, 0x42, 0x41,  // ADDR
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // ID
      0x58, 0x57, 0x56, 0x55, 0x54, 0x53, 0x52, 0x51,  // STREAM_ID
      0x64, 0x63, 0x62, 0x61, 0x00, 0x00, 0x00, 0x00,  // CPU, reserved
      0x78, 0x77, 0x76, 0x75, 0x74, 0x73, 0x72, 0x71,  // PERIOD
      0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // CALLCHAIN nr = 4
      0x80, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,  //   PERF_CONTEXT_KERNEL (-128)
      0x81, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //   0x81
      0x00, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,  //   PERF_CONTEXT_USER (-512)
      0x82, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //   0x82
      0x0c, 0x00, 0x00, 0x00, 0xa1, 0xa2, 0xa3, 0xa4,  // RAW size 12, data...
      0xa5, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //   ...and zero padding
  };
  static_assert(sizeof expected == 136);
  const uint64_t t = kSupportedSampleType &
                     ~uint64_t{PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER | PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_CGROUP};
  auto bytes = encode_sample(attr_with(t), s);
  ASSERT_TRUE(bytes) << bytes.error().message();
  EXPECT_EQ(*bytes, Bytes(std::begin(expected), std::end(expected)));
}

// `s` of user mode encodes to exactly `expected` and decodes back to itself; the decoded sample.
std::optional<SampleRecord> expect_bytes_and_back(const perf_event_attr& a, const SampleRecord& s,
                                                  std::span<const uint8_t> expected) {
  auto bytes = encode_sample(a, s);
  if (!bytes) {
    ADD_FAILURE() << bytes.error().message();
    return std::nullopt;
  }
  EXPECT_EQ(*bytes, Bytes(expected.begin(), expected.end()));
  auto back = decode_sample(a, PERF_RECORD_MISC_USER, std::span(*bytes).subspan(8));
  if (!back) {
    ADD_FAILURE() << back.error().message();
    return std::nullopt;
  }
  EXPECT_EQ(*back, s);
  return *back;
}

// REGS_USER, STACK_USER and DATA_SRC as perf record --call-graph dwarf writes them: abi and one
// u64 per bit of sample_regs_user; the copy's size, its bytes (the unfilled ones zero here) and
// how many the kernel filled; the data source.
TEST(SampleEncoder, ExactByteLayoutOfAStackCopy) {
  SampleRecord s;
  s.misc = PERF_RECORD_MISC_USER;
  s.user_stack.abi = PERF_SAMPLE_REGS_ABI_64;
  s.user_stack.regs_mask = kRegsMask;
  s.user_stack.regs = {0x11, 0x12, 0x13};
  s.user_stack.stack_size = 16;
  s.user_stack.stack = {0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28};
  s.data_src = 0x31;
  const uint8_t expected[] = {
      0x09, 0x00, 0x00, 0x00, 0x02, 0x00, 0x50, 0x00,  // type 9 (SAMPLE), misc 2 (USER), size 80
      0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // REGS_USER abi 2 (64-bit)
      0x11, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //   ax
      0x12, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //   sp
      0x13, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //   ip
      0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // STACK_USER size 16
      0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28,  //   the filled bytes
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //   the rest
      0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //   dyn_size 8
      0x31, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // DATA_SRC
  };
  static_assert(sizeof expected == 80);
  const perf_event_attr a = attr_with(PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER | PERF_SAMPLE_DATA_SRC);
  const std::optional<SampleRecord> back = expect_bytes_and_back(a, s, expected);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->user_stack.reg(8), 0x13u);  // PERF_REG_X86_IP
  EXPECT_EQ(back->user_stack.reg(1), std::nullopt);  // not in the mask
  EXPECT_FALSE(back->user_stack.stack_copy_full());  // 8 of 16 bytes: the stack's top was reached
}

// PERF_SAMPLE_CGROUP comes after DATA_SRC (and after WEIGHT, TRANSACTION, REGS_INTR and
// PHYS_ADDR, which are not written): one u64, the cgroup id, as perf record --all-cgroups has it.
TEST(SampleEncoder, CgroupComesLastAfterDataSrc) {
  SampleRecord s;
  s.misc = PERF_RECORD_MISC_USER;
  s.period = 0x77;
  s.data_src = 0x31;
  s.cgroup = 0x0102030405060708;
  const uint8_t expected[] = {
      0x09, 0x00, 0x00, 0x00, 0x02, 0x00, 0x20, 0x00,  // type 9 (SAMPLE), misc 2 (USER), size 32
      0x77, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // PERIOD
      0x31, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // DATA_SRC
      0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // CGROUP
  };
  expect_bytes_and_back(attr_with(PERF_SAMPLE_PERIOD | PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_CGROUP), s, expected);
}

// A task without user context (a kernel thread, an exiting task): abi NONE and no registers;
// a copy of size 0 has neither bytes nor dyn_size.
TEST(SampleDecoder, NoUserContextHasNoRegistersAndNoCopy) {
  const uint64_t words[] = {PERF_SAMPLE_REGS_ABI_NONE, 0, 0x31};
  const perf_event_attr a = attr_with(PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER | PERF_SAMPLE_DATA_SRC);
  auto s = decode_sample(a, PERF_RECORD_MISC_KERNEL,
                         std::span(reinterpret_cast<const uint8_t*>(words), sizeof words));
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(s->user_stack.abi, 0u);
  EXPECT_TRUE(s->user_stack.regs.empty());
  EXPECT_EQ(s->user_stack.stack_size, 0u);
  EXPECT_TRUE(s->user_stack.stack.empty());
  EXPECT_EQ(s->user_stack.reg(8), std::nullopt);
  EXPECT_EQ(s->data_src, 0x31u);
}

TEST(SampleDecoder, StackCopyFilledBeyondItsSizeIsBadInput) {
  const uint64_t words[] = {8, 0x1111, 16};  // size 8, one word, dyn_size 16
  auto s = decode_sample(attr_with(PERF_SAMPLE_STACK_USER), 0,
                         std::span(reinterpret_cast<const uint8_t*>(words), sizeof words));
  ASSERT_FALSE(s);
  EXPECT_TRUE(s.error().is(ErrorKind::kBadInput)) << s.error().message();
  const uint64_t overrun[] = {4096, 0x1111};
  s = decode_sample(attr_with(PERF_SAMPLE_STACK_USER), 0,
                    std::span(reinterpret_cast<const uint8_t*>(overrun), sizeof overrun));
  ASSERT_FALSE(s);
  EXPECT_TRUE(s.error().is(ErrorKind::kBadInput)) << s.error().message();
}

TEST(SampleEncoder, RegistersThatDoNotMatchTheMaskAreAnError) {
  SampleRecord s = full_sample();
  s.user_stack.regs.pop_back();
  EXPECT_FALSE(encode_sample(attr_with(PERF_SAMPLE_REGS_USER), s));
}

TEST(SampleEncoder, RawIsPaddedSoSizeAndDataEndAligned) {
  const perf_event_attr a = attr_with(PERF_SAMPLE_RAW);
  for (size_t n = 0; n <= 17; ++n) {
    SCOPED_TRACE("raw of " + std::to_string(n) + " bytes");
    SampleRecord s;
    s.misc = PERF_RECORD_MISC_USER;
    for (size_t i = 0; i < n; ++i) s.raw.push_back(static_cast<uint8_t>(i + 1));
    auto bytes = encode_sample(a, s);
    ASSERT_TRUE(bytes);
    uint32_t size = 0;
    std::memcpy(&size, bytes->data() + 8, 4);
    EXPECT_EQ((size + 4) % 8, 0u);
    EXPECT_GE(size, n);
    EXPECT_LT(size, n + 8);
    EXPECT_EQ(bytes->size(), 8 + 4 + size);  // nothing after the padding
    // Decoding gives the data followed by the zero padding.
    auto back = decode_sample(a, PERF_RECORD_MISC_USER, std::span(*bytes).subspan(8));
    ASSERT_TRUE(back) << back.error().message();
    ASSERT_EQ(back->raw.size(), size);
    EXPECT_TRUE(std::equal(s.raw.begin(), s.raw.end(), back->raw.begin()));
    EXPECT_TRUE(std::all_of(back->raw.begin() + n, back->raw.end(), [](uint8_t b) { return b == 0; }));
  }
}

TEST(SampleEncoder, HeaderSizeIsAMultipleOf8) {
  for (uint64_t t : std::vector<uint64_t>{PERF_SAMPLE_TID, PERF_SAMPLE_CALLCHAIN, PERF_SAMPLE_RAW,
                     PERF_SAMPLE_IP | PERF_SAMPLE_RAW, kSupportedSampleType}) {
    for (size_t n = 0; n < 9; ++n) {
      SampleRecord s = full_sample();
      s.raw.resize(n, 0x5a);
      auto bytes = encode_sample(attr_with(t), s);
      ASSERT_TRUE(bytes);
      perf_event_header h = header_of(*bytes);
      EXPECT_EQ(h.size % 8, 0u) << t << " " << n;
      EXPECT_EQ(h.size, bytes->size());
    }
  }
}

TEST(SampleEncoder, MiscZeroMeansTheLeafCpumode) {
  SampleRecord s = full_sample();
  s.misc = 0;
  auto bytes = encode_sample(attr_with(PERF_SAMPLE_IP), s);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(header_of(*bytes).misc, PERF_RECORD_MISC_KERNEL);  // leaf is a kernel frame
  s.callchain = Callchain();
  bytes = encode_sample(attr_with(PERF_SAMPLE_IP), s);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(header_of(*bytes).misc, PERF_RECORD_MISC_USER);
}

TEST(SampleEncoder, UnsupportedBitsAreRejected) {
  const SampleRecord s = full_sample();
  Bytes payload(64, 0);
  for (uint64_t bit : {uint64_t{PERF_SAMPLE_BRANCH_STACK}, uint64_t{PERF_SAMPLE_READ},
                       uint64_t{PERF_SAMPLE_WEIGHT}, uint64_t{PERF_SAMPLE_WEIGHT_STRUCT},
                       uint64_t{PERF_SAMPLE_REGS_INTR}, uint64_t{1} << 63}) {
    const std::string bitno = std::to_string(std::countr_zero(bit));
    SCOPED_TRACE("bit " + bitno);
    auto enc = encode_sample(attr_with(PERF_SAMPLE_IP | bit), s);
    ASSERT_FALSE(enc);
    EXPECT_EQ(enc.error().errnum(), EINVAL);
    EXPECT_NE(enc.error().message().find("bit " + bitno + " is not supported"), std::string::npos)
        << enc.error().message();
    EXPECT_FALSE(decode_sample(attr_with(PERF_SAMPLE_IP | bit), 0, payload));
    EXPECT_FALSE(check_sample_type(bit));
  }
  EXPECT_TRUE(check_sample_type(kSupportedSampleType));
  EXPECT_TRUE(check_sample_type(0));
}

TEST(SampleEncoder, TooLargeRecordIsAnError) {
  SampleRecord s;
  s.raw.resize(70000);
  auto bytes = encode_sample(attr_with(PERF_SAMPLE_RAW), s);
  ASSERT_FALSE(bytes);
  EXPECT_EQ(bytes.error().errnum(), E2BIG);
}

TEST(SampleDecoder, TruncatedPayloadIsAnErrorAtEveryLength) {
  const perf_event_attr a = attr_with(kSupportedSampleType);
  auto bytes = encode_sample(a, full_sample());
  ASSERT_TRUE(bytes);
  std::span<const uint8_t> payload = std::span(*bytes).subspan(8);
  for (size_t n = 0; n < payload.size(); ++n)
    EXPECT_FALSE(decode_sample(a, 0, payload.first(n))) << "payload cut to " << n;
}

TEST(SampleDecoder, CallchainLongerThanTheRecordIsAnError) {
  const perf_event_attr a = attr_with(PERF_SAMPLE_CALLCHAIN);
  Bytes payload(8 + 16, 0);
  const uint64_t nr = 1000;
  std::memcpy(payload.data(), &nr, 8);
  auto s = decode_sample(a, 0, payload);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("callchain"), std::string::npos) << s.error().message();
  // An nr so large that nr * 8 overflows must not wrap around into a small read.
  const uint64_t huge = (uint64_t{1} << 61) + 1;
  std::memcpy(payload.data(), &huge, 8);
  EXPECT_FALSE(decode_sample(a, 0, payload));
}

TEST(SampleDecoder, CallchainWithoutMarkerIsAnError) {
  const perf_event_attr a = attr_with(PERF_SAMPLE_CALLCHAIN);
  const uint64_t words[] = {1, 0x401000};  // nr 1, an ip with no context marker
  Bytes payload(reinterpret_cast<const uint8_t*>(words), reinterpret_cast<const uint8_t*>(words) + 16);
  auto s = decode_sample(a, 0, payload);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("context marker"), std::string::npos) << s.error().message();
}

// ---- the sample_id trailer of non-sample records ----

SampleId full_id() { return SampleId{0x11, 0x12, 0x2222, 0x3333, 0x4444, 5}; }

SampleId selected_id(const SampleId& s, uint64_t t) {
  SampleId e;
  if (t & PERF_SAMPLE_TID) e.pid = s.pid, e.tid = s.tid;
  if (t & PERF_SAMPLE_TIME) e.time = s.time;
  if (t & (PERF_SAMPLE_ID | PERF_SAMPLE_IDENTIFIER)) e.id = s.id;
  if (t & PERF_SAMPLE_STREAM_ID) e.stream_id = s.stream_id;
  if (t & PERF_SAMPLE_CPU) e.cpu = s.cpu;
  return e;
}

TEST(SampleIdTrailer, RoundTripsEachBitAndAll) {
  std::vector<uint64_t> types;
  for (uint64_t bit : kEveryBit)
    if (bit & kSampleIdBits) types.push_back(bit);
  ASSERT_EQ(types.size(), 6u);
  types.push_back(kSampleIdBits);
  types.push_back(kSupportedSampleType);  // bits outside the trailer take no room in it
  for (uint64_t t : types) {
    SCOPED_TRACE("sample_type " + std::to_string(t));
    const perf_event_attr a = attr_with(t, true);
    ByteWriter w;
    put_sample_id(w, a, full_id());
    EXPECT_EQ(w.size(), sample_id_size(a));
    EXPECT_EQ(w.size(), 8u * std::popcount(t & kSampleIdBits));
    ByteReader r(w.bytes(), "trailer");
    auto back = get_sample_id(r, a);
    ASSERT_TRUE(back) << back.error().message();
    EXPECT_EQ(*back, selected_id(full_id(), t));
    EXPECT_EQ(r.remaining(), 0u);
  }
}

TEST(SampleIdTrailer, AbsentWithoutSampleIdAll) {
  const perf_event_attr a = attr_with(kSampleIdBits, false);
  ByteWriter w;
  put_sample_id(w, a, full_id());
  EXPECT_EQ(w.size(), 0u);
  EXPECT_EQ(sample_id_size(a), 0u);
  Bytes junk(16, 0xff);
  ByteReader r(junk, "trailer");
  auto back = get_sample_id(r, a);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, SampleId{});
  EXPECT_EQ(r.remaining(), 16u);
}

TEST(SampleIdTrailer, LayoutPutsIdentifierLast) {
  // The trailer's order is TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER, so a reader can find
  // the identifier at the record's end.
  const perf_event_attr a = attr_with(kSampleIdBits, true);
  ByteWriter w;
  put_sample_id(w, a, SampleId{1, 2, 3, 4, 5, 6});
  const uint64_t expected[] = {1 | (uint64_t{2} << 32), 3, 4, 5, 6, 4};
  ASSERT_EQ(w.size(), sizeof expected);
  EXPECT_EQ(std::memcmp(w.bytes().data(), expected, sizeof expected), 0);
}

TEST(SampleIdTrailer, TruncatedTrailerIsAnError) {
  const perf_event_attr a = attr_with(kSampleIdBits, true);
  ByteWriter w;
  put_sample_id(w, a, full_id());
  for (size_t n = 0; n < w.size(); ++n) {
    ByteReader r(std::span(w.bytes()).first(n), "trailer");
    EXPECT_FALSE(get_sample_id(r, a)) << n;
  }
}

}  // namespace
}  // namespace offwake::perfdata
