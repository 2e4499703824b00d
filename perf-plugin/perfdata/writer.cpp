#include "perfdata/writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <utility>

#include "perfdata/format.h"
#include "perfdata/record_encoder.h"
#include "perfdata/sample_encoder.h"

namespace offwake::perfdata {

PendingFile& PendingFile::operator=(PendingFile&& o) noexcept {
  if (this != &o) {
    if (!path_.empty()) ::unlink(path_.c_str());
    path_ = std::exchange(o.path_, {});
  }
  return *this;
}

PendingFile::~PendingFile() {
  if (!path_.empty()) ::unlink(path_.c_str());
}

Status PendingFile::commit(const std::string& target) {
  // The temporary name is ours: messages name the file the user asked for.
  if (::rename(path_.c_str(), target.c_str()) != 0) return Error::from_errno("cannot create " + target);
  path_.clear();
  return ok_status();
}

Result<PerfDataWriter> PerfDataWriter::create_file(const std::string& path,
                                                   std::vector<EventDesc> events, HostInfo host) {
  std::string temp = path + ".tmp." + std::to_string(getpid());
  UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  // Errors name `path`, the file the user asked for, not the temporary name.
  if (!fd.valid()) return Error::from_errno("cannot create " + path);
  PendingFile pending(temp);
  auto sink = std::make_unique<FdSink>(std::move(fd), path, true);
  auto w = create(std::move(sink), Mode::kFile, std::move(events), std::move(host));
  if (!w) return w.error();
  w->final_path_ = path;
  w->temp_ = std::move(pending);
  return w;
}

Result<PerfDataWriter> PerfDataWriter::create_pipe(UniqueFd fd, std::vector<EventDesc> events, HostInfo host,
                                                   const std::string& name) {
  auto sink = std::make_unique<FdSink>(std::move(fd), name, false);
  return create(std::move(sink), Mode::kPipe, std::move(events), std::move(host));
}

Result<PerfDataWriter> PerfDataWriter::create(std::unique_ptr<ByteSink> sink, Mode mode,
                                              std::vector<EventDesc> events, HostInfo host) {
  if (events.empty()) return Error("perf.data needs at least one event", EINVAL);
  if (mode == Mode::kFile && !sink->seekable())
    return Error::usage("file mode needs a seekable output; use pipe mode", ESPIPE);
  PerfDataWriter w;
  for (size_t i = 0; i < events.size(); ++i) {
    const perf_event_attr& a = events[i].attr;
    OFFWAKE_TRY(check_sample_type(a.sample_type));
    // Non-sample records carry one sample_id trailer that every reader parses with the
    // first event's layout, so all events must agree on it.
    if ((a.sample_type & kSampleIdBits) != (events[0].attr.sample_type & kSampleIdBits) ||
        a.sample_id_all != events[0].attr.sample_id_all)
      return Error("event '" + events[i].name + "' has a different sample_id layout", EINVAL);
    if (events.size() > 1 && !(a.sample_type & PERF_SAMPLE_IDENTIFIER))
      return Error("event '" + events[i].name + "' needs PERF_SAMPLE_IDENTIFIER", EINVAL);
    for (uint64_t id : events[i].ids) {
      if (!w.event_by_id_.emplace(id, i).second)
        return Error("sample id " + std::to_string(id) + " is used twice", EINVAL);
    }
  }
  w.sink_ = std::move(sink);
  w.mode_ = mode;
  w.events_ = std::move(events);
  w.host_ = std::move(host);
  OFFWAKE_TRY(w.begin());
  return w;
}

PerfDataWriter::PerfDataWriter(PerfDataWriter&&) noexcept = default;
PerfDataWriter& PerfDataWriter::operator=(PerfDataWriter&&) noexcept = default;

PerfDataWriter::~PerfDataWriter() = default;

Status PerfDataWriter::begin() {
  if (mode_ == Mode::kPipe) {
    ByteWriter w;
    w.put(PipeHeader{kMagic, sizeof(PipeHeader)});
    for (const auto& e : events_) {
      auto attr = encode_header_attr(e);
      if (!attr) return attr.error();
      w.put_bytes(attr->data(), attr->size());
    }
    FeatureSections features = encode_host_features(host_);
    features[kFeatEventDesc] = encode_event_desc(events_);
    for (const auto& [bit, section] : features) {
      auto rec = encode_header_feature(bit, section);
      if (!rec) return rec.error();
      w.put_bytes(rec->data(), rec->size());
    }
    return sink_->write(w.bytes());
  }
  // File mode: a zeroed header (no magic until close()), then ids and attrs.
  ByteWriter w;
  w.put_zeros(sizeof(FileHeader));
  std::vector<uint64_t> id_offsets;
  for (const auto& e : events_) {
    id_offsets.push_back(w.size());
    for (uint64_t id : e.ids) w.put<uint64_t>(id);
  }
  for (size_t i = 0; i < events_.size(); ++i) {
    perf_event_attr attr = events_[i].attr;
    attr.size = kAttrSize;
    w.put_bytes(&attr, kAttrSize);
    w.put(FileSection{id_offsets[i], events_[i].ids.size() * sizeof(uint64_t)});
  }
  data_offset_ = w.size();
  return sink_->write(w.bytes());
}

Result<const perf_event_attr*> PerfDataWriter::attr_for(uint64_t id) const {
  if (events_.size() == 1) return &events_[0].attr;
  auto it = event_by_id_.find(id);
  if (it == event_by_id_.end()) return Error("sample id " + std::to_string(id) + " names no event");
  return &events_[it->second].attr;
}

Status PerfDataWriter::emit(Result<Bytes> record) {
  if (!record) return record.error();
  if (closed_) return Error("writing after close");
  OFFWAKE_TRY(sink_->write(*record));
  ++stats_.records;
  return ok_status();
}

void PerfDataWriter::timed(uint64_t time) {
  written_since_round_ = true;
  newest_ = std::max(newest_, time);
  if (!rounds_.empty()) rounds_.back().oldest_after = std::min(rounds_.back().oldest_after, time);
}

Status PerfDataWriter::write(const SampleRecord& r) {
  auto attr = attr_for(r.id);
  if (!attr) return attr.error();
  // Count the sample and widen HEADER_SAMPLE_TIME only once it is in the output.
  OFFWAKE_TRY(emit(encode_sample(**attr, r)));
  timed(r.time);
  ++stats_.samples;
  if (r.time) {
    first_time_ = std::min(first_time_, r.time);
    last_time_ = std::max(last_time_, r.time);
  }
  return ok_status();
}

Status PerfDataWriter::emit_timed(Result<Bytes> record, const SampleId& id) {
  OFFWAKE_TRY(emit(std::move(record)));
  timed(events_[0].attr.sample_id_all ? id.time : 0);
  return ok_status();
}

Status PerfDataWriter::write(const CommRecord& r) { return emit_timed(encode_comm(events_[0].attr, r), r.sample_id); }

Status PerfDataWriter::write(const Mmap2Record& r) {
  if (!r.build_id.empty()) {
    add_build_id(BuildIdEntry{-1, r.cpumode, r.build_id, r.filename});
  }
  return emit_timed(encode_mmap2(events_[0].attr, r), r.sample_id);
}

Status PerfDataWriter::write(const TaskRecord& r) { return emit_timed(encode_task(events_[0].attr, r), r.sample_id); }
Status PerfDataWriter::write(const LostRecord& r) { return emit_timed(encode_lost(events_[0].attr, r), r.sample_id); }
Status PerfDataWriter::write(const LostSamplesRecord& r) {
  return emit_timed(encode_lost_samples(events_[0].attr, r), r.sample_id);
}
Status PerfDataWriter::write(const CgroupRecord& r) { return emit_timed(encode_cgroup(events_[0].attr, r), r.sample_id); }
Status PerfDataWriter::write(const NamespacesRecord& r) {
  return emit_timed(encode_namespaces(events_[0].attr, r), r.sample_id);
}
Status PerfDataWriter::finished_round() { return emit(encode_finished_round()); }

Status PerfDataWriter::end_round() {
  if (mode_ == Mode::kPipe || !written_since_round_) return ok_status();
  const uint64_t at = sink_->position();
  OFFWAKE_TRY(emit(encode_finished_round()));
  rounds_.push_back({at, newest_, UINT64_MAX});
  written_since_round_ = false;
  return ok_status();
}

// perf hands on, at a FINISHED_ROUND, what is not newer than the newest record before the
// FINISHED_ROUND it kept before it. So of two rounds kept one after the other, a and b, every
// record after b must be at least as new as the newest before a. From the first round on,
// keep each round whose records after it are all new enough for the last round kept: a round
// dropped only merges two rounds, and the oldest record after a round can only grow with the
// round's place, so keeping the earliest that fits loses no later one.
Status PerfDataWriter::settle_rounds() {
  uint64_t oldest = UINT64_MAX;  // of the records after round i
  for (size_t i = rounds_.size(); i-- > 0;) {
    oldest = std::min(oldest, rounds_[i].oldest_after);
    rounds_[i].oldest_after = oldest;
  }
  const Bytes init = encode_finished_init();
  const Round* kept = nullptr;
  for (const Round& r : rounds_) {
    if (!kept || r.oldest_after >= kept->newest_before) {
      kept = &r;
      ++stats_.rounds;
      continue;
    }
    OFFWAKE_TRY(sink_->write_at(r.offset, init));
    ++stats_.rounds_dropped;
  }
  return ok_status();
}
Status PerfDataWriter::finished_init() { return emit(encode_finished_init()); }

Status PerfDataWriter::write(const Record& r) {
  return std::visit(
      [&](const auto& rec) -> Status {
        using T = std::decay_t<decltype(rec)>;
        if constexpr (std::is_same_v<T, FinishedRoundRecord>) return finished_round();
        else if constexpr (std::is_same_v<T, FinishedInitRecord>) return finished_init();
        else if constexpr (std::is_same_v<T, OtherRecord>)
          return Error("record type " + std::to_string(rec.type) + " cannot be re-encoded", EINVAL);
        else return write(rec);
      },
      r);
}

void PerfDataWriter::add_build_id(const BuildIdEntry& entry) {
  if (entry.build_id.empty()) return;
  if (build_id_seen_.emplace(entry.filename, entry.build_id.hex()).second)
    build_ids_.push_back(entry);
}

Status PerfDataWriter::close_as(const std::string& path, const BeforeCommit& before_commit) {
  if (mode_ == Mode::kFile && !closed_) final_path_ = path;
  return close(before_commit);
}

Status PerfDataWriter::close(const BeforeCommit& before_commit) {
  if (closed_) return ok_status();
  if (mode_ == Mode::kPipe) {
    // The build ids a file has in its section (those of no MMAP2 record among them, the
    // kernel's), as the HEADER_BUILD_ID records a stream carries them in (perf inject -b's).
    if (!build_ids_.empty()) OFFWAKE_TRY(sink_->write(encode_build_ids(build_ids_)));
    OFFWAKE_TRY(sink_->flush());
    stats_.bytes = sink_->position();
    closed_ = true;
    return ok_status();
  }
  const uint64_t data_end = sink_->position();
  OFFWAKE_TRY(settle_rounds());
  FeatureSections features = encode_host_features(host_);
  features[kFeatEventDesc] = encode_event_desc(events_);
  if (!build_ids_.empty()) features[kFeatBuildId] = encode_build_ids(build_ids_);
  if (first_time_ != UINT64_MAX) features[kFeatSampleTime] = encode_sample_time(first_time_, last_time_);
  for (const auto& [bit, section] : extra_features_) features[bit] = section;

  FileHeader header{};
  header.magic = kMagic;
  header.size = sizeof(FileHeader);
  header.attr_size = kAttrSize + sizeof(FileSection);
  header.attrs = {data_offset_ - events_.size() * header.attr_size, events_.size() * header.attr_size};
  header.data = {data_offset_, data_end - data_offset_};

  ByteWriter table, payload;
  uint64_t payload_offset = data_end + features.size() * sizeof(FileSection);
  for (const auto& [bit, section] : features) {
    header.features[bit / 64] |= uint64_t{1} << (bit % 64);
    table.put(FileSection{payload_offset + payload.size(), section.size()});
    payload.put_bytes(section.data(), section.size());
  }
  OFFWAKE_TRY(sink_->write(table.bytes()));
  OFFWAKE_TRY(sink_->write(payload.bytes()));
  stats_.bytes = sink_->position();
  const auto* hp = reinterpret_cast<const uint8_t*>(&header);
  OFFWAKE_TRY(sink_->write_at(0, std::span(hp, sizeof header)));
  OFFWAKE_TRY(sink_->flush());
  if (!temp_.empty()) {
    if (before_commit) OFFWAKE_TRY(before_commit(final_path_));
    OFFWAKE_TRY(temp_.commit(final_path_));
  }
  closed_ = true;
  return ok_status();
}

}  // namespace offwake::perfdata
