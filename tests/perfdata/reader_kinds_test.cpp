// PerfDataReader::open on real files and pipes: what went wrong decides the kind, so that a
// command can tell a file it could not read (I/O) from one that is broken (bad input) or one
// given the wrong way (usage).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "fixtures.h"
#include "perfdata/reader.h"
#include "support/run.h"

namespace offwake::perfdata {
namespace {

Bytes file_image() { return test::write_to_memory(Mode::kFile, test::two_events(), test::every_record()); }

void write_bytes(const std::string& path, const Bytes& b, size_t n) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(n));
  ASSERT_TRUE(out.good()) << path;
}

// Opens `path` and reads it to the end: the first error, if any.
std::optional<Error> read_error(const std::string& path) {
  auto r = PerfDataReader::open(path);
  if (!r) return r.error();
  for (;;) {
    auto rec = r->next();
    if (!rec) return rec.error();
    if (!*rec) return std::nullopt;
  }
}

void expect_kind(const std::optional<Error>& e, ErrorKind kind, const std::string& what) {
  ASSERT_TRUE(e) << what << ": accepted";
  EXPECT_EQ(e->kind(), kind) << what << ": " << error_kind_name(e->kind()) << ", wanted " << error_kind_name(kind)
                             << ": " << e->message();
}

TEST(ReaderKinds, AWholeFileReads) {
  offwake::test::TempDir dir;
  const Bytes image = file_image();
  write_bytes(dir.file("whole.data"), image, image.size());
  auto e = read_error(dir.file("whole.data"));
  EXPECT_FALSE(e) << e->message();
}

TEST(ReaderKinds, AMissingFileOrADirectoryIsIo) {
  offwake::test::TempDir dir;
  auto missing = read_error(dir.file("no-such.data"));
  expect_kind(missing, ErrorKind::kIo, "missing file");
  EXPECT_EQ(missing->errnum(), ENOENT);
  auto directory = read_error(dir.path());
  expect_kind(directory, ErrorKind::kIo, "directory");
  // As a failed open says it: the cause once ("x is a directory: Is a directory" said it twice).
  EXPECT_EQ(directory->message(), "opening " + dir.path() + ": Is a directory");
}

TEST(ReaderKinds, ATruncatedOrGarbageFileIsBadInput) {
  offwake::test::TempDir dir;
  const Bytes image = file_image();
  // Cut in the header, in the attrs, in the data section and in the feature sections.
  for (size_t n : {size_t{0}, size_t{12}, size_t{100}, image.size() / 2, image.size() - 8}) {
    const std::string path = dir.file("cut-" + std::to_string(n) + ".data");
    write_bytes(path, image, n);
    expect_kind(read_error(path), ErrorKind::kBadInput, "cut at " + std::to_string(n));
  }
  Bytes garbage(4096);
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<uint8_t>(i * 131 + 7);
  write_bytes(dir.file("garbage.data"), garbage, garbage.size());
  expect_kind(read_error(dir.file("garbage.data")), ErrorKind::kBadInput, "garbage");
}

// A file-mode perf.data is read by seeking: given on a pipe, it is the invocation that is wrong.
TEST(ReaderKinds, AFileImageOnAPipeIsUsage) {
  const Bytes image = file_image();
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  // Its start fits in the pipe's buffer: the reader needs no more to refuse it.
  const size_t n = std::min<size_t>(image.size(), 4096);
  ASSERT_EQ(write(p[1], image.data(), n), static_cast<ssize_t>(n));
  close(p[1]);
  auto r = PerfDataReader::from_fd(UniqueFd(p[0]), "standard input");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), ErrorKind::kUsage) << r.error().message();
}

}  // namespace
}  // namespace offwake::perfdata
