#include "perfdata/reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <utility>

#include "perfdata/format.h"
#include "perfdata/record_encoder.h"
#include "perfdata/sample_encoder.h"
#include "perfdata/time_order.h"

namespace offwake::perfdata {

namespace {

class FdSource : public ByteSource {
 public:
  FdSource(UniqueFd fd, std::string what) : fd_(std::move(fd)), what_(std::move(what)) {
    struct stat st {};
    if (fstat(fd_.get(), &st) == 0 && S_ISREG(st.st_mode)) {
      seekable_ = true;
      size_ = static_cast<uint64_t>(st.st_size);
    }
  }
  Result<size_t> read(void* buf, size_t n) override {
    for (;;) {
      ssize_t r = ::read(fd_.get(), buf, n);
      if (r >= 0) return static_cast<size_t>(r);
      if (errno != EINTR) return Error::from_errno("reading " + what_);
    }
  }
  // Records are read one at a time, header then payload, mostly in file order (and again,
  // nearly in file order, by a reader that sorts a file by an index of offsets): small reads
  // come from a window of the file instead of two system calls per record.
  Status pread(void* buf, size_t n, uint64_t offset) override {
    if (seekable_ && n <= kWindow / 4) {
      const bool inside = offset >= window_at_ && offset - window_at_ + n <= window_.size();
      if (!inside) OFFWAKE_TRY(fill_window(offset));
      if (offset - window_at_ + n <= window_.size()) {
        std::memcpy(buf, window_.data() + (offset - window_at_), n);
        return ok_status();
      }
    }
    return pread_direct(buf, n, offset);  // also says why a read past the end failed
  }
  bool seekable() const override { return seekable_; }
  uint64_t size() const override { return size_; }

 private:
  static constexpr size_t kWindow = 256 << 10;

  Status fill_window(uint64_t offset) {
    window_.resize(kWindow);
    size_t got = 0;
    while (got < kWindow) {
      ssize_t r = ::pread(fd_.get(), window_.data() + got, kWindow - got, static_cast<off_t>(offset + got));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return Error::from_errno("reading " + what_);
      if (r == 0) break;
      got += static_cast<size_t>(r);
    }
    window_.resize(got);
    window_at_ = offset;
    return ok_status();
  }

  Status pread_direct(void* buf, size_t n, uint64_t offset) {
    auto* p = static_cast<uint8_t*>(buf);
    while (n > 0) {
      ssize_t r = ::pread(fd_.get(), p, n, static_cast<off_t>(offset));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return Error::from_errno("reading " + what_);
      if (r == 0) return Error::bad_input("reading " + what_ + ": unexpected end of file");
      p += r;
      n -= static_cast<size_t>(r);
      offset += static_cast<uint64_t>(r);
    }
    return ok_status();
  }

  UniqueFd fd_;
  std::string what_;
  bool seekable_ = false;
  uint64_t size_ = 0;
  Bytes window_;  // the file from window_at_
  uint64_t window_at_ = 0;
};

class MemorySource : public ByteSource {
 public:
  explicit MemorySource(Bytes data) : data_(std::move(data)) {}
  Result<size_t> read(void* buf, size_t n) override {
    size_t k = std::min(n, data_.size() - pos_);
    if (k) std::memcpy(buf, data_.data() + pos_, k);  // an empty vector's data() may be null
    pos_ += k;
    return k;
  }
  Status pread(void* buf, size_t n, uint64_t offset) override {
    if (offset > data_.size() || n > data_.size() - offset)
      return Error::bad_input("reading memory: unexpected end of data");
    std::memcpy(buf, data_.data() + offset, n);
    return ok_status();
  }
  bool seekable() const override { return true; }
  uint64_t size() const override { return data_.size(); }

 private:
  Bytes data_;
  size_t pos_ = 0;
};

std::string hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

// Where the id of a sample is, the same for every event of a file (perf requires it): first
// with PERF_SAMPLE_IDENTIFIER; else, with PERF_SAMPLE_ID (perf record without -a, for one),
// after the fields that come before it.
std::optional<size_t> sample_id_offset(uint64_t t) {
  if (t & PERF_SAMPLE_IDENTIFIER) return 0;
  if (!(t & PERF_SAMPLE_ID)) return std::nullopt;
  size_t pos = 0;
  if (t & PERF_SAMPLE_IP) pos += 8;
  if (t & PERF_SAMPLE_TID) pos += 8;
  if (t & PERF_SAMPLE_TIME) pos += 8;
  if (t & PERF_SAMPLE_ADDR) pos += 8;
  return pos;
}

bool section_fits(const FileSection& s, uint64_t file_size) {
  return s.offset <= file_size && s.size <= file_size - s.offset;
}

}  // namespace

Result<PerfDataReader> PerfDataReader::open(const std::string& path) {
  if (path == "-") return from_fd(UniqueFd(dup(STDIN_FILENO)), "standard input");
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Error::from_errno("opening " + path);
  struct stat st {};
  // A directory opens for reading; say so as a failed open says it, strerror naming the cause once.
  if (fstat(fd.get(), &st) == 0 && S_ISDIR(st.st_mode)) return Error("opening " + path, EISDIR, ErrorKind::kIo);
  return from_fd(std::move(fd), path);
}

Result<PerfDataReader> PerfDataReader::from_fd(UniqueFd fd, std::string what) {
  if (!fd.valid()) return Error::from_errno("opening " + what);
  PerfDataReader r;
  r.src_ = std::make_unique<FdSource>(std::move(fd), what);
  r.what_ = std::move(what);
  OFFWAKE_TRY(r.start());
  return r;
}

Result<PerfDataReader> PerfDataReader::from_memory(Bytes data) {
  PerfDataReader r;
  r.src_ = std::make_unique<MemorySource>(std::move(data));
  r.what_ = "memory";
  OFFWAKE_TRY(r.start());
  return r;
}

PerfDataReader::PerfDataReader(PerfDataReader&&) noexcept = default;
PerfDataReader& PerfDataReader::operator=(PerfDataReader&&) noexcept = default;
PerfDataReader::~PerfDataReader() = default;

Result<size_t> PerfDataReader::read_stream(void* buf, size_t n) {
  auto* p = static_cast<uint8_t*>(buf);
  size_t got = 0;
  while (got < n) {
    auto r = src_->read(p + got, n - got);
    if (!r) return r.error();
    if (*r == 0) break;
    got += *r;
  }
  return got;
}

Result<std::optional<Record>> PerfDataReader::stream_cut(uint64_t at, uint64_t got) {
  if (records_read_ == 0)
    return Error::bad_input(what_ + ": truncated at offset " + hex(at + got) + ", before any record");
  cut_ = std::pair(at, at + got);
  return std::optional<Record>{};
}

std::optional<std::string> PerfDataReader::cut_short() const {
  if (!cut_) return std::nullopt;
  return what_ + ": the data is cut at offset " + hex(cut_->second) + ", inside the record at " + hex(cut_->first) +
         ": the records before it are read";
}

Status PerfDataReader::start() {
  PipeHeader ph{};
  auto got = read_stream(&ph, sizeof ph);
  // A read that failed is not a short file: the kind says which it was.
  if (!got) return got.error();
  if (*got == 0) return Error::bad_input(what_ + ": empty input, not a perf.data file");
  if (*got < sizeof ph) return Error::bad_input(what_ + ": not a perf.data file (shorter than a header)");
  if (ph.magic == 0 && src_->seekable())
    return Error::bad_input(what_ + ": header was never written (the recording did not finish)");
  // Bad input rather than unsupported: nothing in such a file can be read, and unsupported
  // means a readable file with a field this reader does not decode (a caller may say how to
  // record without it).
  if (ph.magic == __builtin_bswap64(kMagic))
    return Error::bad_input(what_ + ": perf.data of the other byte order is not supported");
  if (ph.magic != kMagic) return Error::bad_input(what_ + ": not a perf.data file (bad magic)");
  offset_ = sizeof ph;
  if (ph.size == sizeof(PipeHeader)) {
    mode_ = Mode::kPipe;
    // A stream's event descriptions and features are its first records: read up to its first
    // data record now, so that events() and info() say what it holds before it is read.
    auto first = next();
    if (!first) return first.error();
    first_ = std::move(first).value();
    have_first_ = true;
    return ok_status();
  }
  if (!src_->seekable())
    return Error::usage(what_ + ": a perf.data file (not a stream) must be read from a file, not a pipe");
  mode_ = Mode::kFile;
  auto s = read_file_header();
  if (!s) return s.error().context(what_);
  return ok_status();
}

Status PerfDataReader::read_file_header() {
  const uint64_t file_size = src_->size();
  FileHeader h{};
  if (file_size < sizeof h) return Error::bad_input("truncated file header");
  OFFWAKE_TRY(src_->pread(&h, sizeof h, 0));
  if (h.size < sizeof h) return Error::bad_input("header size " + std::to_string(h.size) + " is too small");
  if (h.attr_size < PERF_ATTR_SIZE_VER0 + sizeof(FileSection) || h.attr_size > 4096)
    return Error::bad_input("bad attr size " + std::to_string(h.attr_size));
  if (!section_fits(h.attrs, file_size)) return Error::bad_input("attrs section lies outside the file");
  if (!section_fits(h.data, file_size)) return Error::bad_input("data section lies outside the file (truncated?)");
  if (h.attrs.size % h.attr_size != 0) return Error::bad_input("attrs section is not a whole number of attrs");

  const size_t nr_attrs = h.attrs.size / h.attr_size;
  if (nr_attrs == 0) return Error::bad_input("no events in the file");
  Bytes raw(h.attr_size);
  for (size_t i = 0; i < nr_attrs; ++i) {
    OFFWAKE_TRY(src_->pread(raw.data(), raw.size(), h.attrs.offset + i * h.attr_size));
    EventDesc e;
    const size_t attr_bytes = h.attr_size - sizeof(FileSection);
    std::memcpy(&e.attr, raw.data(), std::min(attr_bytes, sizeof e.attr));
    FileSection ids{};
    std::memcpy(&ids, raw.data() + attr_bytes, sizeof ids);
    if (!section_fits(ids, file_size) || ids.size % 8) return Error::bad_input("event ids lie outside the file");
    e.ids.resize(ids.size / 8);
    if (!e.ids.empty()) OFFWAKE_TRY(src_->pread(e.ids.data(), ids.size, ids.offset));
    OFFWAKE_TRY(check_sample_type(e.attr.sample_type));
    events_.push_back(std::move(e));
  }

  // The feature table follows the data section: one FileSection per set bit, in bit order.
  uint64_t table = h.data.offset + h.data.size;
  for (int bit = 1; bit < kFeatBits; ++bit) {
    if (!(h.features[bit / 64] & (uint64_t{1} << (bit % 64)))) continue;
    FileSection sec{};
    if (table + sizeof sec > file_size) return Error::bad_input("feature table is truncated");
    OFFWAKE_TRY(src_->pread(&sec, sizeof sec, table));
    table += sizeof sec;
    if (!section_fits(sec, file_size)) {
      // Begun inside the file and going on past its end: the file was cut (a full disk, a copy
      // stopped), as perf says of such a file.
      if (sec.offset <= file_size && sec.size <= UINT64_MAX - sec.offset)
        return Error::bad_input("cut short: feature " + std::to_string(bit) + " ends at byte " +
                                std::to_string(sec.offset + sec.size) + ", the file at " + std::to_string(file_size));
      return Error::bad_input("feature " + std::to_string(bit) + " lies outside the file");
    }
    Bytes data(sec.size);
    if (sec.size) OFFWAKE_TRY(src_->pread(data.data(), data.size(), sec.offset));
    auto s = decode_feature(bit, data, info_);
    if (!s) return s.error();
  }
  name_events();
  offset_ = data_start_ = h.data.offset;
  data_end_ = h.data.offset + h.data.size;
  return ok_status();
}

// Names come from HEADER_EVENT_DESC; match them to events by their ids (or by position).
void PerfDataReader::name_events() {
  for (size_t i = 0; i < events_.size(); ++i) {
    if (!events_[i].name.empty()) continue;
    for (size_t j = 0; j < info_.events.size(); ++j) {
      const auto& d = info_.events[j];
      bool same = (!d.ids.empty() && d.ids == events_[i].ids) || (d.ids.empty() && i == j);
      if (same) events_[i].name = d.name;
    }
  }
}

const EventDesc* PerfDataReader::event_for(const SampleRecord& s) const {
  if (events_.size() == 1) return &events_[0];
  for (const auto& e : events_)
    for (uint64_t id : e.ids)
      if (id == s.id) return &e;
  return nullptr;
}

Status PerfDataReader::handle_pipe_record(const perf_event_header& h, std::span<const uint8_t> payload) {
  ByteReader r(payload, "pipe record");
  if (h.type == kRecordHeaderAttr) {
    if (payload.size() < PERF_ATTR_SIZE_VER0) return Error::bad_input("attr record is too short");
    EventDesc e;
    uint32_t size = 0;
    std::memcpy(&size, payload.data() + offsetof(perf_event_attr, size), sizeof size);
    if (size < PERF_ATTR_SIZE_VER0 || size > payload.size()) return Error::bad_input("attr record has a bad attr size");
    std::memcpy(&e.attr, payload.data(), std::min<size_t>(size, sizeof e.attr));
    OFFWAKE_TRY(check_sample_type(e.attr.sample_type));
    size_t nr = (payload.size() - size) / 8;
    e.ids.resize(nr);
    if (nr) std::memcpy(e.ids.data(), payload.data() + size, nr * 8);
    events_.push_back(std::move(e));
    return ok_status();
  }
  if (h.type == kRecordHeaderFeature) {
    uint64_t feat = 0;
    OFFWAKE_TRY(r.read(feat));
    if (feat == 0 || feat >= kFeatBits) return Error::bad_input("feature record has a bad feature id");
    OFFWAKE_TRY(decode_feature(static_cast<int>(feat), payload.subspan(8), info_));
    name_events();
    return ok_status();
  }
  if (h.type == kRecordHeaderBuildId) {
    Bytes whole(sizeof h + payload.size());
    std::memcpy(whole.data(), &h, sizeof h);
    if (!payload.empty()) std::memcpy(whole.data() + sizeof h, payload.data(), payload.size());
    return decode_build_id_records(whole, info_);
  }
  return ok_status();  // other pipe-only records carry nothing this reader uses
}

// A stream has no HEADER_BUILD_ID section written at its end, as a file has: the build ids
// of its memory maps are taken from its MMAP2 records as they come (the others, the kernel's,
// come in HEADER_BUILD_ID records). Nor HEADER_SAMPLE_TIME: the times its records carry are
// noted instead (recorded_span). Time 0 is perf's stamp of what it synthesized, not a time.
void PerfDataReader::note_in_stream(const Record& r) {
  if (const auto* m = std::get_if<Mmap2Record>(&r))
    add_build_id(BuildIdEntry{-1, m->cpumode, m->build_id, m->filename}, info_);
  if (const uint64_t time = record_time(r, events_[0].attr)) {
    if (!info_.first_record_time || time < info_.first_record_time) info_.first_record_time = time;
    info_.last_record_time = std::max(info_.last_record_time, time);
  }
}

// In a stream, the tracing data (the feature section HEADER_TRACING_DATA of a file) follows
// its record rather than being in it: u32 size in the record, then the data padded to 8 bytes.
// False: the stream ends inside it.
Result<bool> PerfDataReader::read_pipe_tracing_data(std::span<const uint8_t> payload) {
  constexpr uint32_t kMaxTracingData = 256u << 20;
  uint32_t size = 0;
  if (payload.size() < sizeof size) return Error::bad_input("tracing data record is too short");
  std::memcpy(&size, payload.data(), sizeof size);
  if (size > kMaxTracingData) return Error::bad_input("tracing data of " + std::to_string(size) + " bytes is too large");
  Bytes data(align8(size));
  auto got = read_stream(data.data(), data.size());
  if (!got) return got.error();
  if (*got < data.size()) {
    offset_ += *got;  // the end of the stream, for stream_cut()
    return false;
  }
  offset_ += data.size();
  data.resize(size);
  info_.features.push_back(kFeatTracingData);
  info_.other_sections[kFeatTracingData] = std::move(data);
  return true;
}

Result<Record> PerfDataReader::read_at(uint64_t offset) {
  if (mode_ != Mode::kFile) return Error(what_ + ": a stream cannot be read again at an offset");
  if (offset < data_start_ || offset >= data_end_)
    return Error(what_ + ": offset " + hex(offset) + " is outside the data section");
  const uint64_t resume = offset_;
  offset_ = offset;
  auto r = next();
  offset_ = resume;
  if (!r) return r.error();
  if (!*r) return Error(what_ + ": no record at offset " + hex(offset));
  return std::move(**r);
}

Result<std::optional<Record>> PerfDataReader::next() {
  if (have_first_) {
    have_first_ = false;
    return std::exchange(first_, std::nullopt);
  }
  for (;;) {
    if (mode_ == Mode::kFile && offset_ >= data_end_) return std::optional<Record>{};
    if (cut_) return std::optional<Record>{};
    perf_event_header h{};
    const uint64_t at = offset_;
    if (mode_ == Mode::kFile) {
      if (data_end_ - offset_ < sizeof h) return Error::bad_input(what_ + ": truncated record at offset " + hex(at));
      OFFWAKE_TRY(src_->pread(&h, sizeof h, offset_));
    } else {
      auto got = read_stream(&h, sizeof h);
      if (!got) return got.error();
      if (*got == 0) return std::optional<Record>{};
      if (*got < sizeof h) return stream_cut(at, *got);
    }
    if (h.size < sizeof h)
      return Error::bad_input(what_ + ": record at offset " + hex(at) + " has size " + std::to_string(h.size));
    record_.resize(h.size - sizeof h);
    if (mode_ == Mode::kFile) {
      if (h.size > data_end_ - offset_)
        return Error::bad_input(what_ + ": record at offset " + hex(at) + " overruns the data section");
      if (!record_.empty()) OFFWAKE_TRY(src_->pread(record_.data(), record_.size(), offset_ + sizeof h));
    } else {
      auto got = read_stream(record_.data(), record_.size());
      if (!got) return got.error();
      if (*got < record_.size()) return stream_cut(at, sizeof h + *got);
    }
    offset_ += h.size;

    if (mode_ == Mode::kPipe && h.type == kRecordHeaderTracingData) {
      auto whole = read_pipe_tracing_data(record_);
      if (!whole) return whole.error().context(what_ + ": record at offset " + hex(at));
      if (!*whole) return stream_cut(at, offset_ - at);
      continue;
    }
    if (mode_ == Mode::kPipe && (h.type == kRecordHeaderAttr || h.type == kRecordHeaderFeature ||
                                 h.type == kRecordHeaderBuildId || h.type == 65 || h.type == 66)) {
      auto s = handle_pipe_record(h, record_);
      if (!s) return s.error().context(what_ + ": record at offset " + hex(at));
      continue;
    }
    if (events_.empty()) return Error::bad_input(what_ + ": data record before any event description");
    Result<Record> rec = Error("");
    if (h.type == PERF_RECORD_SAMPLE) {
      const perf_event_attr* attr = &events_[0].attr;
      if (events_.size() > 1) {
        uint64_t id = 0;
        auto pos = sample_id_offset(attr->sample_type);
        if (!pos || record_.size() < *pos + 8)
          return Error::bad_input(what_ + ": sample at offset " + hex(at) + " has no identifier");
        std::memcpy(&id, record_.data() + *pos, 8);
        SampleRecord probe;
        probe.id = id;
        const EventDesc* e = event_for(probe);
        if (!e)
          return Error::bad_input(what_ + ": sample at offset " + hex(at) + " has unknown id " + std::to_string(id));
        attr = &e->attr;
      }
      auto s = decode_sample(*attr, h.misc, record_);
      rec = s ? Result<Record>(Record{std::move(s).value()}) : Result<Record>(s.error());
    } else {
      rec = decode_record(events_[0].attr, h, record_);
    }
    if (!rec) return rec.error().context(what_ + ": record at offset " + hex(at));
    if (mode_ == Mode::kPipe) note_in_stream(*rec);
    ++records_read_;
    return std::optional<Record>(std::move(rec).value());
  }
}

}  // namespace offwake::perfdata
