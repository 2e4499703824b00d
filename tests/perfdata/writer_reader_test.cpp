// PerfDataWriter -> PerfDataReader: what goes in comes out, in file mode and pipe mode, and
// the writer refuses what it cannot write correctly.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "fixtures.h"
#include "perfdata/format.h"
#include "perfdata/reader.h"
#include "perfdata/writer.h"
#include "support/run.h"

namespace offwake::perfdata {
namespace {

using test::as_read;
using test::every_record;
using test::fixed_host;
using test::two_events;

void expect_same_events(const std::vector<EventDesc>& got, const std::vector<EventDesc>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("event " + std::to_string(i));
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_EQ(got[i].ids, want[i].ids);
    EXPECT_EQ(std::memcmp(&got[i].attr, &want[i].attr, sizeof(perf_event_attr)), 0);
  }
}

BuildIdEntry kernel_build_id() {
  BuildIdEntry e;
  e.cpumode = PERF_RECORD_MISC_KERNEL;
  e.build_id.size = 20;
  e.build_id.bytes.fill(0x5a);
  e.filename = "[kernel.kallsyms]";
  return e;
}

TEST(WriterReader, FileModeRoundTrip) {
  const auto records = every_record();
  Bytes data = test::write_to_memory(Mode::kFile, two_events(), records, {kernel_build_id()});
  ASSERT_FALSE(data.empty());
  auto reader = PerfDataReader::from_memory(data);
  ASSERT_TRUE(reader) << reader.error().message();
  EXPECT_EQ(reader->mode(), Mode::kFile);
  auto back = test::read_all(data);
  ASSERT_TRUE(back) << back.error().message();

  expect_same_events(back->events, as_read(two_events()));
  const FileInfo& info = back->info;
  EXPECT_EQ(info.host, fixed_host());
  expect_same_events(info.events, as_read(two_events()));
  EXPECT_EQ(info.features, (std::vector<int>{kFeatBuildId, kFeatHostname, kFeatOsRelease,
                                             kFeatVersion, kFeatArch, kFeatNrCpus, kFeatCpuDesc,
                                             kFeatCpuId, kFeatTotalMem, kFeatCmdline,
                                             kFeatEventDesc, kFeatSampleTime}));
  // The kernel's entry from add_build_id, then the MMAP2 record's.
  ASSERT_EQ(info.build_ids.size(), 2u);
  EXPECT_EQ(info.build_ids[0], kernel_build_id());
  const auto& exe = std::get<Mmap2Record>(records[1]);
  EXPECT_EQ(info.build_ids[1], (BuildIdEntry{-1, exe.cpumode, exe.build_id, exe.filename}));
  EXPECT_EQ(info.first_sample_time, 10u);  // the samples' times, not the other records'
  EXPECT_EQ(info.last_sample_time, 12u);
  EXPECT_EQ(back->records, records);
}

TEST(WriterReader, FileModeLayout) {
  Bytes data = test::write_to_memory(Mode::kFile, two_events(), every_record());
  ASSERT_GE(data.size(), sizeof(FileHeader));
  FileHeader h{};
  std::memcpy(&h, data.data(), sizeof h);
  EXPECT_EQ(h.magic, kMagic);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(data.data()), 8), "PERFILE2");
  EXPECT_EQ(h.size, sizeof(FileHeader));
  EXPECT_EQ(h.attr_size, kAttrSize + sizeof(FileSection));
  // [header][ids: 3 u64][attrs][data]
  EXPECT_EQ(h.attrs.offset, sizeof(FileHeader) + 3 * 8);
  EXPECT_EQ(h.attrs.size, 2 * h.attr_size);
  EXPECT_EQ(h.data.offset, h.attrs.offset + h.attrs.size);
  EXPECT_EQ(h.data.offset % 8, 0u);
  EXPECT_EQ(h.event_types.offset | h.event_types.size, 0u);
  FileSection ids{};
  std::memcpy(&ids, data.data() + h.attrs.offset + h.attr_size + kAttrSize, sizeof ids);
  EXPECT_EQ(ids.offset, sizeof(FileHeader) + 2 * 8);  // the wakeup event's one id
  EXPECT_EQ(ids.size, 8u);
  // The feature table follows the data; the last section ends the file.
  const int nr_features = std::popcount(h.features[0]) + std::popcount(h.features[1]) +
                          std::popcount(h.features[2]) + std::popcount(h.features[3]);
  FileSection last{};
  std::memcpy(&last, data.data() + h.data.offset + h.data.size + (nr_features - 1) * sizeof last,
              sizeof last);
  EXPECT_EQ(last.offset + last.size, data.size());
}

TEST(WriterReader, PipeModeRoundTrip) {
  const auto records = every_record();
  Bytes data = test::write_to_memory(Mode::kPipe, two_events(), records, {kernel_build_id()});
  ASSERT_GE(data.size(), 16u);
  PipeHeader ph{};
  std::memcpy(&ph, data.data(), sizeof ph);
  EXPECT_EQ(ph.magic, kMagic);
  EXPECT_EQ(ph.size, 16u);
  auto reader = PerfDataReader::from_memory(data);
  ASSERT_TRUE(reader) << reader.error().message();
  EXPECT_EQ(reader->mode(), Mode::kPipe);
  // The events are known once the reader is open, before any record is read, as of a file:
  // a reader may refuse a stream of other events (check_offwake_recording) before reading it.
  expect_same_events(reader->events(), as_read(two_events()));
  EXPECT_EQ(reader->info().host, fixed_host());
  auto first = reader->next();
  ASSERT_TRUE(first) << first.error().message();
  ASSERT_TRUE(*first);
  EXPECT_EQ(**first, records.front());

  auto back = test::read_all(data);
  ASSERT_TRUE(back) << back.error().message();
  expect_same_events(back->events, as_read(two_events()));
  const FileInfo& info = back->info;
  EXPECT_EQ(info.host, fixed_host());
  expect_same_events(info.events, as_read(two_events()));
  // A stream's feature records are those known at its start (its build ids come otherwise:
  // PipeModeSaysWhatAFileSaysOfBuildIds).
  EXPECT_EQ(info.features, (std::vector<int>{kFeatHostname, kFeatOsRelease, kFeatVersion,
                                             kFeatArch, kFeatNrCpus, kFeatCpuDesc, kFeatCpuId,
                                             kFeatTotalMem, kFeatCmdline, kFeatEventDesc}));
  EXPECT_EQ(back->records, records);
}

// The build ids a file has in its section at the end, a stream says too (those of its MMAP2
// records, and the others, the kernel's, in HEADER_BUILD_ID records at its end): what is made
// of either (report --pprof's mappings) is the same.
TEST(WriterReader, PipeModeSaysWhatAFileSaysOfBuildIds) {
  const auto records = every_record();
  auto file = test::read_all(test::write_to_memory(Mode::kFile, two_events(), records, {kernel_build_id()}));
  auto pipe = test::read_all(test::write_to_memory(Mode::kPipe, two_events(), records, {kernel_build_id()}));
  ASSERT_TRUE(file) << file.error().message();
  ASSERT_TRUE(pipe) << pipe.error().message();
  auto sorted = [](std::vector<BuildIdEntry> v) {
    std::sort(v.begin(), v.end(), [](const BuildIdEntry& a, const BuildIdEntry& b) { return a.filename < b.filename; });
    return v;
  };
  ASSERT_EQ(file->info.build_ids.size(), 2u);  // the kernel's, and /usr/bin/worker's MMAP2's
  EXPECT_EQ(sorted(pipe->info.build_ids), sorted(file->info.build_ids));
  // The HEADER_BUILD_ID records are no data records.
  EXPECT_EQ(pipe->records, records);
}

TEST(WriterReader, EventForFindsTheSamplesEvent) {
  Bytes data = test::write_to_memory(Mode::kFile, two_events(), every_record());
  auto reader = PerfDataReader::from_memory(data);
  ASSERT_TRUE(reader);
  std::vector<std::string> names;
  for (;;) {
    auto rec = reader->next();
    ASSERT_TRUE(rec) << rec.error().message();
    if (!*rec) break;
    if (const auto* s = std::get_if<SampleRecord>(&**rec)) {
      const EventDesc* e = reader->event_for(*s);
      ASSERT_NE(e, nullptr);
      names.push_back(e->name);
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"offwake:offcpu", "offwake:wakeup", "offwake:offcpu"}));
  SampleRecord stranger;
  stranger.id = 999;
  EXPECT_EQ(reader->event_for(stranger), nullptr);
}

TEST(WriterReader, SingleEventWithoutIdsOrTrailer) {
  for (Mode mode : {Mode::kFile, Mode::kPipe}) {
    Bytes data = test::write_to_memory(mode, test::one_event(), test::few_records());
    auto back = test::read_all(data);
    ASSERT_TRUE(back) << back.error().message();
    expect_same_events(back->events, as_read(test::one_event()));
    EXPECT_EQ(back->records, test::few_records());
  }
}

TEST(WriterReader, StatsCountRecordsSamplesAndBytes) {
  auto w = PerfDataWriter::create(std::make_unique<MemorySink>(), Mode::kFile, two_events(), fixed_host());
  ASSERT_TRUE(w);
  for (const auto& r : every_record()) ASSERT_TRUE(w->write(r));
  ASSERT_TRUE(w->close());
  EXPECT_EQ(w->stats().records, every_record().size());
  EXPECT_EQ(w->stats().samples, 3u);
  EXPECT_EQ(w->stats().bytes, static_cast<const MemorySink&>(w->sink()).data().size());
  EXPECT_FALSE(w->write(every_record()[0]));  // after close
  EXPECT_TRUE(w->close());                    // closing twice is harmless
}

TEST(WriterErrors, AFailedSampleLeavesNoTrace) {
  // A sample that cannot be encoded is neither counted nor part of HEADER_SAMPLE_TIME.
  auto w = PerfDataWriter::create(std::make_unique<MemorySink>(), Mode::kFile, two_events(), fixed_host());
  ASSERT_TRUE(w);
  SampleRecord too_big;
  too_big.id = test::kWakeupId;
  too_big.time = 1;
  too_big.raw.resize(70000);
  EXPECT_FALSE(w->write(too_big));
  for (const auto& r : every_record()) ASSERT_TRUE(w->write(r));
  ASSERT_TRUE(w->close());
  too_big.time = 1000;
  EXPECT_FALSE(w->write(too_big));  // after close
  EXPECT_EQ(w->stats().samples, 3u);
  EXPECT_EQ(w->stats().records, every_record().size());
  auto back = test::read_all(static_cast<const MemorySink&>(w->sink()).data());
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->info.first_sample_time, 10u);
  EXPECT_EQ(back->info.last_sample_time, 12u);
}

// A sink that takes `budget` bytes, then fails like a full disk.
class FullDiskSink : public MemorySink {
 public:
  explicit FullDiskSink(size_t budget) : budget_(budget) {}
  Status write(std::span<const uint8_t> data) override {
    if (position() + data.size() > budget_) return Error("writing perf.data", ENOSPC);
    return MemorySink::write(data);
  }

 private:
  size_t budget_;
};

TEST(WriterErrors, SinkErrorsAreReturnedAndNotCounted) {
  const size_t header_bytes = test::write_to_memory(Mode::kPipe, two_events(), {}).size();
  auto w = PerfDataWriter::create(std::make_unique<FullDiskSink>(header_bytes + 100), Mode::kPipe,
                                  two_events(), fixed_host());
  ASSERT_TRUE(w);
  size_t written = 0;
  Status last = ok_status();
  for (const auto& r : every_record()) {
    last = w->write(r);
    if (!last) break;
    ++written;
  }
  ASSERT_FALSE(last);
  EXPECT_EQ(last.error().errnum(), ENOSPC);
  EXPECT_EQ(w->stats().records, written);
  EXPECT_LT(written, every_record().size());
  EXPECT_FALSE(PerfDataWriter::create(std::make_unique<FullDiskSink>(10), Mode::kPipe, two_events(),
                                      fixed_host()));
}

TEST(WriterErrors, SampleWithUnknownIdInMultiEventFile) {
  auto w = PerfDataWriter::create(std::make_unique<MemorySink>(), Mode::kFile, two_events(), fixed_host());
  ASSERT_TRUE(w);
  SampleRecord s;
  s.id = 555;
  auto st = w->write(s);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message().find("555"), std::string::npos) << st.error().message();
  EXPECT_EQ(w->stats().samples, 0u);
  s.id = test::kWakeupId;
  EXPECT_TRUE(w->write(s));
}

TEST(WriterErrors, DifferentSampleIdLayoutsAreRejectedAtCreate) {
  auto events = two_events();
  events[1].attr.sample_type &= ~uint64_t{PERF_SAMPLE_TIME};
  auto w = PerfDataWriter::create(std::make_unique<MemorySink>(), Mode::kFile, events, fixed_host());
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().message().find("offwake:wakeup"), std::string::npos) << w.error().message();
  EXPECT_NE(w.error().message().find("sample_id layout"), std::string::npos) << w.error().message();

  events = two_events();
  events[1].attr.sample_id_all = 0;
  EXPECT_FALSE(PerfDataWriter::create(std::make_unique<MemorySink>(), Mode::kPipe, events, fixed_host()));

  // Bits outside the trailer may differ (wakeup already has RAW, offcpu not).
  events = two_events();
  events[1].attr.sample_type |= PERF_SAMPLE_ADDR;
  EXPECT_TRUE(PerfDataWriter::create(std::make_unique<MemorySink>(), Mode::kPipe, events, fixed_host()));
}

TEST(WriterErrors, OtherInvalidSetups) {
  auto create = [](std::vector<EventDesc> events, Mode mode = Mode::kFile, bool seekable = true) {
    return PerfDataWriter::create(std::make_unique<MemorySink>(seekable), mode, std::move(events),
                                  fixed_host());
  };
  EXPECT_FALSE(create({}));
  EXPECT_FALSE(create(two_events(), Mode::kFile, /*seekable=*/false));
  auto events = two_events();
  events[1].ids = {test::kOffcpuIds[1]};
  EXPECT_FALSE(create(events));  // an id used twice
  events = two_events();
  for (auto& e : events) e.attr.sample_type &= ~uint64_t{PERF_SAMPLE_IDENTIFIER};
  EXPECT_FALSE(create(events));  // two events need the identifier to tell samples apart
  events = two_events();
  events[0].attr.sample_type |= PERF_SAMPLE_WEIGHT;
  EXPECT_FALSE(create(events));
  auto w = create(two_events());
  ASSERT_TRUE(w);
  EXPECT_FALSE(w->write(Record{OtherRecord{99, 0, {}}}));
}

TEST(WriterFile, CreatesWithMode0600AndRenamesOnlyAtClose) {
  offwake::test::TempDir dir;
  const std::string path = dir.file("perf.data");
  const std::string temp = path + ".tmp." + std::to_string(getpid());
  auto w = PerfDataWriter::create_file(path, two_events(), fixed_host());
  ASSERT_TRUE(w) << w.error().message();
  for (const auto& r : every_record()) ASSERT_TRUE(w->write(r));

  EXPECT_FALSE(std::filesystem::exists(path));
  struct stat st {};
  ASSERT_EQ(stat(temp.c_str(), &st), 0) << temp;
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_FALSE(PerfDataReader::open(temp));  // until close(), it is not a perf.data file

  ASSERT_TRUE(w->close());
  EXPECT_FALSE(std::filesystem::exists(temp));
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), w->stats().bytes);

  auto reader = PerfDataReader::open(path);
  ASSERT_TRUE(reader) << reader.error().message();
  std::vector<Record> records;
  for (;;) {
    auto rec = reader->next();
    ASSERT_TRUE(rec) << rec.error().message();
    if (!*rec) break;
    records.push_back(**rec);
  }
  EXPECT_EQ(records, every_record());
}

TEST(WriterFile, WithoutCloseTheTemporaryFileIsRemoved) {
  offwake::test::TempDir dir;
  const std::string path = dir.file("perf.data");
  {
    auto w = PerfDataWriter::create_file(path, two_events(), fixed_host());
    ASSERT_TRUE(w);
    ASSERT_TRUE(w->write(every_record()[0]));
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(WriterFile, UnfinishedFileSaysItIsUnfinished) {
  // Once the writer's buffer has gone to disk, a reader sees the zeroed header of a recording
  // that did not finish (it was killed, or is still running).
  offwake::test::TempDir dir;
  const std::string path = dir.file("perf.data");
  const std::string temp = path + ".tmp." + std::to_string(getpid());
  auto w = PerfDataWriter::create_file(path, two_events(), fixed_host());
  ASSERT_TRUE(w);
  const auto records = every_record();
  for (int i = 0; i < 10000 && std::filesystem::file_size(temp) == 0; ++i)
    for (const auto& r : records) ASSERT_TRUE(w->write(r));
  ASSERT_GT(std::filesystem::file_size(temp), 0u);
  auto early = PerfDataReader::open(temp);
  ASSERT_FALSE(early);
  EXPECT_NE(early.error().message().find("header was never written"), std::string::npos)
      << early.error().message();
}

TEST(WriterFile, CreateInMissingDirectoryIsAnError) {
  auto w = PerfDataWriter::create_file("/nonexistent-dir/perf.data", two_events(), fixed_host());
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().message().find("/nonexistent-dir/perf.data"), std::string::npos);
}

// Drains a reader; the first error otherwise.
Result<std::vector<Record>> drain(PerfDataReader& reader) {
  std::vector<Record> records;
  for (;;) {
    auto rec = reader.next();
    if (!rec) return rec.error();
    if (!*rec) return records;
    records.push_back(std::move(**rec));
  }
}

TEST(ReaderFd, PipeModeThroughARealPipe) {
  // A pipe is not seekable: the reader must stream, and the writer too.
  signal(SIGPIPE, SIG_IGN);  // a failing reader must fail the test, not kill it
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  std::thread producer([wfd = fds[1]] {
    auto w = PerfDataWriter::create_pipe(UniqueFd(wfd), two_events(), fixed_host());
    if (!w) return;
    for (const auto& r : every_record()) (void)w->write(r);
    (void)w->close();
  });  // the writer's destructor closes the write end
  auto reader = PerfDataReader::from_fd(UniqueFd(fds[0]), "test pipe");
  Result<std::vector<Record>> records = Error("no reader");
  if (reader) records = drain(*reader);
  producer.join();
  ASSERT_TRUE(reader) << reader.error().message();
  ASSERT_TRUE(records) << records.error().message();
  EXPECT_EQ(*records, every_record());
  EXPECT_EQ(reader->info().host, fixed_host());
}

TEST(ReaderFd, FileModeFromAPipeIsAnError) {
  Bytes data = test::write_to_memory(Mode::kFile, two_events(), every_record());
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  {
    UniqueFd w(fds[1]);  // less than a pipe buffer: no reader needed yet
    ASSERT_EQ(write(w.get(), data.data(), 1024), 1024);
  }
  auto reader = PerfDataReader::from_fd(UniqueFd(fds[0]), "test pipe");
  ASSERT_FALSE(reader);
  EXPECT_NE(reader.error().message().find("must be read from a file"), std::string::npos)
      << reader.error().message();
}

}  // namespace
}  // namespace offwake::perfdata
