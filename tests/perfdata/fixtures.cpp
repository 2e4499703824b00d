#include "fixtures.h"

#include <gtest/gtest.h>

#include "perfdata/format.h"
#include "perfdata/reader.h"

namespace offwake::perfdata::test {

HostInfo fixed_host() {
  HostInfo h;
  h.hostname = "golden-host";
  h.os_release = "6.12.0-test";
  h.version = "0.1.0";
  h.arch = "x86_64";
  h.cpu_desc = "Test CPU @ 1.00GHz";
  h.cpu_id = "GenuineTest,6,1,2";
  h.nr_cpus_available = 4;
  h.nr_cpus_online = 2;
  h.total_mem_kb = 1024 * 1024;
  h.cmdline = {"perf", "offwake", "record", "-o", "-"};
  return h;
}

static perf_event_attr base_attr() {
  perf_event_attr a{};
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_DUMMY;
  a.size = sizeof(perf_event_attr);
  a.sample_period = 1;
  a.sample_id_all = 1;
  a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                  PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;
  return a;
}

std::vector<EventDesc> two_events() {
  EventDesc offcpu{base_attr(), "offwake:offcpu", {kOffcpuIds[0], kOffcpuIds[1]}};
  EventDesc wakeup{base_attr(), "offwake:wakeup", {kWakeupId}};
  wakeup.attr.config = 1;
  wakeup.attr.sample_type |= PERF_SAMPLE_RAW;
  return {offcpu, wakeup};
}

std::vector<EventDesc> one_event() {
  perf_event_attr a{};
  a.type = PERF_TYPE_SOFTWARE;
  a.size = sizeof(perf_event_attr);
  a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_PERIOD;
  return {EventDesc{a, "cpu-clock", {}}};
}

static SampleId sid(uint32_t pid, uint64_t time, uint64_t id) {
  SampleId s;
  s.pid = pid;
  s.tid = pid + 1;
  s.time = time;
  s.id = id;
  s.cpu = 1;
  return s;
}

std::vector<Record> every_record() {
  std::vector<Record> out;
  CommRecord comm{1000, 1001, "worker", true, sid(1000, 5, kOffcpuIds[0])};
  out.push_back(comm);

  Mmap2Record exe;
  exe.pid = exe.tid = 1000;
  exe.start = 0x400000;
  exe.len = 0x1000;
  exe.pgoff = 0;
  exe.build_id.size = 20;
  for (int i = 0; i < 20; ++i) exe.build_id.bytes[i] = static_cast<uint8_t>(0xa0 + i);
  exe.prot = 5;
  exe.flags = 2;
  exe.filename = "/usr/bin/worker";
  exe.sample_id = sid(1000, 6, kOffcpuIds[0]);
  out.push_back(exe);

  Mmap2Record lib;
  lib.pid = lib.tid = 1000;
  lib.start = 0x7f0000000000;
  lib.len = 0x20000;
  lib.pgoff = 0x1000;
  lib.maj = 8;
  lib.min = 1;
  lib.ino = 123456;
  lib.ino_generation = 7;
  lib.prot = 5;
  lib.flags = 2;
  lib.filename = "/usr/lib/libworker.so.1";
  lib.sample_id = sid(1000, 7, kOffcpuIds[0]);
  out.push_back(lib);

  out.push_back(TaskRecord{false, 1002, 1000, 1002, 1000, 8, sid(1002, 8, kOffcpuIds[1])});
  out.push_back(FinishedInitRecord{});

  SampleRecord s1;
  s1.misc = PERF_RECORD_MISC_KERNEL;
  s1.id = kOffcpuIds[0];
  s1.ip = 0xffffffff81000100;
  s1.pid = 1000;
  s1.tid = 1001;
  s1.time = 10;
  s1.cpu = 1;
  s1.period = 12345;
  s1.callchain.push(0xffffffff81000100, FrameContext::kKernel);
  s1.callchain.push(0xffffffff81000200, FrameContext::kKernel);
  s1.callchain.push(0x401000, FrameContext::kUser);
  out.push_back(s1);

  SampleRecord s2;
  s2.misc = PERF_RECORD_MISC_USER;
  s2.id = kWakeupId;
  s2.ip = 0x401010;
  s2.pid = 1002;
  s2.tid = 1002;
  s2.time = 11;
  s2.cpu = 0;
  s2.period = 1;
  s2.callchain.push(0x401010, FrameContext::kUser);
  s2.raw = {1, 2, 3, 4};  // u32 size + 4 bytes: already u64-aligned
  out.push_back(s2);

  SampleRecord s3 = s1;
  s3.id = kOffcpuIds[1];
  s3.time = 12;
  s3.period = 99;
  out.push_back(s3);

  out.push_back(FinishedRoundRecord{});
  out.push_back(LostRecord{kOffcpuIds[0], 3, sid(1000, 13, kOffcpuIds[0])});
  out.push_back(LostSamplesRecord{17, 0, sid(1000, 14, kWakeupId)});
  out.push_back(TaskRecord{true, 1002, 1000, 1002, 1000, 15, sid(1002, 15, kOffcpuIds[1])});
  out.push_back(FinishedRoundRecord{});
  return out;
}

std::vector<Record> few_records() {
  std::vector<Record> out;
  out.push_back(CommRecord{7, 7, "tiny", false, {}});
  SampleRecord s;
  s.misc = PERF_RECORD_MISC_USER;
  s.ip = 0x1234;
  s.pid = s.tid = 7;
  s.period = 1;
  out.push_back(s);
  out.push_back(TaskRecord{true, 7, 1, 7, 1, 0, {}});
  return out;
}

std::vector<EventDesc> as_read(std::vector<EventDesc> events) {
  for (auto& e : events) e.attr.size = kAttrSize;
  return events;
}

Bytes write_to_memory(Mode mode, const std::vector<EventDesc>& events,
                      const std::vector<Record>& records,
                      const std::vector<BuildIdEntry>& extra_build_ids) {
  auto w = PerfDataWriter::create(std::make_unique<MemorySink>(mode == Mode::kFile), mode, events,
                                  fixed_host());
  if (!w) {
    ADD_FAILURE() << "create: " << w.error().message();
    return {};
  }
  for (const auto& b : extra_build_ids) w->add_build_id(b);
  for (const auto& r : records) {
    auto s = w->write(r);
    if (!s) {
      ADD_FAILURE() << "write: " << s.error().message();
      return {};
    }
  }
  auto s = w->close();
  if (!s) ADD_FAILURE() << "close: " << s.error().message();
  return static_cast<const MemorySink&>(w->sink()).data();
}

Result<ReadBack> read_all(Bytes data) {
  auto r = PerfDataReader::from_memory(std::move(data));
  if (!r) return r.error();
  ReadBack out;
  for (;;) {
    auto rec = r->next();
    if (!rec) return rec.error();
    if (!*rec) break;
    out.records.push_back(std::move(**rec));
  }
  out.events = r->events();
  out.info = r->info();
  return out;
}

}  // namespace offwake::perfdata::test
