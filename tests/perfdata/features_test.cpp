// Feature sections: each one's encoder and decoder agree, and strings are perf_header_strings
// padded to 64 bytes.
#include "perfdata/features.h"

#include <gtest/gtest.h>

#include "fixtures.h"
#include "perfdata/format.h"

namespace offwake::perfdata {
namespace {

TEST(HeaderString, PaddedTo64WithLengthIncludingPadding) {
  struct Case {
    std::string s;
    uint32_t len;
  };
  for (const Case& c : {Case{"", 64}, Case{"x86_64", 64}, Case{std::string(63, 'a'), 64},
                        Case{std::string(64, 'b'), 128}, Case{std::string(130, 'c'), 192}}) {
    SCOPED_TRACE("string of " + std::to_string(c.s.size()));
    ByteWriter w;
    w.put_header_string(c.s);
    ASSERT_EQ(w.size(), 4 + c.len);
    uint32_t len = 0;
    std::memcpy(&len, w.bytes().data(), 4);
    EXPECT_EQ(len, c.len);
    EXPECT_EQ(std::memcmp(w.bytes().data() + 4, c.s.data(), c.s.size()), 0);
    EXPECT_TRUE(std::all_of(w.bytes().begin() + 4 + c.s.size(), w.bytes().end(),
                            [](uint8_t b) { return b == 0; }));
    ByteReader r(w.bytes(), "string");
    auto back = r.get_header_string();
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, c.s);
    EXPECT_EQ(r.remaining(), 0u);
  }
}

TEST(HeaderString, LengthPastTheEndIsAnError) {
  ByteWriter w;
  w.put<uint32_t>(64);
  w.put_zeros(10);
  ByteReader r(w.bytes(), "string");
  auto s = r.get_header_string();
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("truncated"), std::string::npos) << s.error().message();
}

Status decode_all(const FeatureSections& sections, FileInfo& info) {
  for (const auto& [bit, bytes] : sections) OFFWAKE_TRY(decode_feature(bit, bytes, info));
  return ok_status();
}

TEST(HostFeatures, RoundTrip) {
  const HostInfo host = test::fixed_host();
  FeatureSections sections = encode_host_features(host);
  std::vector<int> bits;
  for (const auto& [bit, bytes] : sections) bits.push_back(bit);
  EXPECT_EQ(bits, (std::vector<int>{kFeatHostname, kFeatOsRelease, kFeatVersion, kFeatArch,
                                    kFeatNrCpus, kFeatCpuDesc, kFeatCpuId, kFeatTotalMem,
                                    kFeatCmdline}));
  FileInfo info;
  auto s = decode_all(sections, info);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(info.host, host);
  EXPECT_EQ(info.features, bits);
}

TEST(HostFeatures, LayoutOfNumbers) {
  HostInfo host = test::fixed_host();
  FeatureSections sections = encode_host_features(host);
  EXPECT_EQ(sections[kFeatNrCpus], (Bytes{4, 0, 0, 0, 2, 0, 0, 0}));  // available, online
  EXPECT_EQ(sections[kFeatTotalMem], (Bytes{0, 0, 0x10, 0, 0, 0, 0, 0}));  // 1 GiB in KiB
  // cmdline: u32 count, then one perf_header_string per argument.
  EXPECT_EQ(sections[kFeatCmdline].size(), 4 + 5 * (4 + 64));
}

TEST(HostFeatures, EmptyCpuIdIsLeftOut) {
  HostInfo host = test::fixed_host();
  host.cpu_id.clear();
  host.cmdline.clear();
  FeatureSections sections = encode_host_features(host);
  EXPECT_EQ(sections.count(kFeatCpuId), 0u);
  FileInfo info;
  ASSERT_TRUE(decode_all(sections, info));
  EXPECT_EQ(info.host, host);
}

TEST(HostFeatures, TruncatedSectionsAreErrors) {
  FeatureSections sections = encode_host_features(test::fixed_host());
  for (const auto& [bit, bytes] : sections) {
    for (size_t n = 0; n < bytes.size(); n += (n < 16 ? 1 : 37)) {
      FileInfo info;
      EXPECT_FALSE(decode_feature(bit, std::span(bytes).first(n), info))
          << "feature " << bit << " cut to " << n;
    }
  }
}

TEST(HostFeatures, CmdlineCountBeyondTheSectionIsAnError) {
  ByteWriter w;
  w.put<uint32_t>(0x40000000);  // a billion strings in 4 bytes
  FileInfo info;
  auto s = decode_feature(kFeatCmdline, w.bytes(), info);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("cmdline"), std::string::npos);
}

TEST(EventDescFeature, RoundTrip) {
  std::vector<EventDesc> events = test::two_events();
  events[1].attr.size = 0;  // written as kAttrSize whatever the caller put here
  Bytes section = encode_event_desc(events);
  FileInfo info;
  auto s = decode_feature(kFeatEventDesc, section, info);
  ASSERT_TRUE(s) << s.error().message();
  ASSERT_EQ(info.events.size(), 2u);
  std::vector<EventDesc> expected = test::as_read(events);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(info.events[i].name, expected[i].name);
    EXPECT_EQ(info.events[i].ids, expected[i].ids);
    EXPECT_EQ(std::memcmp(&info.events[i].attr, &expected[i].attr, sizeof(perf_event_attr)), 0)
        << "attr of event " << i;
  }
  EXPECT_EQ(info.features, std::vector<int>{kFeatEventDesc});
}

TEST(EventDescFeature, Layout) {
  std::vector<EventDesc> events = test::two_events();
  Bytes section = encode_event_desc(events);
  uint32_t nr = 0, attr_size = 0;
  std::memcpy(&nr, section.data(), 4);
  std::memcpy(&attr_size, section.data() + 4, 4);
  EXPECT_EQ(nr, 2u);
  EXPECT_EQ(attr_size, kAttrSize);
  // Per event: attr, u32 nr_ids, name as a perf_header_string, the ids.
  EXPECT_EQ(section.size(), 8 + (kAttrSize + 4 + 4 + 64 + 16) + (kAttrSize + 4 + 4 + 64 + 8));
  uint32_t nr_ids = 0;
  std::memcpy(&nr_ids, section.data() + 8 + kAttrSize, 4);
  EXPECT_EQ(nr_ids, 2u);
}

TEST(EventDescFeature, BadAttrSizeAndOverrunsAreErrors) {
  Bytes section = encode_event_desc(test::two_events());
  for (uint32_t bad : {0u, 8u, 5000u}) {
    Bytes b = section;
    std::memcpy(b.data() + 4, &bad, 4);
    FileInfo info;
    auto s = decode_feature(kFeatEventDesc, b, info);
    ASSERT_FALSE(s) << bad;
    EXPECT_NE(s.error().message().find("attr size"), std::string::npos) << s.error().message();
  }
  Bytes b = section;
  const uint32_t many_ids = 0x10000000;
  std::memcpy(b.data() + 8 + kAttrSize, &many_ids, 4);
  FileInfo info;
  auto s = decode_feature(kFeatEventDesc, b, info);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("overruns"), std::string::npos) << s.error().message();
  for (size_t n = 0; n < section.size(); n += 7) {
    FileInfo i2;
    EXPECT_FALSE(decode_feature(kFeatEventDesc, std::span(section).first(n), i2)) << n;
  }
}

TEST(BuildIdFeature, RoundTrip) {
  BuildIdEntry kernel;
  kernel.cpumode = PERF_RECORD_MISC_KERNEL;
  kernel.build_id.size = 20;
  for (int i = 0; i < 20; ++i) kernel.build_id.bytes[i] = static_cast<uint8_t>(i * 7);
  kernel.filename = "[kernel.kallsyms]";
  BuildIdEntry lib;
  lib.pid = 1234;
  lib.build_id.size = 16;  // md5-style ids are shorter
  for (int i = 0; i < 16; ++i) lib.build_id.bytes[i] = static_cast<uint8_t>(0xf0 + i);
  lib.filename = std::string(70, 'l');  // padded to 128
  std::vector<BuildIdEntry> entries = {kernel, lib};

  Bytes section = encode_build_ids(entries);
  // Each entry: header, pid, 24 id bytes (20 + size + 3), filename padded to 64.
  EXPECT_EQ(section.size(), (36 + 64) + (36 + 128));
  perf_event_header h{};
  std::memcpy(&h, section.data(), sizeof h);
  EXPECT_EQ(h.type, uint32_t{kRecordHeaderBuildId});
  EXPECT_EQ(h.size, 36 + 64);
  EXPECT_EQ(h.misc, PERF_RECORD_MISC_KERNEL | kMiscBuildIdSize);
  EXPECT_EQ(section[8 + 4 + 20], 20);

  FileInfo info;
  auto s = decode_feature(kFeatBuildId, section, info);
  ASSERT_TRUE(s) << s.error().message();
  EXPECT_EQ(info.build_ids, entries);
  EXPECT_EQ(kernel.build_id.hex(), "00070e151c232a31383f464d545b626970777e85");
}

TEST(BuildIdFeature, BadEntrySizeIsAnError) {
  BuildIdEntry e;
  e.build_id.size = 20;
  e.filename = "/bin/true";
  Bytes section = encode_build_ids(std::vector<BuildIdEntry>{e});
  for (uint16_t bad : {uint16_t{0}, uint16_t{8}, uint16_t{35}, uint16_t{1000}}) {
    Bytes b = section;
    std::memcpy(b.data() + offsetof(perf_event_header, size), &bad, 2);
    FileInfo info;
    auto s = decode_feature(kFeatBuildId, b, info);
    ASSERT_FALSE(s) << bad;
    EXPECT_NE(s.error().message().find("bad size"), std::string::npos) << s.error().message();
  }
}

TEST(SampleTimeFeature, RoundTrip) {
  Bytes section = encode_sample_time(123456789, 987654321);
  ASSERT_EQ(section.size(), 16u);
  FileInfo info;
  ASSERT_TRUE(decode_feature(kFeatSampleTime, section, info));
  EXPECT_EQ(info.first_sample_time, 123456789u);
  EXPECT_EQ(info.last_sample_time, 987654321u);
  FileInfo short_info;
  EXPECT_FALSE(decode_feature(kFeatSampleTime, std::span(section).first(12), short_info));
}

TEST(UnknownFeature, IsRecordedAndSkipped) {
  const Bytes junk = {1, 2, 3};
  FileInfo info;
  ASSERT_TRUE(decode_feature(kFeatClockData, junk, info));
  ASSERT_TRUE(decode_feature(200, junk, info));
  EXPECT_EQ(info.features, (std::vector<int>{kFeatClockData, 200}));
  EXPECT_EQ(info.host, HostInfo{});
}

}  // namespace
}  // namespace offwake::perfdata
