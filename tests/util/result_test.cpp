// Error and its kind: callers branch on kind(), so every way of making or passing on an error
// must keep it, and an error made without one must not claim one.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <string>

#include "util/result.h"

namespace offwake {
namespace {

TEST(ErrorKind, WithoutAKindAnErrorIsOtherEvenWithAnErrno) {
  EXPECT_EQ(Error("something").kind(), ErrorKind::kOther);
  // EINVAL from a bad option and from a library look alike: the errno decides nothing.
  EXPECT_EQ(Error("sizing the stack map", EINVAL).kind(), ErrorKind::kOther);
  EXPECT_EQ(Error("reading", EIO).kind(), ErrorKind::kOther);
}

TEST(ErrorKind, FromErrnoIsIoUnlessTheCallerSaysOtherwise) {
  errno = ENOENT;
  Error e = Error::from_errno("opening perf.data");
  EXPECT_EQ(e.kind(), ErrorKind::kIo);
  EXPECT_EQ(e.errnum(), ENOENT);
  errno = EPERM;
  Error u = Error::from_errno("loading kernel BTF", ErrorKind::kUnavailable);
  EXPECT_EQ(u.kind(), ErrorKind::kUnavailable);
  EXPECT_EQ(u.errnum(), EPERM);
  EXPECT_EQ(u.message(), std::string("loading kernel BTF: ") + std::strerror(EPERM));
}

TEST(ErrorKind, EachFactorySetsItsKindAndKeepsTheText) {
  struct {
    Error e;
    ErrorKind kind;
  } cases[] = {
      {Error::usage("--min: an empty list", EINVAL), ErrorKind::kUsage},
      {Error::unavailable("no BTF", ENOENT), ErrorKind::kUnavailable},
      {Error::bad_input("bad magic"), ErrorKind::kBadInput},
      {Error::unsupported("sample_type bit 11 is not supported", EINVAL), ErrorKind::kUnsupported},
      {Error("writing perf.data", ENOSPC, ErrorKind::kIo), ErrorKind::kIo},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(c.e.kind(), c.kind) << c.e.message();
    EXPECT_TRUE(c.e.is(c.kind));
    EXPECT_FALSE(c.e.is(ErrorKind::kOther));
  }
  EXPECT_EQ(cases[0].e.message(), std::string("--min: an empty list: ") + std::strerror(EINVAL));
  EXPECT_EQ(cases[2].e.message(), "bad magic");
  EXPECT_EQ(cases[2].e.errnum(), 0);
}

TEST(ErrorKind, ContextKeepsTheKindAndTheErrno) {
  Error inner = Error::bad_input("truncated at offset 0x40", 0);
  Error outer = inner.context("perf.data").context("convert");
  EXPECT_EQ(outer.kind(), ErrorKind::kBadInput);
  EXPECT_EQ(outer.what(), "convert: perf.data: truncated at offset 0x40");
  Error io = Error("reading", EIO, ErrorKind::kIo).context("perf.data");
  EXPECT_EQ(io.kind(), ErrorKind::kIo);
  EXPECT_EQ(io.errnum(), EIO);
}

TEST(ErrorKind, WithKindChangesOnlyTheKind) {
  Error e = Error("loading BPF object", EPERM).with_kind(ErrorKind::kUnavailable);
  EXPECT_EQ(e.kind(), ErrorKind::kUnavailable);
  EXPECT_EQ(e.what(), "loading BPF object");
  EXPECT_EQ(e.errnum(), EPERM);
}

Status fails_with(Error e) { return e; }
Status passes_on(Error e) {
  OFFWAKE_TRY(fails_with(std::move(e)));
  return ok_status();
}

TEST(ErrorKind, ResultsAndTryPassTheKindOn) {
  Status s = passes_on(Error::unavailable("tracefs is not mounted"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind(), ErrorKind::kUnavailable);
  Result<int> r = Error::usage("-p: 'x' is not a pid");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind(), ErrorKind::kUsage);
}

TEST(ErrorKind, EveryKindHasItsOwnName) {
  const ErrorKind all[] = {ErrorKind::kOther, ErrorKind::kUsage, ErrorKind::kUnavailable,
                           ErrorKind::kBadInput, ErrorKind::kUnsupported, ErrorKind::kIo};
  std::set<std::string> names;
  for (ErrorKind k : all) names.insert(error_kind_name(k));
  EXPECT_EQ(names.size(), std::size(all));
  EXPECT_EQ(names.count("unknown"), 0u);
}

}  // namespace
}  // namespace offwake
