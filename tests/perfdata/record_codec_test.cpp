// Non-sample records: one encoder and one decoder per type, with and without the sample_id
// trailer (sample_id_all), and what the decoder does with types it does not know.
#include "perfdata/record_encoder.h"

#include <gtest/gtest.h>

#include "perfdata/format.h"
#include "perfdata/sample_encoder.h"

namespace offwake::perfdata {
namespace {

perf_event_attr id_attr(bool sample_id_all) {
  perf_event_attr a{};
  a.size = sizeof a;
  a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
                  PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_IP;
  a.sample_id_all = sample_id_all;
  return a;
}

SampleId trailer(bool sample_id_all) {
  if (!sample_id_all) return {};
  return SampleId{100, 101, 0x1234567, 42, 43, 3};
}

struct Decoded {
  perf_event_header header{};
  Result<Record> record = Error("not decoded");
};

// Checks the framing every record shares, then decodes.
Decoded decode(const perf_event_attr& a, const Bytes& bytes) {
  Decoded d;
  EXPECT_GE(bytes.size(), sizeof d.header);
  if (bytes.size() < sizeof d.header) return d;
  std::memcpy(&d.header, bytes.data(), sizeof d.header);
  EXPECT_EQ(d.header.size, bytes.size());
  EXPECT_EQ(d.header.size % 8, 0u);
  d.record = decode_record(a, d.header, std::span(bytes).subspan(sizeof d.header));
  return d;
}

template <typename T>
T decode_as(const perf_event_attr& a, const Bytes& bytes, uint32_t type) {
  Decoded d = decode(a, bytes);
  EXPECT_EQ(d.header.type, type);
  if (!d.record) {
    ADD_FAILURE() << d.record.error().message();
    return T{};
  }
  const T* r = std::get_if<T>(&d.record.value());
  if (!r) {
    ADD_FAILURE() << "decoded as variant index " << d.record->index();
    return T{};
  }
  return *r;
}

// Every prefix of the payload shorter than the fixed part plus the trailer is an error.
void expect_truncation_errors(const perf_event_attr& a, const Bytes& bytes, size_t min_payload) {
  perf_event_header h{};
  std::memcpy(&h, bytes.data(), sizeof h);
  std::span<const uint8_t> payload = std::span(bytes).subspan(sizeof h);
  for (size_t n = 0; n < min_payload; ++n)
    EXPECT_FALSE(decode_record(a, h, payload.first(n))) << "type " << h.type << " cut to " << n;
}

class RecordCodec : public ::testing::TestWithParam<bool> {
 protected:
  bool sample_id_all() const { return GetParam(); }
  perf_event_attr attr() const { return id_attr(GetParam()); }
  size_t trailer_size() const { return GetParam() ? 48 : 0; }
};

TEST_P(RecordCodec, Comm) {
  CommRecord c{10, 11, "bash", false, trailer(sample_id_all())};
  auto bytes = encode_comm(attr(), c);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(bytes->size(), 8 + 8 + 8 + trailer_size());  // "bash\0" padded to 8
  EXPECT_EQ(decode_as<CommRecord>(attr(), *bytes, PERF_RECORD_COMM), c);
  expect_truncation_errors(attr(), *bytes, 8 + trailer_size());
}

TEST_P(RecordCodec, CommExecFlag) {
  CommRecord c{10, 11, "sleep", true, trailer(sample_id_all())};
  auto bytes = encode_comm(attr(), c);
  ASSERT_TRUE(bytes);
  Decoded d = decode(attr(), *bytes);
  EXPECT_EQ(d.header.misc, PERF_RECORD_MISC_COMM_EXEC);
  EXPECT_EQ(decode_as<CommRecord>(attr(), *bytes, PERF_RECORD_COMM), c);
}

TEST_P(RecordCodec, CommIsTruncatedTo15Chars) {
  CommRecord c{10, 11, "a-very-long-thread-name", false, trailer(sample_id_all())};
  auto bytes = encode_comm(attr(), c);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(bytes->size(), 8 + 8 + 16 + trailer_size());  // 15 chars + NUL
  CommRecord expected = c;
  expected.comm = "a-very-long-thr";
  EXPECT_EQ(decode_as<CommRecord>(attr(), *bytes, PERF_RECORD_COMM), expected);

  c.comm = "exactly15chars!";
  ASSERT_EQ(c.comm.size(), 15u);
  bytes = encode_comm(attr(), c);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(decode_as<CommRecord>(attr(), *bytes, PERF_RECORD_COMM), c);

  c.comm = "";
  bytes = encode_comm(attr(), c);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(decode_as<CommRecord>(attr(), *bytes, PERF_RECORD_COMM), c);
}

Mmap2Record sample_mmap2(bool sample_id_all) {
  Mmap2Record m;
  m.cpumode = PERF_RECORD_MISC_USER;
  m.pid = 20;
  m.tid = 21;
  m.start = 0x7f1234560000;
  m.len = 0x3000;
  m.pgoff = 0x2000;
  m.prot = 5;
  m.flags = 2;
  m.filename = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  m.sample_id = trailer(sample_id_all);
  return m;
}

TEST_P(RecordCodec, Mmap2WithBuildId) {
  Mmap2Record m = sample_mmap2(sample_id_all());
  m.build_id.size = 20;
  for (int i = 0; i < 20; ++i) m.build_id.bytes[i] = static_cast<uint8_t>(0xc0 + i);
  auto bytes = encode_mmap2(attr(), m);
  ASSERT_TRUE(bytes);
  Decoded d = decode(attr(), *bytes);
  EXPECT_EQ(d.header.misc, PERF_RECORD_MISC_USER | kMiscMmapBuildId);
  // After pid, tid, start, len, pgoff: u8 size, 3 reserved bytes, 20 id bytes.
  const uint8_t* id = bytes->data() + 8 + 8 + 24;
  EXPECT_EQ(id[0], 20);
  EXPECT_EQ(id[1] | id[2] | id[3], 0);
  EXPECT_EQ(std::memcmp(id + 4, m.build_id.bytes.data(), 20), 0);
  EXPECT_EQ(decode_as<Mmap2Record>(attr(), *bytes, PERF_RECORD_MMAP2), m);
  expect_truncation_errors(attr(), *bytes, 64 + trailer_size());

  // A shorter (md5-sized) build id keeps its size.
  m.build_id.size = 16;
  m.cpumode = PERF_RECORD_MISC_KERNEL;
  bytes = encode_mmap2(attr(), m);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(decode_as<Mmap2Record>(attr(), *bytes, PERF_RECORD_MMAP2), m);
}

TEST_P(RecordCodec, Mmap2WithDeviceAndInode) {
  Mmap2Record m = sample_mmap2(sample_id_all());
  m.maj = 259;
  m.min = 3;
  m.ino = 0x123456789;
  m.ino_generation = 77;
  auto bytes = encode_mmap2(attr(), m);
  ASSERT_TRUE(bytes);
  Decoded d = decode(attr(), *bytes);
  EXPECT_EQ(d.header.misc, PERF_RECORD_MISC_USER);
  uint32_t maj = 0;
  std::memcpy(&maj, bytes->data() + 8 + 8 + 24, 4);
  EXPECT_EQ(maj, 259u);
  EXPECT_EQ(decode_as<Mmap2Record>(attr(), *bytes, PERF_RECORD_MMAP2), m);
  expect_truncation_errors(attr(), *bytes, 64 + trailer_size());
}

// The kernel leaks PERF_RECORD_MISC_MMAP_BUILD_ID onto the MMAP2 records of events that did
// not ask for build ids while another event on the system does: their dev/inode is read as
// such when the "size" (maj's low byte) is no build id's, or the reserved bytes are not zero.
TEST_P(RecordCodec, Mmap2BuildIdBitOverDevInodeIsReadAsDevInode) {
  for (uint32_t maj : {0xfeu, 0x103u}) {
    Mmap2Record m = sample_mmap2(sample_id_all());
    m.build_id = {};
    m.maj = maj;
    m.min = 1;
    m.ino = 0x3c53d;
    auto bytes = encode_mmap2(attr(), m);
    ASSERT_TRUE(bytes);
    uint16_t misc = PERF_RECORD_MISC_USER | kMiscMmapBuildId;
    std::memcpy(bytes->data() + offsetof(perf_event_header, misc), &misc, 2);
    EXPECT_EQ(decode_as<Mmap2Record>(attr(), *bytes, PERF_RECORD_MMAP2), m) << "maj " << maj;
  }
}

TEST_P(RecordCodec, ForkAndExit) {
  TaskRecord fork{false, 30, 1, 31, 1, 0xabcdef, trailer(sample_id_all())};
  auto bytes = encode_task(attr(), fork);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(bytes->size(), 8 + 24 + trailer_size());
  EXPECT_EQ(decode_as<TaskRecord>(attr(), *bytes, PERF_RECORD_FORK), fork);
  expect_truncation_errors(attr(), *bytes, 24 + trailer_size());

  TaskRecord exit{true, 30, 1, 31, 1, 0xabcdf0, trailer(sample_id_all())};
  bytes = encode_task(attr(), exit);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(decode_as<TaskRecord>(attr(), *bytes, PERF_RECORD_EXIT), exit);
}

TEST_P(RecordCodec, Lost) {
  LostRecord l{42, 1000, trailer(sample_id_all())};
  auto bytes = encode_lost(attr(), l);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(bytes->size(), 8 + 16 + trailer_size());
  EXPECT_EQ(decode_as<LostRecord>(attr(), *bytes, PERF_RECORD_LOST), l);
  expect_truncation_errors(attr(), *bytes, 16 + trailer_size());
}

TEST_P(RecordCodec, LostSamples) {
  LostSamplesRecord l{12, 0, trailer(sample_id_all())};
  auto bytes = encode_lost_samples(attr(), l);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(bytes->size(), 8 + 8 + trailer_size());
  EXPECT_EQ(decode_as<LostSamplesRecord>(attr(), *bytes, PERF_RECORD_LOST_SAMPLES), l);
  expect_truncation_errors(attr(), *bytes, 8 + trailer_size());
  l.misc = 1 << 15;  // the misc bits say which kind of loss; they survive
  bytes = encode_lost_samples(attr(), l);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(decode_as<LostSamplesRecord>(attr(), *bytes, PERF_RECORD_LOST_SAMPLES), l);
}

// PERF_RECORD_CGROUP: u64 id, then the path NUL-terminated and padded to 8 bytes, as the
// kernel writes it (perf_event_cgroup_output).
TEST_P(RecordCodec, Cgroup) {
  CgroupRecord c{0x1234, "/offwake-test-42", trailer(sample_id_all())};
  auto bytes = encode_cgroup(attr(), c);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(bytes->size(), 8 + 8 + 24 + trailer_size());  // 16 characters and a NUL: 24
  EXPECT_EQ(decode_as<CgroupRecord>(attr(), *bytes, PERF_RECORD_CGROUP), c);
  expect_truncation_errors(attr(), *bytes, 8 + trailer_size());
  CgroupRecord root{1, "/", trailer(sample_id_all())};
  bytes = encode_cgroup(attr(), root);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(bytes->size(), 8 + 8 + 8 + trailer_size());
  EXPECT_EQ(decode_as<CgroupRecord>(attr(), *bytes, PERF_RECORD_CGROUP), root);
}

// PERF_RECORD_NAMESPACES: pid, tid, u64 nr_namespaces, then nr (dev, inode) pairs.
TEST_P(RecordCodec, Namespaces) {
  NamespacesRecord n{50, 51, {}, trailer(sample_id_all())};
  for (uint64_t i = 0; i < 7; ++i) n.namespaces.push_back({4, 0xf0000000 + i});
  auto bytes = encode_namespaces(attr(), n);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(bytes->size(), 8 + 16 + 7 * 16 + trailer_size());
  EXPECT_EQ(decode_as<NamespacesRecord>(attr(), *bytes, PERF_RECORD_NAMESPACES), n);
  expect_truncation_errors(attr(), *bytes, 16 + 7 * 16 + trailer_size());
}

TEST(RecordCodecMalformed, NamespacesCountBeyondTheRecordIsBadInput) {
  const perf_event_attr a = id_attr(false);
  Bytes payload(16 + 16, 0);
  const uint64_t nr = uint64_t{1} << 60;
  std::memcpy(payload.data() + 8, &nr, sizeof nr);
  perf_event_header h{PERF_RECORD_NAMESPACES, 0, static_cast<uint16_t>(8 + payload.size())};
  auto r = decode_record(a, h, payload);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), ErrorKind::kBadInput);
}

INSTANTIATE_TEST_SUITE_P(SampleIdAll, RecordCodec, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "WithTrailer" : "NoTrailer"; });

TEST(RecordCodecNoTrailer, FinishedRoundAndInitAreBareHeaders) {
  // Neither record carries a sample_id trailer, even with sample_id_all.
  const perf_event_attr a = id_attr(true);
  Bytes round = encode_finished_round();
  EXPECT_EQ(round, (Bytes{68, 0, 0, 0, 0, 0, 8, 0}));
  Decoded d = decode(a, round);
  ASSERT_TRUE(d.record);
  EXPECT_TRUE(std::holds_alternative<FinishedRoundRecord>(*d.record));

  Bytes init = encode_finished_init();
  EXPECT_EQ(init, (Bytes{82, 0, 0, 0, 0, 0, 8, 0}));
  d = decode(a, init);
  ASSERT_TRUE(d.record);
  EXPECT_TRUE(std::holds_alternative<FinishedInitRecord>(*d.record));
}

TEST(RecordCodecUnknown, UnknownTypesDecodeAsOtherRecord) {
  const perf_event_attr a = id_attr(true);
  const uint8_t payload[] = {1, 2, 3, 4, 5, 6, 7, 8};
  for (uint32_t type : {uint32_t{PERF_RECORD_MMAP}, uint32_t{PERF_RECORD_KSYMBOL}, 73u, 1000u}) {
    perf_event_header h{type, 0x4001, 16};
    auto r = decode_record(a, h, payload);
    ASSERT_TRUE(r) << type;
    const auto* o = std::get_if<OtherRecord>(&*r);
    ASSERT_NE(o, nullptr) << type;
    EXPECT_EQ(o->type, type);
    EXPECT_EQ(o->misc, 0x4001);
    EXPECT_EQ(o->payload, Bytes(std::begin(payload), std::end(payload)));
  }
}

TEST(RecordCodecPipe, HeaderAttrLayout) {
  EventDesc e;
  e.attr.type = PERF_TYPE_SOFTWARE;
  e.attr.size = 0;  // written as kAttrSize whatever the caller put here
  e.attr.sample_type = PERF_SAMPLE_IP;
  e.ids = {5, 6};
  auto bytes = encode_header_attr(e);
  ASSERT_TRUE(bytes);
  ASSERT_EQ(bytes->size(), 8 + kAttrSize + 16);
  perf_event_header h{};
  std::memcpy(&h, bytes->data(), sizeof h);
  EXPECT_EQ(h.type, uint32_t{kRecordHeaderAttr});
  EXPECT_EQ(h.size, bytes->size());
  perf_event_attr attr{};
  std::memcpy(&attr, bytes->data() + 8, kAttrSize);
  EXPECT_EQ(attr.size, kAttrSize);
  EXPECT_EQ(attr.sample_type, uint64_t{PERF_SAMPLE_IP});
  uint64_t ids[2];
  std::memcpy(ids, bytes->data() + 8 + kAttrSize, 16);
  EXPECT_EQ(ids[0], 5u);
  EXPECT_EQ(ids[1], 6u);
}

TEST(RecordCodecPipe, HeaderFeatureLayout) {
  const uint8_t section[] = {9, 8, 7, 6, 5};
  auto bytes = encode_header_feature(kFeatHostname, section);
  ASSERT_TRUE(bytes);
  ASSERT_EQ(bytes->size(), 24u);  // header, u64 feature id, 5 bytes padded to 8
  perf_event_header h{};
  std::memcpy(&h, bytes->data(), sizeof h);
  EXPECT_EQ(h.type, uint32_t{kRecordHeaderFeature});
  EXPECT_EQ(h.size, 24);
  uint64_t feat = 0;
  std::memcpy(&feat, bytes->data() + 8, 8);
  EXPECT_EQ(feat, uint64_t{kFeatHostname});
  EXPECT_EQ(std::memcmp(bytes->data() + 16, section, 5), 0);
}

}  // namespace
}  // namespace offwake::perfdata
