// PerfDataReader on bad input: every truncation, every kind of corrupt header, section and
// record gives a one-line Error that says what is wrong, never a crash or an endless loop; and
// is of kind bad input (unsupported for a sample field the reader does not decode), so that a
// caller can tell a broken file from one it should record differently, or from a failed read.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "fixtures.h"
#include "perfdata/format.h"
#include "perfdata/reader.h"

namespace offwake::perfdata {
namespace {

// How reading an input ended.
struct Outcome {
  bool opened = false;
  std::optional<Error> error;  // from open or from next()
  size_t records = 0;          // data records returned before the end or the error
  std::optional<std::string> cut;  // the reader's cut_short() at the end
};

Outcome read_outcome(const Bytes& data) {
  Outcome out;
  auto r = PerfDataReader::from_memory(data);
  if (!r) {
    out.error = r.error();
    return out;
  }
  out.opened = true;
  // Every record is at least 8 bytes: more calls than that mean the reader is not advancing.
  const size_t limit = data.size() / 8 + 2;
  for (size_t i = 0; i < limit; ++i) {
    auto rec = r->next();
    if (!rec) {
      out.error = rec.error();
      return out;
    }
    if (!*rec) {
      out.cut = r->cut_short();
      return out;
    }
    ++out.records;
  }
  ADD_FAILURE() << "reader returned more records than the input can hold";
  return out;
}

void expect_one_line(const Error& e) {
  const std::string m = e.message();
  EXPECT_FALSE(m.empty());
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

void expect_kind(const Error& e, ErrorKind kind) {
  EXPECT_EQ(e.kind(), kind) << error_kind_name(e.kind()) << ", wanted " << error_kind_name(kind) << ": "
                            << e.message();
}

// The input must be rejected with a message that contains `mentions`.
void expect_error(const Bytes& data, const std::string& mentions, ErrorKind kind = ErrorKind::kBadInput) {
  Outcome o = read_outcome(data);
  ASSERT_TRUE(o.error) << "accepted; wanted an error mentioning '" << mentions << "'";
  expect_one_line(*o.error);
  EXPECT_NE(o.error->message().find(mentions), std::string::npos)
      << "message: " << o.error->message() << "\nwanted: " << mentions;
  expect_kind(*o.error, kind);
}

Bytes file_image() {
  return test::write_to_memory(Mode::kFile, test::two_events(), test::every_record());
}
Bytes pipe_image() {
  return test::write_to_memory(Mode::kPipe, test::two_events(), test::every_record());
}

FileHeader header_of(const Bytes& b) {
  FileHeader h{};
  std::memcpy(&h, b.data(), sizeof h);
  return h;
}
void set_header(Bytes& b, const FileHeader& h) { std::memcpy(b.data(), &h, sizeof h); }

// Offsets of the records in [begin, end), by walking their headers.
std::vector<size_t> record_offsets(const Bytes& b, size_t begin, size_t end) {
  std::vector<size_t> out;
  for (size_t at = begin; at + sizeof(perf_event_header) <= end;) {
    perf_event_header h{};
    std::memcpy(&h, b.data() + at, sizeof h);
    out.push_back(at);
    if (h.size < sizeof h) break;
    at += h.size;
  }
  return out;
}

uint32_t type_at(const Bytes& b, size_t at) {
  perf_event_header h{};
  std::memcpy(&h, b.data() + at, sizeof h);
  return h.type;
}

size_t first_sample(const Bytes& b, size_t begin, size_t end) {
  for (size_t at : record_offsets(b, begin, end))
    if (type_at(b, at) == PERF_RECORD_SAMPLE) return at;
  ADD_FAILURE() << "no sample in the image";
  return begin;
}

template <typename T>
void poke(Bytes& b, size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof v);
}

TEST(ReaderTruncation, FileModeEveryPrefixIsAnError) {
  const Bytes full = file_image();
  ASSERT_EQ(read_outcome(full).error, std::nullopt);
  for (size_t n = 0; n < full.size(); ++n) {
    Outcome o = read_outcome(Bytes(full.begin(), full.begin() + n));
    // A file-mode header says how long its sections are, so any prefix is short.
    ASSERT_TRUE(o.error) << "prefix of " << n << " of " << full.size() << " bytes was accepted";
    expect_one_line(*o.error);
    expect_kind(*o.error, ErrorKind::kBadInput);
  }
}

std::string hex(size_t v) {
  char s[32];
  snprintf(s, sizeof s, "0x%zx", v);
  return s;
}

// A stream cut inside a record reads as perf reads it: the records before the cut, and a
// warning that says where it was cut; cut before any data record, it is an error.
TEST(ReaderTruncation, PipeModePrefixReadsTheRecordsBeforeTheCut) {
  const Bytes full = pipe_image();
  const size_t nr_data_records = test::every_record().size();
  ASSERT_EQ(read_outcome(full).records, nr_data_records);
  // Record boundaries, and how many data records (not HEADER_* ones: attrs and features at
  // the start, build ids at the end) lie before each.
  std::map<size_t, size_t> boundaries;
  size_t data_records = 0;
  for (size_t at : record_offsets(full, sizeof(PipeHeader), full.size())) {
    boundaries[at] = data_records;
    uint32_t t = type_at(full, at);
    if (t != kRecordHeaderAttr && t != kRecordHeaderFeature && t != kRecordHeaderBuildId) ++data_records;
  }
  ASSERT_EQ(data_records, nr_data_records);

  size_t accepted = 0, cut = 0;
  for (size_t n = 0; n < full.size(); ++n) {
    Outcome o = read_outcome(Bytes(full.begin(), full.begin() + n));
    auto b = boundaries.find(n);
    if (b != boundaries.end()) {
      // A stream cut between records is a shorter, valid stream: it reads to its end.
      EXPECT_EQ(o.error, std::nullopt) << "cut at record boundary " << n << ": " << o.error->message();
      EXPECT_EQ(o.records, b->second) << "cut at " << n;
      EXPECT_EQ(o.cut, std::nullopt) << "cut at record boundary " << n;
      ++accepted;
      continue;
    }
    auto after = boundaries.upper_bound(n);
    const size_t before = after == boundaries.begin() ? 0 : std::prev(after)->second;
    if (before == 0) {
      ASSERT_TRUE(o.error) << "prefix of " << n << " bytes, cut before any data record, was accepted";
      expect_one_line(*o.error);
      expect_kind(*o.error, ErrorKind::kBadInput);
      continue;
    }
    ASSERT_EQ(o.error, std::nullopt) << "prefix of " << n << " bytes: " << o.error->message();
    EXPECT_EQ(o.records, before) << "prefix of " << n << " bytes";
    ASSERT_TRUE(o.cut) << "prefix of " << n << " bytes read without a warning";
    EXPECT_EQ(o.cut->find('\n'), std::string::npos) << *o.cut;
    EXPECT_NE(o.cut->find("cut at offset " + hex(n) + ","), std::string::npos) << *o.cut;
    EXPECT_NE(o.cut->find("inside the record at " + hex(std::prev(after)->first)), std::string::npos) << *o.cut;
    ++cut;
  }
  EXPECT_EQ(accepted, boundaries.size());
  EXPECT_GT(cut, 0u);
}

TEST(ReaderMalformed, EmptyInput) { expect_error({}, "empty input"); }

TEST(ReaderMalformed, BadMagic) {
  Bytes b = file_image();
  b[0] = 'X';
  expect_error(b, "bad magic");
  b = pipe_image();
  b[7] = '1';  // "PERFILE1"
  expect_error(b, "bad magic");
}

TEST(ReaderMalformed, ByteSwappedMagic) {
  for (Bytes b : {file_image(), pipe_image()}) {
    poke(b, 0, __builtin_bswap64(kMagic));
    expect_error(b, "other byte order");
  }
}

TEST(ReaderMalformed, ZeroMagicMeansTheHeaderWasNeverWritten) {
  Bytes b = file_image();
  std::fill(b.begin(), b.begin() + sizeof(FileHeader), 0);
  expect_error(b, "header was never written");
}

TEST(ReaderMalformed, HeaderSizeTooSmall) {
  Bytes b = file_image();
  FileHeader h = header_of(b);
  h.size = 64;
  set_header(b, h);
  expect_error(b, "header size 64 is too small");
}

TEST(ReaderMalformed, BadAttrSize) {
  for (uint64_t bad : {uint64_t{0}, uint64_t{8}, uint64_t{1} << 40, ~uint64_t{0}}) {
    Bytes b = file_image();
    FileHeader h = header_of(b);
    h.attr_size = bad;
    set_header(b, h);
    expect_error(b, "bad attr size");
  }
}

TEST(ReaderMalformed, AttrsSectionPastTheEnd) {
  Bytes b = file_image();
  FileHeader h = header_of(b);
  h.attrs.offset = b.size() - 8;
  set_header(b, h);
  expect_error(b, "attrs section lies outside the file");
  h.attrs.offset = ~uint64_t{0} - 8;  // offset + size wraps around
  set_header(b, h);
  expect_error(b, "attrs section lies outside the file");
}

TEST(ReaderMalformed, AttrsSectionNotWholeAttrsOrEmpty) {
  Bytes b = file_image();
  FileHeader h = header_of(b);
  h.attrs.size -= 8;
  set_header(b, h);
  expect_error(b, "whole number of attrs");
  h.attrs.size = 0;
  set_header(b, h);
  expect_error(b, "no events");
}

TEST(ReaderMalformed, EventIdsPastTheEnd) {
  Bytes b = file_image();
  FileHeader h = header_of(b);
  poke<uint64_t>(b, h.attrs.offset + kAttrSize, b.size());  // first event's ids.offset
  expect_error(b, "event ids lie outside the file");
}

TEST(ReaderMalformed, UnsupportedSampleTypeInAttr) {
  Bytes b = file_image();
  FileHeader h = header_of(b);
  poke<uint64_t>(b, h.attrs.offset + offsetof(perf_event_attr, sample_type),
                 PERF_SAMPLE_IP | PERF_SAMPLE_BRANCH_STACK);
  expect_error(b, "not supported", ErrorKind::kUnsupported);

  b = pipe_image();
  auto offsets = record_offsets(b, sizeof(PipeHeader), b.size());
  ASSERT_EQ(type_at(b, offsets[0]), uint32_t{kRecordHeaderAttr});
  poke<uint64_t>(b, offsets[0] + 8 + offsetof(perf_event_attr, sample_type), PERF_SAMPLE_IP | PERF_SAMPLE_WEIGHT);
  expect_error(b, "not supported", ErrorKind::kUnsupported);
}

TEST(ReaderMalformed, DataSectionPastTheEnd) {
  Bytes b = file_image();
  FileHeader h = header_of(b);
  h.data.size = b.size();
  set_header(b, h);
  expect_error(b, "data section lies outside the file");
}

TEST(ReaderMalformed, FeatureSectionPastTheEnd) {
  Bytes b = file_image();
  FileHeader h = header_of(b);
  const size_t table = h.data.offset + h.data.size;
  poke<uint64_t>(b, table + 8, 1 << 20);  // the first (BUILD_ID) section's size
  // Begun inside the file: as a file cut short would have it.
  uint64_t offset = 0;
  std::memcpy(&offset, b.data() + table, sizeof offset);
  expect_error(b, "cut short: feature 2 ends at byte " + std::to_string(offset + (1 << 20)) + ", the file at " +
                      std::to_string(b.size()));
}

TEST(ReaderMalformed, FeatureSectionBeyondTheEnd) {
  Bytes b = file_image();
  FileHeader h = header_of(b);
  const size_t table = h.data.offset + h.data.size;
  poke<uint64_t>(b, table, uint64_t{1} << 40);  // the first (BUILD_ID) section's offset
  expect_error(b, "feature 2 lies outside the file");
}

TEST(ReaderMalformed, FeatureTablePastTheEnd) {
  Bytes b = file_image();
  FileHeader h = header_of(b);
  b.resize(h.data.offset + h.data.size + 8);  // half of the first table entry
  expect_error(b, "feature table is truncated");
}

TEST(ReaderMalformed, CorruptFeatureSection) {
  Bytes b = file_image();
  FileHeader h = header_of(b);
  // Feature bits in order: BUILD_ID, HOSTNAME, ...; make the hostname's string length huge.
  FileSection hostname{};
  std::memcpy(&hostname, b.data() + h.data.offset + h.data.size + 16, sizeof hostname);
  poke<uint32_t>(b, hostname.offset, 0x7fffffff);
  expect_error(b, "feature 3: truncated");
}

TEST(ReaderMalformed, RecordSizeBelowHeaderSize) {
  Bytes b = file_image();
  FileHeader h = header_of(b);
  poke<uint16_t>(b, h.data.offset + offsetof(perf_event_header, size), 4);
  expect_error(b, "has size 4");

  b = pipe_image();
  auto offsets = record_offsets(b, sizeof(PipeHeader), b.size());
  poke<uint16_t>(b, offsets.back() + offsetof(perf_event_header, size), 0);
  expect_error(b, "has size 0");
}

TEST(ReaderMalformed, RecordOverrunsTheDataSection) {
  Bytes b = file_image();
  FileHeader h = header_of(b);
  auto offsets = record_offsets(b, h.data.offset, h.data.offset + h.data.size);
  poke<uint16_t>(b, offsets.back() + offsetof(perf_event_header, size), 64);
  expect_error(b, "overruns the data section");
}

TEST(ReaderMalformed, CallchainLongerThanTheRecord) {
  for (Bytes b : {file_image(), pipe_image()}) {
    FileHeader h = header_of(b);
    size_t at = h.size == sizeof(FileHeader)
                    ? first_sample(b, h.data.offset, h.data.offset + h.data.size)
                    : first_sample(b, sizeof(PipeHeader), b.size());
    // IDENTIFIER, IP, TID, TIME, CPU, PERIOD, then the callchain's nr.
    poke<uint64_t>(b, at + 8 + 6 * 8, 1000);
    expect_error(b, "callchain of 1000 entries overruns the record");
  }
}

TEST(ReaderMalformed, UnknownSampleIdInMultiEventFile) {
  for (Bytes b : {file_image(), pipe_image()}) {
    FileHeader h = header_of(b);
    size_t at = h.size == sizeof(FileHeader)
                    ? first_sample(b, h.data.offset, h.data.offset + h.data.size)
                    : first_sample(b, sizeof(PipeHeader), b.size());
    poke<uint64_t>(b, at + 8, 999);  // PERF_SAMPLE_IDENTIFIER comes first
    expect_error(b, "unknown id 999");
  }
}

TEST(ReaderMalformed, PipeRecordsThatDescribeNothingUsable) {
  const Bytes full = pipe_image();
  auto offsets = record_offsets(full, sizeof(PipeHeader), full.size());
  ASSERT_EQ(type_at(full, offsets[0]), uint32_t{kRecordHeaderAttr});

  Bytes b = full;
  poke<uint32_t>(b, offsets[0] + 8 + offsetof(perf_event_attr, size), 4);
  expect_error(b, "bad attr size");

  b = full;
  poke<uint16_t>(b, offsets[0] + offsetof(perf_event_header, size), 16);  // attr cut short
  expect_error(b, "attr record is too short");

  size_t feature = 0;
  for (size_t at : offsets)
    if (type_at(full, at) == kRecordHeaderFeature) {
      feature = at;
      break;
    }
  ASSERT_NE(feature, 0u);
  b = full;
  poke<uint64_t>(b, feature + 8, 4096);
  expect_error(b, "bad feature id");
}

TEST(ReaderMalformed, DataRecordBeforeAnyEvent) {
  Bytes b = pipe_image();
  auto offsets = record_offsets(b, sizeof(PipeHeader), b.size());
  // The first HEADER_ATTR becomes a COMM: a data record arrives before any event.
  poke<uint32_t>(b, offsets[0], PERF_RECORD_COMM);
  expect_error(b, "before any event description");
}

// Random byte flips: whatever the reader makes of them, it ends with an error or at the end.
TEST(ReaderCorruption, RandomFlipsNeverCrashOrLoop) {
  const Bytes images[2] = {file_image(), pipe_image()};
  const FileHeader fh = header_of(images[0]);
  std::mt19937_64 rng(0x0ff7a4e);
  size_t errors = 0, clean = 0;
  for (int i = 0; i < 2000; ++i) {
    Bytes b = images[i % 2];
    // Half of the runs aim at the data records, where most of the decoding happens.
    size_t lo = 0, hi = b.size();
    if ((i / 2) % 2) {
      lo = i % 2 ? sizeof(PipeHeader) : fh.data.offset;
      if (i % 2 == 0) hi = fh.data.offset + fh.data.size;
    }
    for (int k = 0, n = 1 + static_cast<int>(rng() % 8); k < n; ++k)
      b[lo + rng() % (hi - lo)] = static_cast<uint8_t>(rng());
    if (rng() % 4 == 0) b.resize(rng() % b.size());
    Outcome o = read_outcome(b);
    if (o.error) {
      expect_one_line(*o.error);
      // A flip in an attr's sample_type may ask for a field the reader does not decode.
      EXPECT_TRUE(o.error->is(ErrorKind::kBadInput) || o.error->is(ErrorKind::kUnsupported))
          << error_kind_name(o.error->kind()) << ": " << o.error->message();
      ++errors;
    } else {
      ++clean;
    }
  }
  // Both outcomes must occur, or the flips are not reaching anything interesting.
  EXPECT_GT(errors, 100u);
  EXPECT_GT(clean, 10u);
}

}  // namespace
}  // namespace offwake::perfdata
