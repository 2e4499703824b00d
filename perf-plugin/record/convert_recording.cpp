#include "record/convert_recording.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <unordered_map>

#include "perfdata/format.h"
#include "perfdata/kernel_records.h"
#include "perfdata/reader.h"
#include "perfdata/time_order.h"
#include "perfdata/tracing_data.h"
#include "perfdata/writer.h"
#include "record/exit_times.h"
#include "record/offwake_file.h"
#include "record/tracepoint_blocks.h"
#include "samples/block_writer.h"
#include "samples/offwake_events.h"
#include "sched/block_pairer.h"
#include "sched/sched_decoder.h"
#include "synth/kernel_maps.h"
#include "synth/proc_maps.h"
#include "unwind/dwarf_unwinder.h"

namespace offwake {
namespace {

using perfdata::Record;
using perfdata::Timed;

const char* const kRecipe = kConvertRecipe;

std::string hex(uint64_t v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%#llx", static_cast<unsigned long long>(v));
  return buf;
}

class Converter {
 public:
  explicit Converter(const ConvertOptions& o) : opt_(o) {}
  Status run(const std::vector<std::string>& argv);
  const RecordStats& stats() const { return stats_; }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  Status check_events();
  Status setup_decoder();
  void setup_kernel();
  Status open_writer(const std::vector<std::string>& argv);
  Status read_input();
  Status untimed(const perfdata::OtherRecord& r, uint64_t offset);
  Status process(const Timed& t);
  Status sched_sample(const perfdata::SampleRecord& s, sched::SchedKind kind, uint64_t offset);
  Status switch_in(const perfdata::OtherRecord& r, uint64_t offset);
  Status carry(Record r);
  Status write_samples();
  bool is_kernel_thread(uint32_t tid) const;
  void setup_unwinder(sched::PairerOptions& po);
  void add_build_id(perfdata::Mmap2Record& m);

  const ConvertOptions& opt_;
  std::optional<perfdata::PerfDataReader> reader_;
  std::optional<sched::SchedDecoder> decoder_;
  std::optional<sched::BlockPairer> pairer_;
  std::optional<Kallsyms> kallsyms_;
  std::optional<perfdata::PerfDataWriter> writer_;
  std::optional<unwind::DwarfUnwinder> unwinder_;  // stack copies (--call-graph dwarf)
  OffwakeEventIds ids_;
  const perfdata::EventDesc* switch_event_ = nullptr;
  const perfdata::EventDesc* waking_event_ = nullptr;
  bool per_task_ = false;
  uint64_t last_time_ = 0, last_sched_time_ = 0, sched_samples_ = 0;
  ExitTimes exits_;  // for the stamps of wakers on their way out (BlockWriter::ExitTimeFn)
  std::unordered_map<uint32_t, uint32_t> tgid_of_, parent_of_;  // from FORK records
  std::map<std::string, perfdata::BuildId> recorded_ids_;  // HEADER_BUILD_ID, by file name
  BuildIdCache file_ids_;
  RecordStats stats_;
  std::vector<std::string> notes_;
};

// What the recording must have, checked before any record is read: the two tracepoints (by
// their ids in the file's own formats), with callchains, raw data and times.
Status Converter::check_events() {
  const auto& events = reader_->events();
  for (const auto& e : events) {
    if (e.attr.type != PERF_TYPE_TRACEPOINT) continue;
    if (e.attr.config == decoder_->switch_id()) switch_event_ = &e;
    if (e.attr.config == decoder_->waking_id()) waking_event_ = &e;
  }
  if (!switch_event_) return Error::bad_input(opt_.input + " has no sched:sched_switch event: record with " + kRecipe);
  if (!waking_event_) return Error::bad_input(opt_.input + " has no sched:sched_waking event: record with " + kRecipe);
  for (const auto* e : {switch_event_, waking_event_}) {
    const char* name = e == switch_event_ ? "sched:sched_switch" : "sched:sched_waking";
    const uint64_t t = e->attr.sample_type;
    if (!(t & PERF_SAMPLE_CALLCHAIN))
      return Error::bad_input(opt_.input + ": " + name + " has no callchains: record with -g");
    if (!(t & PERF_SAMPLE_RAW)) return Error::bad_input(opt_.input + ": " + name + " has no raw tracepoint data (PERF_SAMPLE_RAW)");
    if (!(t & PERF_SAMPLE_TIME)) return Error::bad_input(opt_.input + ": " + name + " has no sample times (PERF_SAMPLE_TIME)");
    if (!(t & PERF_SAMPLE_TID)) return Error::bad_input(opt_.input + ": " + name + " has no thread ids (PERF_SAMPLE_TID)");
    if (!e->attr.sample_id_all)
      return Error::bad_input(opt_.input + ": " + name + " has no sample_id_all: threads and mappings cannot be ordered");
    if (e->attr.freq || e->attr.sample_period != 1)
      return Error::bad_input(opt_.input + ": " + name + " was sampled (-c/-F): every switch and wakeup is needed; record with -c 1");
  }
  return ok_status();
}

// The decoder from the file's own formats (a stream carries them in a record before its
// samples).
Status Converter::setup_decoder() {
  const auto& sections = reader_->info().other_sections;
  auto it = sections.find(perfdata::kFeatTracingData);
  if (it == sections.end())
    return Error::bad_input(opt_.input + " has no tracing data (HEADER_TRACING_DATA): record tracepoints with " + kRecipe);
  auto td = perfdata::parse_tracing_data(it->second);
  if (!td) return td.error().context(opt_.input);
  const std::string* sw = td->format("sched", "sched_switch");
  const std::string* wk = td->format("sched", "sched_waking");
  if (!sw) return Error::bad_input(opt_.input + " has no sched:sched_switch event: record with " + kRecipe);
  if (!wk) return Error::bad_input(opt_.input + " has no sched:sched_waking event: record with " + kRecipe);
  auto d = sched::SchedDecoder::from_formats(*sw, *wk);
  if (!d) return d.error().context(opt_.input + ": unknown tracepoint format");
  decoder_.emplace(std::move(d).value());
  return check_events();
}

// The scheduler's own frames and the tracing machinery's leaf frames are found with the
// running kernel's symbols, so only when the recording was made on this kernel (the file's
// kernel build id, else its release, matches); otherwise they are kept.
void Converter::setup_kernel() {
  const auto& info = reader_->info();
  struct utsname u {};
  uname(&u);
  bool same = info.host.os_release.empty() || info.host.os_release == u.release;
  const perfdata::BuildId running = kernel_build_id();
  for (const auto& b : info.build_ids)
    if (b.filename == "[kernel.kallsyms]" && !b.build_id.empty() && !running.empty())
      same = same && b.build_id == running;
  if (!same) {
    notes_.push_back("recorded on another kernel (" + info.host.os_release +
                     "): scheduler and tracing frames are kept in blocked stacks");
    return;
  }
  auto k = Kallsyms::load();
  if (!k) {
    notes_.push_back("no kernel symbols (" + k.error().message() + "): scheduler frames are kept");
    return;
  }
  kallsyms_.emplace(std::move(k).value());
}

Status Converter::open_writer(const std::vector<std::string>& argv) {
  ids_ = pick_event_ids({});
  perfdata::HostInfo host = reader_->info().host;
  host.cmdline = argv;
  Result<perfdata::PerfDataWriter> w = Error("no output");
  if (output_is_stream(opt_.output)) {
    auto fd = open_output_stream(opt_.output);
    if (!fd) return fd.error();
    w = perfdata::PerfDataWriter::create_pipe(std::move(fd).value(), offwake_events(ids_), host, output_name(opt_.output));
  } else {
    w = perfdata::PerfDataWriter::create_file(opt_.output, offwake_events(ids_), host);
  }
  if (!w) return w.error();
  writer_.emplace(std::move(w).value());
  return ok_status();
}

Status Converter::run(const std::vector<std::string>& argv) {
  auto r = perfdata::PerfDataReader::open(opt_.input);
  if (!r) {
    // The reader's only unsupported input is a sample field it does not decode: in a stock
    // recording, a weight (-W) or a branch stack (-b, --call-graph lbr).
    if (!r.error().is(ErrorKind::kUnsupported)) return r.error();
    return Error::unsupported(r.error().what() + ": convert reads what " + std::string(kRecipe) +
                              " (or --call-graph dwarf) records: record without -W, -b or --call-graph lbr");
  }
  reader_.emplace(std::move(r).value());
  if (reader_->mode() == perfdata::Mode::kFile) OFFWAKE_TRY(setup_decoder());
  setup_kernel();

  sched::PairerOptions po;
  auto mask = parse_state_letters(opt_.state);
  if (!mask) return mask.error();
  po.state_mask = *mask;
  set_durations(po, opt_.min_block_us, opt_.max_block_us, opt_.sample_period_us);
  // perf's tracepoint callchains start in the tracepoint's call (__traceiter_sched_switch),
  // then the scheduler's own functions: both go, as in perf offwake record's stacks; the
  // interrupts' entry stubs tell whose softirq a wakeup is.
  if (kallsyms_) use_kernel_symbols(po, std::make_shared<const Kallsyms>(*kallsyms_), opt_.sched_frames);
  po.is_kernel_thread = [this](uint32_t tid) { return is_kernel_thread(tid); };
  setup_unwinder(po);
  pairer_.emplace(std::move(po));

  OFFWAKE_TRY(open_writer(argv));
  OFFWAKE_TRY(read_input());
  if (!sched_samples_) return Error::bad_input(opt_.input + " holds no sched_switch or sched_waking samples");
  pairer_->finish(last_time_);
  OFFWAKE_TRY(write_samples());
  OFFWAKE_TRY(writer_->close(move_old_output));
  stats_.bytes = writer_->stats().bytes;
  stats_.output = opt_.output == "-" ? "(pipe)" : opt_.output;
  return ok_status();
}

Status Converter::read_input() {
  perfdata::FileRounds<Timed> order;
  uint64_t seq = 0;
  Status failed = ok_status();
  auto process_one = [&](uint64_t, Timed t) {
    if (failed) failed = process(t);
  };
  for (;;) {
    const uint64_t offset = reader_->input_offset();
    auto next = reader_->next();
    if (!next) return next.error();
    if (!*next) break;
    Record& rec = **next;
    if (!decoder_ && std::holds_alternative<perfdata::SampleRecord>(rec)) OFFWAKE_TRY(setup_decoder());
    if (std::holds_alternative<perfdata::FinishedRoundRecord>(rec)) {
      order.round(process_one);
      OFFWAKE_TRY(failed);
      continue;
    }
    if (std::holds_alternative<perfdata::FinishedInitRecord>(rec)) continue;
    if (const auto* o = std::get_if<perfdata::OtherRecord>(&rec); o && perfdata::is_user_record(*o)) {
      OFFWAKE_TRY(untimed(*o, offset));  // perf's own records: no time, no sample_id
      continue;
    }
    const uint64_t time = perfdata::record_time(rec, reader_->events()[0].attr);
    order.add(time, Timed{time, seq++, offset, std::move(rec)});
  }
  if (!decoder_) OFFWAKE_TRY(setup_decoder());
  order.rest(process_one);
  return failed;
}

// PERF_RECORD_THREAD_MAP says whom the recording followed: one entry of pid -1 when it was
// system-wide. Per task, the switch-in of a task comes from PERF_RECORD_SWITCH only.
Status Converter::untimed(const perfdata::OtherRecord& r, uint64_t) {
  if (!perfdata::is_thread_map(r)) return ok_status();
  auto map = perfdata::decode_thread_map(r);
  if (!map) return map.error().context(opt_.input);
  per_task_ = map->per_task();
  bool switch_records = false;  // --switch-events
  for (const auto& e : reader_->events()) switch_records = switch_records || e.attr.context_switch;
  if (per_task_ && !switch_records)
    return Error::bad_input(opt_.input + " was recorded per task without switch events, so a task's switch-in is missing: "
                 "record with --switch-events (or system-wide with -a)");
  return ok_status();
}

Status Converter::process(const Timed& t) {
  if (t.time < last_time_) {
    // Records of threads and mappings may come a little late without harm; scheduler events
    // may not: a block would end before it started.
    bool matters = std::holds_alternative<perfdata::SampleRecord>(t.record);
    if (const auto* o = std::get_if<perfdata::OtherRecord>(&t.record)) matters = perfdata::is_switch(*o);
    if (matters && t.time < last_sched_time_)
      return Error::bad_input(opt_.input + ": records out of order: the record at offset " + hex(t.offset) + " (time " +
                   std::to_string(t.time) + ") is older than records already paired (time " +
                   std::to_string(last_sched_time_) + ")");
  }
  last_time_ = std::max(last_time_, t.time);
  if (const auto* s = std::get_if<perfdata::SampleRecord>(&t.record)) {
    const perfdata::EventDesc* e = reader_->event_for(*s);
    if (e == switch_event_) return sched_sample(*s, sched::SchedKind::kSwitch, t.offset);
    if (e == waking_event_) return sched_sample(*s, sched::SchedKind::kWaking, t.offset);
    return ok_status();  // other events of the recording are not carried over
  }
  if (const auto* o = std::get_if<perfdata::OtherRecord>(&t.record)) {
    if (perfdata::is_switch(*o)) return perfdata::is_switch_out(*o) ? ok_status() : switch_in(*o, t.offset);
    if (!perfdata::is_mmap(*o)) return ok_status();
  }
  return carry(t.record);
}

Status Converter::sched_sample(const perfdata::SampleRecord& s, sched::SchedKind kind, uint64_t offset) {
  sched::SchedEvent e;
  e.time = s.time;
  e.cpu = s.cpu;
  e.pid = s.pid;
  e.tid = s.tid;
  e.callchain = s.callchain;
  e.user_stack = s.user_stack;
  e.cgroup = s.cgroup;  // with perf record --all-cgroups
  stats_.callchains_cut += e.callchain.cut();
  auto d = decoder_->decode(s.raw, e);
  if (!d) return d.error().context(opt_.input + ": sample at offset " + hex(offset));
  if (e.kind != kind)
    return Error::bad_input(opt_.input + ": sample at offset " + hex(offset) + " has the raw data of another tracepoint");
  ++sched_samples_;
  last_sched_time_ = std::max(last_sched_time_, s.time);
  pairer_->add(e);
  return ok_status();
}

// A traced task switched in (PERF_RECORD_SWITCH, per task): a switch from an unknown task
// that did not block.
Status Converter::switch_in(const perfdata::OtherRecord& r, uint64_t offset) {
  auto sw = perfdata::decode_switch(r, switch_event_->attr);
  if (!sw) return sw.error().context(opt_.input + ": record at offset " + hex(offset));
  const perfdata::SampleId* sid = &sw->sample_id;
  sched::SchedEvent e;
  e.kind = sched::SchedKind::kSwitch;
  e.time = sid->time;
  e.cpu = sid->cpu;
  e.prev_tid = 0;
  e.prev_state = 0;
  e.next_tid = sid->tid;
  last_sched_time_ = std::max(last_sched_time_, e.time);
  pairer_->add(e);
  return ok_status();
}

// Threads, mappings, cgroups and namespaces go into the output with its sample_id layout; the
// first three tell the pairer about forks, execs and exits.
Status Converter::carry(Record r) {
  perfdata::SampleId* sid = nullptr;
  if (auto* c = std::get_if<perfdata::CommRecord>(&r)) {
    if (c->exec) pairer_->exec(c->tid);
    if (c->exec && unwinder_) unwinder_->exec(c->pid);
    sid = &c->sample_id;
  } else if (auto* m = std::get_if<perfdata::Mmap2Record>(&r)) {
    add_build_id(*m);
    if (unwinder_) unwinder_->mmap(*m);
    sid = &m->sample_id;
  } else if (auto* t = std::get_if<perfdata::TaskRecord>(&r)) {
    if (t->exit) {
      pairer_->exit(t->tid, t->time, t->sample_id.cpu);
      // perf orders an EXIT by its sample_id's time (a little before the record's own field).
      exits_.exited(t->tid, t->sample_id.time ? t->sample_id.time : t->time);
      if (unwinder_) unwinder_->exit(t->pid, t->tid);
    } else {
      tgid_of_[t->tid] = t->pid;
      if (t->pid != t->ppid) {
        parent_of_[t->pid] = t->ppid;
        pairer_->fork(t->ppid, t->pid);
        if (unwinder_) unwinder_->fork(t->ppid, t->pid);
      }
    }
    sid = &t->sample_id;
  } else if (auto* l = std::get_if<perfdata::LostRecord>(&r)) {
    stats_.perf_lost += l->lost;
    // When its CPU's events began to be lost is not in the file: the loss is taken as
    // over at once, which drops the blocks open then.
    pairer_->loss_begins(l->sample_id.time);
    pairer_->loss_ends();
    l->id = ids_.time;
    sid = &l->sample_id;
  } else if (auto* g = std::get_if<perfdata::CgroupRecord>(&r)) {
    sid = &g->sample_id;  // --all-cgroups: the paths of the samples' cgroups
  } else if (auto* n = std::get_if<perfdata::NamespacesRecord>(&r)) {
    sid = &n->sample_id;  // --namespaces
  } else if (auto* ls = std::get_if<perfdata::LostSamplesRecord>(&r)) {
    stats_.perf_lost += ls->lost;
    return ok_status();  // ours says how many blocks were lost
  } else if (auto* o = std::get_if<perfdata::OtherRecord>(&r)) {
    // PERF_RECORD_MMAP (perf synthesizes the kernel's and its modules' that way): as MMAP2.
    auto m = perfdata::decode_mmap(*o, switch_event_->attr);
    if (!m) return m.error();
    if (unwinder_) unwinder_->mmap(*m);
    r = *m;
    sid = &std::get<perfdata::Mmap2Record>(r).sample_id;
  } else {
    return ok_status();
  }
  sid->id = ids_.time;
  sid->stream_id = 0;
  return writer_->write(r);
}

// perf record writes build ids only of the files its samples' ips fell in, which for tracepoints
// are the kernel's: a user mapping gets its build id from the file it names, when that is
// still the file that was mapped (same device and inode), as perf offwake record's mappings
// have theirs. Symbols are then checked against it, and debug files found by it.
void Converter::add_build_id(perfdata::Mmap2Record& m) {
  if (!m.build_id.empty() || m.filename.empty() || m.filename[0] != '/') return;
  if (recorded_ids_.empty())
    for (const auto& b : reader_->info().build_ids)
      if (!b.build_id.empty()) recorded_ids_[b.filename] = b.build_id;
  if (auto it = recorded_ids_.find(m.filename); it != recorded_ids_.end()) {
    m.build_id = it->second;
    return;
  }
  struct stat st {};
  if (stat(m.filename.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  if (major(st.st_dev) != m.maj || minor(st.st_dev) != m.min || st.st_ino != m.ino) return;
  m.build_id = file_ids_.get(m.filename);
}

// perf record --call-graph dwarf: the samples carry the user registers and a copy of the user
// stack instead of the user callchain; the stacks the pairer keeps are unwound from them, with
// the mappings of the time (carry() hands the unwinder every mapping, fork, exec and exit).
// Whether the samples have copies is known only once they come (a stream describes its events
// as it goes), so the mappings are followed in any case; a sample without a copy is left as it is.
void Converter::setup_unwinder(sched::PairerOptions& po) {
  unwinder_.emplace(unwind::DwarfUnwinderOptions{opt_.max_stack, false});
  po.complete_stack = [this](const sched::SchedEvent& e, Callchain& chain) {
    unwinder_->unwind(e.pid, e.tid, e.user_stack, chain);
  };
}

bool Converter::is_kernel_thread(uint32_t tid) const {
  if (tid == 0) return true;
  auto t = tgid_of_.find(tid);
  const uint32_t tgid = t == tgid_of_.end() ? tid : t->second;
  if (tgid == 2) return true;  // kthreadd
  auto p = parent_of_.find(tgid);
  return p != parent_of_.end() && p->second == 2;
}

Status Converter::write_samples() {
  const auto& info = reader_->info();
  for (const auto& b : info.build_ids) writer_->add_build_id(b);
  OFFWAKE_TRY(write_pseudo_waker_comms(*writer_, ids_));
  stats_.counters = pairer_->counters();
  if (unwinder_) stats_.user_unwind = unwinder_->counts();
  stats_.duration_ns = info.last_sample_time > info.first_sample_time ? info.last_sample_time - info.first_sample_time : 0;
  stats_.sample_period_ns = static_cast<uint64_t>(opt_.sample_period_us * 1000);
  BlockWriter blocks(*writer_, *pairer_, ids_, kallsyms_ ? &*kallsyms_ : nullptr, stats_, {},
                     [this](uint32_t tid) { return exits_.of(tid); });
  OFFWAKE_TRY(blocks.write(pairer_->aggregates(), last_time_));
  return blocks.finish(last_time_);
}


}  // namespace

Result<ConvertOutcome> convert_recording(const ConvertOptions& o, const std::vector<std::string>& argv) {
  Converter c(o);
  OFFWAKE_TRY(c.run(argv));
  return ConvertOutcome{c.stats(), c.notes()};
}

}  // namespace offwake
