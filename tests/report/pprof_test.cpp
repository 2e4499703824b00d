// perf offwake report --pprof: a Profile as a gzipped profile.proto. The bytes are read back by
// a decoder of the tests' own (pprof_decoder.h) and by go tool pprof, the reference reader.
// No privileges needed.
#include "report/pprof.h"

#include <zlib.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <initializer_list>
#include <set>

#include "report/folded.h"
#include "report/gzip.h"
#include "pprof_decoder.h"
#include "report/protobuf_writer.h"
#include "support/go_pprof.h"
#include "support/run.h"

namespace offwake {
namespace {

using perfdata::Bytes;
using report::Frame;
using report::Kind;
using report::Profile;
using report::ProtoWriter;
using report::Stack;
using report::Thread;
using test::DecodedProfile;

Bytes bytes_of(std::initializer_list<int> list) {
  Bytes out;
  for (int b : list) out.push_back(static_cast<uint8_t>(b));
  return out;
}

// ---- The wire format, against the examples of the protocol buffer encoding guide.

TEST(ProtoWriter, VarintField) {
  ProtoWriter w;
  w.uint_field(1, 150);
  EXPECT_EQ(w.bytes(), bytes_of({0x08, 0x96, 0x01}));
}

TEST(ProtoWriter, ZeroScalarsAreLeftOutAsInProto3) {
  ProtoWriter w;
  w.uint_field(1, 0);
  w.int_field(2, 0);
  w.bool_field(3, false);
  w.packed_field(4, std::vector<uint64_t>{});
  EXPECT_TRUE(w.bytes().empty());
}

TEST(ProtoWriter, LargestValuesTakeTenBytes) {
  ProtoWriter w;
  w.uint_field(1, UINT64_MAX);
  w.int_field(2, -1);  // int64: two's complement, as a uint64
  w.bool_field(7, true);
  EXPECT_EQ(w.bytes(), bytes_of({0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,  //
                                 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,  //
                                 0x38, 0x01}));
  EXPECT_EQ(ProtoWriter::varint_size(127), 1u);
  EXPECT_EQ(ProtoWriter::varint_size(128), 2u);
  EXPECT_EQ(ProtoWriter::varint_size(UINT64_MAX), 10u);
}

TEST(ProtoWriter, StringsEvenEmptyOnes) {
  ProtoWriter w;
  w.string_field(2, "testing");
  w.string_field(6, "");
  EXPECT_EQ(w.bytes(), bytes_of({0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g', 0x32, 0x00}));
}

TEST(ProtoWriter, EmbeddedMessagesAndAppend) {
  ProtoWriter inner, outer, empty, tail;
  inner.uint_field(1, 150);
  outer.message_field(3, inner);
  outer.message_field(11, empty);  // present, if empty
  tail.uint_field(12, 1);
  outer.append(tail);
  EXPECT_EQ(outer.bytes(), bytes_of({0x1a, 0x03, 0x08, 0x96, 0x01, 0x5a, 0x00, 0x60, 0x01}));
}

TEST(ProtoWriter, PackedRepeatedField) {
  ProtoWriter w;
  w.packed_field(4, std::vector<uint64_t>{3, 270, 86942});
  EXPECT_EQ(w.bytes(), bytes_of({0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05}));
}

// ---- gzip

Bytes gunzip(const Bytes& gz) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  Bytes out;
  z.next_in = const_cast<Bytef*>(gz.data());
  z.avail_in = static_cast<uInt>(gz.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    const size_t used = out.size();
    out.resize(used + 65536);
    z.next_out = out.data() + used;
    z.avail_out = 65536;
    rc = inflate(&z, Z_NO_FLUSH);
    out.resize(used + 65536 - z.avail_out);
  }
  EXPECT_EQ(rc, Z_STREAM_END) << "not a complete gzip stream";
  EXPECT_EQ(z.avail_in, 0u) << "bytes after the gzip stream";
  inflateEnd(&z);
  return out;
}

TEST(Gzip, RoundTripOfMoreThanOneOutputChunk) {
  // Bytes that do not compress, so the output outgrows the writer's first buffer.
  Bytes data(3 << 20);
  uint64_t x = 88172645463325252ull;
  for (auto& b : data) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    b = static_cast<uint8_t>(x);
  }
  auto gz = report::gzip(data);
  ASSERT_TRUE(gz) << gz.error().message();
  ASSERT_GT(gz->size(), 18u);
  EXPECT_EQ((*gz)[0], 0x1f);  // gzip magic, then deflate
  EXPECT_EQ((*gz)[1], 0x8b);
  EXPECT_EQ((*gz)[2], 8);
  EXPECT_EQ(gunzip(*gz), data);
}

TEST(Gzip, EmptyInput) {
  auto gz = report::gzip({});
  ASSERT_TRUE(gz) << gz.error().message();
  EXPECT_TRUE(gunzip(*gz).empty());
}

// ---- A synthetic profile: a pipe reader woken by its parent, a thread in D without a waker
// sample, and the pipe reader again woken from an interrupt.

constexpr uint64_t kKernelBase = 0xffffffff81000000, kPipeBias = 0x555555554000, kLibcBias = 0x7ffff7c00000,
                   kOtherLibcBias = 0x7f0000000000;

Frame kernel(const std::string& name, uint64_t ip) {
  return Frame{name, "[kernel.kallsyms]", ip, ip, true};
}
Frame user(const std::string& name, const std::string& dso, uint64_t bias, uint64_t offset) {
  return Frame{name, dso, bias + offset, offset, false};
}

const Frame kPipeRead = kernel("anon_pipe_read", kKernelBase + 0x6e4063);
const Frame kVfsRead = kernel("vfs_read", kKernelBase + 0x6d5f07);
const Frame kWait = user("wl_wait_for_message", "/usr/bin/wl_pipe", kPipeBias, 0x122e);
const Frame kMain = user("main", "/usr/bin/wl_pipe", kPipeBias, 0x13ae);
const Frame kStart = user("__libc_start_call_main", "/usr/lib/x86_64-linux-gnu/libc.so.6", kLibcBias, 0x2724a);
// libc in another process, at another address: no one range for libc's mapping.
const Frame kRead = user("read", "/usr/lib/x86_64-linux-gnu/libc.so.6", kOtherLibcBias, 0x11d7a1);
const Frame kUnknown{"[unknown]", "[unknown]", 0x1234, 0, false};
const Frame kWakeUp = kernel("try_to_wake_up", kKernelBase + 0x3b4986);
const Frame kSend = user("wl_send_message", "/usr/bin/wl_pipe", kPipeBias, 0x12a7);

perfdata::BuildId build_id(uint8_t first) {
  perfdata::BuildId id;
  for (size_t i = 0; i < 20; ++i) id.bytes[i] = static_cast<uint8_t>(first + i);
  id.size = 20;
  return id;
}

Profile pipe_profile() {
  Profile p;
  Stack piped;
  piped.thread = Thread{"wl_pipe", 101, 101};
  piped.frames = {kPipeRead, kVfsRead, kWait, kMain, kStart};
  piped.state = "S";
  piped.waker = Thread{"wl_pipe", 100, 100};
  piped.waker_frames = {kWakeUp, kSend, kMain};
  piped.waker_context = "thread";
  piped.ns = 201481763;
  piped.count = 10;
  piped.max_ns = 20500000;

  Stack disk;
  disk.thread = Thread{"worker", 200, 202};
  disk.frames = {kVfsRead, kRead, kUnknown};
  disk.state = "D";
  disk.ns = 5000;
  disk.count = 1;
  disk.max_ns = 5000;

  Stack irq;
  irq.thread = Thread{"wl_pipe", 101, 101};
  irq.frames = {kPipeRead, kWait};
  irq.state = "S";
  irq.waker = Thread{"[hardirq]", 0x7ffffff0, 0x7ffffff0};
  irq.waker_frames = {kWakeUp};
  irq.waker_context = "hardirq";
  irq.ns = 3000000;
  irq.count = 2;
  irq.max_ns = 1500000;

  p.stacks = {piped, disk, irq};
  p.off_cpu_ns = piped.ns + disk.ns + irq.ns;
  p.blocks = 13;
  p.info.host.cmdline = {"perf-offwake", "record", "--", "wl_pipe"};
  p.info.host.hostname = "box";
  p.info.host.os_release = "6.18.0";
  p.info.first_sample_time = 1000000000;
  p.info.last_sample_time = 3500000000;
  p.info.build_ids.push_back({-1, 0, build_id(0x01), "[kernel.kallsyms]"});
  p.info.build_ids.push_back({-1, 0, build_id(0xa0), "/usr/bin/wl_pipe"});
  return p;
}

// The same with an on-CPU stack (perf offwake record --on-cpu).
Profile wallclock_profile() {
  Profile p = pipe_profile();
  Stack spin;
  spin.kind = Kind::kOnCpu;
  spin.thread = Thread{"wl_pipe", 100, 100};
  spin.frames = {kSend, kMain};
  spin.ns = 4000000;
  spin.count = 4;
  p.stacks.push_back(spin);
  p.on_cpu_event = "cpu-clock";
  p.on_cpu_ns = 4000000;
  p.on_cpu_samples = 4;
  return p;
}

DecodedProfile decode(const Profile& p) {
  const Bytes proto = report::encode_pprof_proto(p);
  auto d = test::decode_profile(proto);
  EXPECT_TRUE(d) << d.error().message();
  return d ? std::move(d).value() : DecodedProfile{};
}

std::map<std::string, std::string> labels_of(const test::DecodedSample& s) {
  std::map<std::string, std::string> out;
  for (const auto& l : s.labels) {
    EXPECT_FALSE(out.count(l.key)) << "label " << l.key << " twice";
    out[l.key] = l.str.empty() ? std::to_string(l.num) : l.str;
  }
  return out;
}

using Labels = std::map<std::string, std::string>;
using Names = std::vector<std::string>;

TEST(PprofEncoder, HeaderSampleTypesAndTimes) {
  DecodedProfile d = decode(pipe_profile());
  ASSERT_FALSE(d.strings.empty());
  EXPECT_EQ(d.strings[0], "");
  using VT = std::pair<std::string, std::string>;
  EXPECT_EQ(d.sample_types, (std::vector<VT>{{"off_cpu", "nanoseconds"}, {"blocks", "count"}}));
  EXPECT_EQ(d.default_sample_type, "off_cpu");
  EXPECT_TRUE(d.has_period_type);
  EXPECT_EQ(d.period_type, VT("off_cpu", "nanoseconds"));
  EXPECT_EQ(d.period, 1);
  EXPECT_EQ(d.duration_nanos, 2500000000);
  EXPECT_EQ(d.time_nanos, 0) << "CLOCK_MONOTONIC is not a wall clock time";
  EXPECT_EQ(d.comments, (Names{"perf-offwake record -- wl_pipe", "host box (Linux 6.18.0)"}));
}

TEST(PprofEncoder, DurationIsTheRecordingsWhenItSaysSo) {
  Profile p = pipe_profile();
  p.counters = {{"aggregates", 3}, {"duration_ns", 4000000123}, {"blocks", 13}};
  EXPECT_EQ(decode(p).duration_nanos, 4000000123) << "perf offwake record's duration_ns counter";
  p.counters.clear();
  p.info.first_sample_time = p.info.last_sample_time = 0;
  EXPECT_EQ(decode(p).duration_nanos, 0);
}

TEST(PprofEncoder, OneSamplePerStackWithValuesStackAndLabels) {
  DecodedProfile d = decode(pipe_profile());
  ASSERT_EQ(d.samples.size(), 3u);

  // Leaf first: the waker's comm, its stack root first, "--", the blocked stack leaf first, and
  // the blocked thread's comm at the root (the --folded line, reversed).
  const auto& piped = d.samples[0];
  EXPECT_EQ(piped.values, (std::vector<int64_t>{201481763, 10}));
  EXPECT_EQ(d.function_names(piped), (Names{"wl_pipe", "main", "wl_send_message", "try_to_wake_up", "--",
                                            "anon_pipe_read", "vfs_read", "wl_wait_for_message", "main",
                                            "__libc_start_call_main", "wl_pipe"}));
  EXPECT_EQ(labels_of(piped), (Labels{{"comm", "wl_pipe"},
                                      {"pid", "101"},
                                      {"tid", "101"},
                                      {"state", "S"},
                                      {"waker_comm", "wl_pipe"},
                                      {"waker_tid", "100"},
                                      {"waker_context", "thread"}}));
  for (const auto& l : piped.labels) EXPECT_EQ(l.num_unit, "") << l.key;

  // No waker sample: no waker labels, and "[unknown waker]" above the separator.
  const auto& disk = d.samples[1];
  EXPECT_EQ(disk.values, (std::vector<int64_t>{5000, 1}));
  EXPECT_EQ(d.function_names(disk), (Names{"[unknown waker]", "--", "vfs_read", "read", "[unknown]", "worker"}));
  EXPECT_EQ(labels_of(disk), (Labels{{"comm", "worker"}, {"pid", "200"}, {"tid", "202"}, {"state", "D"}}));

  // A pseudo-thread waker is named, its made-up tid is not given.
  const auto& irq = d.samples[2];
  EXPECT_EQ(irq.values, (std::vector<int64_t>{3000000, 2}));
  EXPECT_EQ(d.function_names(irq),
            (Names{"[hardirq]", "try_to_wake_up", "--", "anon_pipe_read", "wl_wait_for_message", "wl_pipe"}));
  EXPECT_EQ(labels_of(irq), (Labels{{"comm", "wl_pipe"},
                                    {"pid", "101"},
                                    {"tid", "101"},
                                    {"state", "S"},
                                    {"waker_comm", "[hardirq]"},
                                    {"waker_context", "hardirq"}}));
}

// A waker named without its stacks (woken before the block reached its threshold) says so in a
// label; the others have none (above).
TEST(PprofEncoder, WakerStacksNotTakenIsALabel) {
  Profile p = pipe_profile();
  Stack& irq = p.stacks[2];
  irq.waker = Thread{"[softirq]", 0x7ffffff1, 0x7ffffff1};
  irq.waker_frames.clear();
  irq.waker_context = "softirq";
  irq.waker_stacks_not_taken = true;
  DecodedProfile d = decode(p);
  ASSERT_EQ(d.samples.size(), 3u);
  // Where its stacks would be, the name --folded and --svg have there too.
  EXPECT_EQ(d.function_names(d.samples[2]), (Names{"[softirq]", "[stacks not taken: woken early]", "--",
                                                   "anon_pipe_read", "wl_wait_for_message", "wl_pipe"}));
  EXPECT_EQ(labels_of(d.samples[2]), (Labels{{"comm", "wl_pipe"},
                                             {"pid", "101"},
                                             {"tid", "101"},
                                             {"state", "S"},
                                             {"waker_comm", "[softirq]"},
                                             {"waker_context", "softirq"},
                                             {"waker_stacks", "not taken (woken early)"}}));
}

// A comm is any bytes; a proto3 string must be UTF-8: what is not becomes U+FFFD, and the
// folded line of the same stack stays one line.
TEST(PprofEncoder, NamesThatAreNoUtf8BecomeReplacementCharacters) {
  Profile p = pipe_profile();
  p.stacks[0].thread.comm = "a\nb\xff\xfe";
  DecodedProfile d = decode(p);
  for (const std::string& s : d.strings) EXPECT_EQ(s.find('\xff'), std::string::npos) << s;
  ASSERT_NE(d.samples[0].label("comm"), nullptr);
  EXPECT_EQ(d.samples[0].label("comm")->str, "a\nb\xEF\xBF\xBD\xEF\xBF\xBD");
  const auto lines = report::folded_lines(p, {});
  ASSERT_EQ(lines.size(), p.stacks.size());
  EXPECT_EQ(lines[0].rfind("a_b\xEF\xBF\xBD\xEF\xBF\xBD;", 0), 0u) << lines[0];
  for (const std::string& l : lines) EXPECT_EQ(l.find('\n'), l.size() - 1) << l;
}

// A wakeup chain (perf offwake record --chain-depth): every hop's stacks in the locations, as
// --folded draws them (a "--" between every two stacks, the last waker's comm at the leaf), and
// labels; a stack of a recording without chains has none of the labels (above).
TEST(PprofEncoder, WakeupChainsAreLocationsAndLabels) {
  Profile p = pipe_profile();
  Stack& piped = p.stacks[0];
  report::Hop hop;
  hop.thread = *piped.waker;
  hop.frames = {kVfsRead, kMain};
  hop.state = "D";
  hop.waker = Thread{"[hardirq]", 0x7ffffff0, 0x7ffffff0};
  hop.waker_frames = {kWakeUp};
  hop.waker_context = "hardirq";
  piped.chain = {hop};
  piped.chain_end = "interrupt";
  DecodedProfile d = decode(p);
  ASSERT_EQ(d.samples.size(), 3u);
  EXPECT_EQ(d.function_names(d.samples[0]),
            (Names{"[hardirq]", "try_to_wake_up", "--",                   // hop 2's waker
                   "vfs_read", "main", "--",                              // hop 2: the waker's block
                   "main", "wl_send_message", "try_to_wake_up", "--",     // hop 1: the waker
                   "anon_pipe_read", "vfs_read", "wl_wait_for_message", "main", "__libc_start_call_main",
                   "wl_pipe"}));
  EXPECT_EQ(labels_of(d.samples[0]), (Labels{{"comm", "wl_pipe"},
                                             {"pid", "101"},
                                             {"tid", "101"},
                                             {"state", "S"},
                                             {"waker_comm", "wl_pipe"},
                                             {"waker_tid", "100"},
                                             {"waker_context", "thread"},
                                             {"chain_hops", "2"},
                                             {"hop2_waker_comm", "[hardirq]"},
                                             {"chain_end", "interrupt"}}));
}

// A chain of three hops whose last waker sample the recording does not have.
Stack cut_short_chain() {
  Stack s = pipe_profile().stacks[0];
  report::Hop second;
  second.thread = *s.waker;
  second.frames = {kVfsRead, kMain};
  second.state = "S";
  second.waker = Thread{"relay", 300, 301};
  second.waker_frames = {kWakeUp, kSend};
  second.waker_context = "thread";
  report::Hop third;
  third.thread = *second.waker;
  third.frames = {kPipeRead, kWait};
  third.state = "S";
  s.chain = {second, third};
  s.chain_end = report::kChainCutShort;
  s.ns = 7000;
  s.count = 1;
  return s;
}

TEST(PprofEncoder, AChainCutShortEndsInAnUnknownWaker) {
  Profile p;
  p.stacks = {cut_short_chain()};
  DecodedProfile d = decode(p);
  ASSERT_EQ(d.samples.size(), 1u);
  EXPECT_EQ(d.function_names(d.samples[0]),
            (Names{"[unknown waker]", "--",                                                    // hop 3's waker
                   "anon_pipe_read", "wl_wait_for_message", "--",                              // hop 3
                   "wl_send_message", "try_to_wake_up", "--",                                  // hop 2's waker
                   "vfs_read", "main", "--",                                                   // hop 2
                   "main", "wl_send_message", "try_to_wake_up", "--",                          // hop 1
                   "anon_pipe_read", "vfs_read", "wl_wait_for_message", "main", "__libc_start_call_main",
                   "wl_pipe"}));
  EXPECT_EQ(labels_of(d.samples[0]).at("hop3_waker_comm"), "[unknown waker]");
  EXPECT_EQ(labels_of(d.samples[0]).at("chain_end"), "cut-short");
}

// One model, many views: a sample's locations are the names of its stack's --folded line
// (which the flame graph draws bottom up), leaf first, for every kind of stack.
TEST(PprofEncoder, LocationsAreTheFoldedLineReversed) {
  Profile p = wallclock_profile();
  p.stacks.push_back(cut_short_chain());
  DecodedProfile d = decode(p);
  ASSERT_EQ(d.samples.size(), p.stacks.size());
  for (size_t i = 0; i < p.stacks.size(); ++i) {
    SCOPED_TRACE(i);
    Names path = report::offwake_path(p.stacks[i]);
    std::reverse(path.begin(), path.end());
    EXPECT_EQ(d.function_names(d.samples[i]), path);
  }
}

// perf offwake report --no-waker: the blocked stack and its comm, no separator, as --svg.
TEST(PprofEncoder, WithoutWakersTheBlockedStackAndItsComm) {
  Profile p = pipe_profile();
  for (Stack& s : p.stacks) {
    s.waker.reset();
    s.waker_frames.clear();
    s.waker_context.clear();
  }
  p.wakers_dropped = true;
  DecodedProfile d = decode(p);
  ASSERT_EQ(d.samples.size(), 3u);
  EXPECT_EQ(d.function_names(d.samples[0]),
            (Names{"anon_pipe_read", "vfs_read", "wl_wait_for_message", "main", "__libc_start_call_main", "wl_pipe"}));
  EXPECT_EQ(d.function_names(d.samples[1]), (Names{"vfs_read", "read", "[unknown]", "worker"}));
  EXPECT_EQ(labels_of(d.samples[0]).count("waker_comm"), 0u);
}

TEST(PprofEncoder, OneLocationAndFunctionPerDistinctFrame) {
  DecodedProfile d = decode(pipe_profile());
  ASSERT_EQ(d.samples.size(), 3u);
  // The same frame in two stacks, or twice in one (a blocked and a waker stack), is the same
  // location; so is a name that is no frame ("--", a comm).
  const auto& piped = d.samples[0].location_ids;
  const auto& disk = d.samples[1].location_ids;
  const auto& irq = d.samples[2].location_ids;
  ASSERT_EQ(piped.size(), 11u);
  ASSERT_EQ(disk.size(), 6u);
  ASSERT_EQ(irq.size(), 6u);
  EXPECT_EQ(piped[5], irq[3]);   // anon_pipe_read
  EXPECT_EQ(piped[7], irq[4]);   // wl_wait_for_message
  EXPECT_EQ(piped[6], disk[2]);  // vfs_read
  EXPECT_EQ(piped[1], piped[8]);  // main, in the waker's stack and in the blocked one
  EXPECT_EQ(piped[3], irq[1]);   // try_to_wake_up
  EXPECT_EQ(piped[4], disk[1]);  // --
  EXPECT_EQ(piped[4], irq[2]);
  EXPECT_EQ(piped[0], piped[10]);  // wl_pipe, the waker's comm and the blocked thread's
  EXPECT_EQ(piped[10], irq[5]);
  const std::vector<Frame> frames = {kPipeRead, kVfsRead, kWait, kMain, kStart, kRead, kUnknown, kWakeUp, kSend};
  const Names markers = {"wl_pipe", "worker", "--", "[unknown waker]", "[hardirq]"};
  ASSERT_EQ(d.locations.size(), frames.size() + markers.size());
  ASSERT_EQ(d.functions.size(), frames.size() + markers.size());
  for (const Frame& f : frames) {
    SCOPED_TRACE(f.name);
    auto loc = std::find_if(d.locations.begin(), d.locations.end(), [&](const auto& l) {
      return l.function_ids.size() == 1 && d.function(l.function_ids[0])->name == f.name;
    });
    ASSERT_NE(loc, d.locations.end());
    EXPECT_EQ(loc->address, f.ip);
    const auto* fn = d.function(loc->function_ids[0]);
    EXPECT_EQ(fn->system_name, f.name);
    EXPECT_EQ(fn->start_line, 0);
    if (f.dso == "[unknown]") {
      EXPECT_EQ(loc->mapping_id, 0u) << "no mapping for a frame outside every mapping";
      EXPECT_EQ(fn->filename, "");
    } else {
      ASSERT_NE(d.mapping(loc->mapping_id), nullptr);
      EXPECT_EQ(d.mapping(loc->mapping_id)->filename, f.dso);
      EXPECT_EQ(fn->filename, f.dso);
    }
  }
  // The names that are no frames have a function, but no mapping, address nor file.
  for (const std::string& name : markers) {
    SCOPED_TRACE(name);
    auto loc = std::find_if(d.locations.begin(), d.locations.end(), [&](const auto& l) {
      return l.function_ids.size() == 1 && d.function(l.function_ids[0])->name == name;
    });
    ASSERT_NE(loc, d.locations.end());
    EXPECT_EQ(loc->mapping_id, 0u);
    EXPECT_EQ(loc->address, 0u);
    EXPECT_EQ(d.function(loc->function_ids[0])->system_name, name);
    EXPECT_EQ(d.function(loc->function_ids[0])->filename, "");
  }
}

// A system-wide recording: mapping 1, pprof's "File:", is the executable whose stacks waited
// most, not the one the first stack used (here a daemon that waited 1 ms, before wl_pipe).
TEST(PprofEncoder, MainBinaryIsTheExecutableThatWaitedMost) {
  Profile p = pipe_profile();
  Stack agent;
  agent.thread = Thread{"agent", 300, 300};
  agent.frames = {kPipeRead, user("agent_poll", "/usr/sbin/agent", 0x560000000000, 0x4000)};
  agent.state = "S";
  agent.ns = 1000000;
  agent.count = 1;
  agent.max_ns = 1000000;
  p.stacks.insert(p.stacks.begin(), agent);
  p.off_cpu_ns += agent.ns;
  DecodedProfile d = decode(p);
  ASSERT_EQ(d.mappings.size(), 4u);
  EXPECT_EQ(d.mappings[0].filename, "/usr/bin/wl_pipe");
  EXPECT_EQ(d.mappings[1].filename, "/usr/sbin/agent");
  EXPECT_EQ(d.mappings[2].filename, "/usr/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ(d.mappings[3].filename, "[kernel.kallsyms]");

  // Waiting longest, the agent comes first.
  p.stacks[0].ns = 10 * p.off_cpu_ns;
  d = decode(p);
  ASSERT_EQ(d.mappings.size(), 4u);
  EXPECT_EQ(d.mappings[0].filename, "/usr/sbin/agent");
  EXPECT_EQ(d.mappings[1].filename, "/usr/bin/wl_pipe");
}

// Code in a memfd or a deleted file (a JIT's; runc's sealed copy of itself, which waits long
// in a system-wide recording) is no program's binary: after the executables and libraries.
TEST(PprofEncoder, MemfdsAndDeletedFilesAreNoMainBinary) {
  Profile p = pipe_profile();
  for (const char* file : {"memfd:sealed-91173221a7ea (deleted)", "/usr/bin/updated (deleted)"}) {
    Stack jit;
    jit.thread = Thread{"runc", 400, 400};
    jit.frames = {kPipeRead, user("runc_wait", file, 0x7f0000000000, 0x1000)};
    jit.state = "S";
    jit.ns = 10 * p.off_cpu_ns;
    jit.count = 1;
    jit.max_ns = jit.ns;
    p.stacks.insert(p.stacks.begin(), jit);
  }
  DecodedProfile d = decode(p);
  ASSERT_EQ(d.mappings.size(), 5u);
  EXPECT_EQ(d.mappings[0].filename, "/usr/bin/wl_pipe");
  EXPECT_EQ(d.mappings[1].filename, "/usr/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ(d.mappings[4].filename, "[kernel.kallsyms]");
  std::set<std::string> no_file = {d.mappings[2].filename, d.mappings[3].filename};
  EXPECT_EQ(no_file, (std::set<std::string>{"memfd:sealed-91173221a7ea (deleted)", "/usr/bin/updated (deleted)"}));
}

TEST(PprofEncoder, OneMappingPerDsoWithBuildIdAndRange) {
  DecodedProfile d = decode(pipe_profile());
  ASSERT_EQ(d.mappings.size(), 3u);
  // pprof shows mapping 1 as the profile's binary: the executable, then libraries, the kernel last.
  EXPECT_EQ(d.mappings[0].id, 1u);
  EXPECT_EQ(d.mappings[0].filename, "/usr/bin/wl_pipe");
  EXPECT_EQ(d.mappings[1].filename, "/usr/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ(d.mappings[2].filename, "[kernel.kallsyms]");
  std::map<std::string, test::DecodedMapping> by_file;
  for (const auto& m : d.mappings) by_file[m.filename] = m;
  ASSERT_EQ(by_file.size(), 3u);
  for (const auto& m : d.mappings) EXPECT_TRUE(m.has_functions) << m.filename << ": pprof would symbolize again";

  const auto& k = by_file["[kernel.kallsyms]"];
  EXPECT_EQ(k.build_id, "0102030405060708090a0b0c0d0e0f1011121314");
  EXPECT_EQ(k.memory_start, kWakeUp.ip) << "waker frames are locations of the mapping too";
  EXPECT_EQ(k.memory_limit, kPipeRead.ip + 1);
  EXPECT_EQ(k.file_offset, 0u);

  // One process, one load address: the range, and the file offset at its start.
  const auto& exe = by_file["/usr/bin/wl_pipe"];
  EXPECT_EQ(exe.build_id, "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3");
  EXPECT_EQ(exe.memory_start, kWait.ip);
  EXPECT_EQ(exe.memory_limit, kMain.ip + 1);
  EXPECT_EQ(exe.file_offset, kWait.dso_addr);

  // Two load addresses (two processes): no one range, so none is claimed; no build id known.
  const auto& libc = by_file["/usr/lib/x86_64-linux-gnu/libc.so.6"];
  EXPECT_EQ(libc.build_id, "");
  EXPECT_EQ(libc.memory_start, 0u);
  EXPECT_EQ(libc.memory_limit, 0u);
  EXPECT_EQ(libc.file_offset, 0u);
}

TEST(PprofEncoder, OnCpuStacksAddACpuSampleType) {
  DecodedProfile d = decode(wallclock_profile());
  using VT = std::pair<std::string, std::string>;
  EXPECT_EQ(d.sample_types,
            (std::vector<VT>{{"off_cpu", "nanoseconds"}, {"blocks", "count"}, {"cpu", "nanoseconds"}}));
  EXPECT_EQ(d.default_sample_type, "off_cpu");
  ASSERT_EQ(d.samples.size(), 4u);
  EXPECT_EQ(d.samples[0].values, (std::vector<int64_t>{201481763, 10, 0}));
  const auto& spin = d.samples[3];
  EXPECT_EQ(spin.values, (std::vector<int64_t>{0, 0, 4000000}));
  EXPECT_EQ(d.function_names(spin), (Names{"wl_send_message", "main", "wl_pipe"})) << "no waker, the comm at the root";
  EXPECT_EQ(labels_of(spin), (Labels{{"comm", "wl_pipe"}, {"pid", "100"}, {"tid", "100"}}));
}

TEST(PprofEncoder, EmptyProfileIsStillAProfile) {
  DecodedProfile d = decode(Profile{});
  EXPECT_EQ(d.sample_types.size(), 2u);
  EXPECT_TRUE(d.samples.empty());
  EXPECT_TRUE(d.locations.empty());
  EXPECT_TRUE(d.mappings.empty());
  EXPECT_EQ(d.duration_nanos, 0);
  EXPECT_TRUE(d.comments.empty());
}

TEST(PprofEncoder, DeterministicAndGzipped) {
  const Profile p = wallclock_profile();
  const Bytes proto = report::encode_pprof_proto(p);
  EXPECT_EQ(report::encode_pprof_proto(wallclock_profile()), proto);
  auto gz = report::encode_pprof(p);
  ASSERT_TRUE(gz) << gz.error().message();
  auto again = report::encode_pprof(p);
  ASSERT_TRUE(again);
  EXPECT_EQ(*gz, *again);
  EXPECT_EQ(gunzip(*gz), proto);
}

// ---- go tool pprof, the reference reader, on the gzipped file.

class GoToolPprof : public ::testing::Test {
 protected:
  // Writes the profile as perf offwake report --pprof does, and returns the file's path.
  std::string write(const Profile& p) {
    auto gz = report::encode_pprof(p);
    EXPECT_TRUE(gz) << gz.error().message();
    const std::string path = dir_.file("profile.pb.gz");
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(gz->data()),
                                                static_cast<std::streamsize>(gz->size()));
    return path;
  }

  test::PprofRaw raw(const std::string& path) {
    auto r = test::go_pprof("-raw " + path);
    EXPECT_EQ(r.status, 0) << r.err;
    std::string error;
    test::PprofRaw p = test::parse_pprof_raw(r.out, &error);
    EXPECT_EQ(error, "") << r.out;
    return p;
  }

  test::PprofTop top(const std::string& args) {
    auto r = test::go_pprof("-top " + args);
    EXPECT_EQ(r.status, 0) << r.err;
    return test::parse_pprof_top(r.out);
  }

  test::TempDir dir_;
};

const test::PprofRawSample* sample_with(const test::PprofRaw& p, int64_t off_cpu_ns) {
  for (const auto& s : p.samples)
    if (!s.values.empty() && s.values[0] == off_cpu_ns) return &s;
  return nullptr;
}

TEST_F(GoToolPprof, RawHasEveryStackWithItsValuesAndLabels) {
  const test::PprofRaw p = raw(write(pipe_profile()));
  EXPECT_EQ(p.sample_types, (Names{"off_cpu/nanoseconds[dflt]", "blocks/count"}));
  EXPECT_EQ(p.period_type, "off_cpu nanoseconds");
  EXPECT_EQ(p.period, 1);
  EXPECT_EQ(p.comments, (Names{"perf-offwake record -- wl_pipe", "host box (Linux 6.18.0)"}));
  ASSERT_EQ(p.samples.size(), 3u);
  EXPECT_EQ(p.total(0), 201481763 + 5000 + 3000000);
  EXPECT_EQ(p.total(1), 13);

  const auto* piped = sample_with(p, 201481763);
  ASSERT_NE(piped, nullptr);
  EXPECT_EQ(piped->values[1], 10);
  EXPECT_EQ(piped->functions, (Names{"wl_pipe", "main", "wl_send_message", "try_to_wake_up", "--",
                                     "anon_pipe_read", "vfs_read", "wl_wait_for_message", "main",
                                     "__libc_start_call_main", "wl_pipe"}));
  EXPECT_EQ(piped->labels, (Labels{{"comm", "wl_pipe"},
                                   {"pid", "101"},
                                   {"tid", "101"},
                                   {"state", "S"},
                                   {"waker_comm", "wl_pipe"},
                                   {"waker_tid", "100"},
                                   {"waker_context", "thread"}}));
  const auto* disk = sample_with(p, 5000);
  ASSERT_NE(disk, nullptr);
  EXPECT_EQ(disk->functions, (Names{"[unknown waker]", "--", "vfs_read", "read", "[unknown]", "worker"}));
  EXPECT_EQ(disk->labels, (Labels{{"comm", "worker"}, {"pid", "200"}, {"tid", "202"}, {"state", "D"}}));
  const auto* irq = sample_with(p, 3000000);
  ASSERT_NE(irq, nullptr);
  EXPECT_EQ(irq->label("waker_comm"), "[hardirq]");
  EXPECT_EQ(irq->label("waker_tid"), "");

  // "ID: start/limit/offset file build-id [FN]" ([FN]: symbolized). pprof numbers the
  // mappings again as it reads them, the main binary first.
  ASSERT_EQ(p.mappings.size(), 3u);
  EXPECT_EQ(p.mappings[0], "1: 0x55555555522e/0x5555555553af/0x122e /usr/bin/wl_pipe "
                           "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3 [FN]");
  auto mapping_of = [&](const std::string& file) {
    for (const auto& m : p.mappings)
      if (m.find(" " + file + " ") != std::string::npos) return m.substr(m.find(' ') + 1);
    return std::string("no mapping of ") + file;
  };
  EXPECT_EQ(mapping_of("[kernel.kallsyms]"),
            "0xffffffff813b4986/0xffffffff816e4064/0x0 [kernel.kallsyms] 0102030405060708090a0b0c0d0e0f1011121314 [FN]");
  EXPECT_EQ(mapping_of("/usr/lib/x86_64-linux-gnu/libc.so.6"),
            "0x0/0x0/0x0 /usr/lib/x86_64-linux-gnu/libc.so.6  [FN]");
}

TEST_F(GoToolPprof, TopTotalsInNanosecondsAndBlocks) {
  const std::string path = write(pipe_profile());
  // off_cpu is the default sample type; -nodefraction=0 keeps the small nodes.
  const test::PprofTop ns = top("-unit=ns -nodefraction=0 " + path);
  EXPECT_EQ(ns.file, "wl_pipe");
  EXPECT_EQ(ns.type, "off_cpu");
  EXPECT_EQ(ns.total, "204486763ns");
  // 9 frames, 2 comms, "--", "[unknown waker]", "[hardirq]".
  ASSERT_EQ(ns.rows.size(), 14u);
  // The leaf of every off-CPU sample is its last waker's comm: flat is time by waker.
  EXPECT_EQ(ns.rows.at("wl_pipe").flat, "201481763ns");
  EXPECT_EQ(ns.rows.at("[hardirq]").flat, "3000000ns");
  EXPECT_EQ(ns.rows.at("[unknown waker]").flat, "5000ns");
  EXPECT_EQ(ns.rows.at("anon_pipe_read").flat, "0");
  EXPECT_EQ(ns.rows.at("wl_wait_for_message").cum, "204481763ns");
  EXPECT_EQ(ns.rows.at("vfs_read").cum, "201486763ns");
  EXPECT_EQ(ns.rows.at("[unknown]").cum, "5000ns");
  EXPECT_EQ(ns.rows.at("--").cum, "204486763ns");
  EXPECT_EQ(ns.rows.at("wl_pipe").cum, "204481763ns") << "the comm of two stacks, once per sample";
  EXPECT_EQ(ns.rows.at("main").cum, "201481763ns") << "twice in one sample, counted once";
  EXPECT_EQ(ns.rows.at("wl_send_message").cum, "201481763ns");
  EXPECT_EQ(ns.rows.at("try_to_wake_up").cum, "204481763ns");

  const test::PprofTop blocks = top("-sample_index=blocks -nodefraction=0 " + path);
  EXPECT_EQ(blocks.type, "blocks");
  EXPECT_EQ(blocks.total, "13");
  EXPECT_EQ(blocks.rows.at("wl_wait_for_message").cum, "12");
  EXPECT_EQ(blocks.rows.at("read").cum, "1");
  EXPECT_EQ(blocks.rows.at("wl_send_message").cum, "10");
}

// -traces prints each sample leaf first, so it reads as --svg draws: the waker's comm on top,
// its stack, "--", the blocked stack, and the blocked thread's comm at the bottom.
TEST_F(GoToolPprof, TracesShowTheWakerAboveTheSeparatorAboveTheBlockedStack) {
  const std::string path = write(pipe_profile());
  auto r = test::go_pprof("-traces -unit=ns " + path);
  ASSERT_EQ(r.status, 0) << r.err;
  std::string error;
  const test::PprofTraces t = test::parse_pprof_traces(r.out, &error);
  EXPECT_EQ(error, "") << r.out;
  EXPECT_EQ(t.type, "off_cpu");
  ASSERT_EQ(t.traces.size(), 3u) << r.out;
  std::map<std::string, const test::PprofTrace*> by_value;
  for (const auto& trace : t.traces) by_value[trace.value] = &trace;
  ASSERT_TRUE(by_value.count("201481763ns")) << r.out;
  const test::PprofTrace& piped = *by_value["201481763ns"];
  EXPECT_EQ(piped.functions, (Names{"wl_pipe", "main", "wl_send_message", "try_to_wake_up", "--",
                                    "anon_pipe_read", "vfs_read", "wl_wait_for_message", "main",
                                    "__libc_start_call_main", "wl_pipe"}))
      << r.out;
  EXPECT_EQ(piped.label("waker_comm"), "wl_pipe");
  EXPECT_EQ(piped.label("waker_tid"), "100");
  EXPECT_EQ(piped.label("tid"), "101");
  ASSERT_TRUE(by_value.count("5000ns")) << r.out;
  EXPECT_EQ(by_value["5000ns"]->functions, (Names{"[unknown waker]", "--", "vfs_read", "read", "[unknown]", "worker"}));
  ASSERT_TRUE(by_value.count("3000000ns")) << r.out;
  EXPECT_EQ(by_value["3000000ns"]->functions,
            (Names{"[hardirq]", "try_to_wake_up", "--", "anon_pipe_read", "wl_wait_for_message", "wl_pipe"}));

  auto blocks = test::go_pprof("-traces -sample_index=blocks " + path);
  ASSERT_EQ(blocks.status, 0) << blocks.err;
  const test::PprofTraces b = test::parse_pprof_traces(blocks.out, &error);
  EXPECT_EQ(error, "") << blocks.out;
  Names values;
  for (const auto& trace : b.traces) values.push_back(trace.value);
  std::sort(values.begin(), values.end());
  EXPECT_EQ(values, (Names{"1", "10", "2"})) << blocks.out;
}

TEST_F(GoToolPprof, LabelsSelectByWaker) {
  const std::string path = write(pipe_profile());
  const test::PprofTop irq = top("-unit=ns -tagfocus=waker_context=hardirq " + path);
  EXPECT_EQ(irq.rows.at("wl_wait_for_message").cum, "3000000ns");
  EXPECT_FALSE(irq.rows.count("vfs_read"));

  auto tags = test::go_pprof("-tags -tagfocus=waker_comm=wl_pipe " + path);
  ASSERT_EQ(tags.status, 0) << tags.err;
  EXPECT_NE(tags.out.find(" waker_tid: Total 201.5ms"), std::string::npos) << tags.out;
  EXPECT_NE(tags.out.find("(  100%): 100\n"), std::string::npos) << tags.out;
}

TEST_F(GoToolPprof, OnCpuIsASampleTypeOfItsOwn) {
  const std::string path = write(wallclock_profile());
  const test::PprofRaw p = raw(path);
  EXPECT_EQ(p.sample_types, (Names{"off_cpu/nanoseconds[dflt]", "blocks/count", "cpu/nanoseconds"}));
  EXPECT_EQ(p.total(2), 4000000);
  const test::PprofTop cpu = top("-sample_index=cpu -unit=ns " + path);
  EXPECT_EQ(cpu.type, "cpu");
  EXPECT_EQ(cpu.total, "4000000ns");
  EXPECT_EQ(cpu.rows.at("wl_send_message").flat, "4000000ns");
  EXPECT_EQ(cpu.rows.at("wl_pipe").cum, "4000000ns");
  EXPECT_FALSE(cpu.rows.count("anon_pipe_read"));
  EXPECT_FALSE(cpu.rows.count("--"));
}

}  // namespace
}  // namespace offwake
