#include "pprof_decoder.h"

#include <set>

namespace offwake::test {

namespace {

using Span = std::span<const uint8_t>;

// One field as it is on the wire.
struct Field {
  uint32_t number = 0;
  uint32_t wire = 0;   // 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32
  uint64_t value = 0;  // wire types 0, 1 and 5
  Span bytes;          // wire type 2
};

Result<uint64_t> read_varint(Span data, size_t& pos) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (pos >= data.size()) return Error("truncated varint");
    const uint8_t b = data[pos++];
    if (shift == 63 && b > 1) return Error("varint overflows 64 bits");
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  return Error("varint longer than 10 bytes");
}

Result<std::vector<Field>> parse_fields(Span data) {
  std::vector<Field> out;
  size_t pos = 0;
  while (pos < data.size()) {
    auto key = read_varint(data, pos);
    if (!key) return key.error();
    Field f;
    f.number = static_cast<uint32_t>(*key >> 3);
    f.wire = static_cast<uint32_t>(*key & 7);
    if (f.number == 0) return Error("field number 0");
    if (f.wire == 0) {
      auto v = read_varint(data, pos);
      if (!v) return v.error();
      f.value = *v;
    } else if (f.wire == 2) {
      auto len = read_varint(data, pos);
      if (!len) return len.error();
      if (*len > data.size() - pos) return Error("field " + std::to_string(f.number) + " runs past its message");
      f.bytes = data.subspan(pos, *len);
      pos += *len;
    } else if (f.wire == 1 || f.wire == 5) {
      const size_t n = f.wire == 1 ? 8 : 4;
      if (n > data.size() - pos) return Error("truncated fixed field");
      for (size_t i = 0; i < n; ++i) f.value |= static_cast<uint64_t>(data[pos + i]) << (8 * i);
      pos += n;
    } else {
      return Error("wire type " + std::to_string(f.wire) + " in field " + std::to_string(f.number));
    }
    out.push_back(f);
  }
  return out;
}

// A repeated scalar, packed (wire type 2) or one element per field (wire type 0): readers
// must take both.
Status append_varints(const Field& f, std::vector<uint64_t>& out) {
  if (f.wire == 0) {
    out.push_back(f.value);
    return ok_status();
  }
  if (f.wire != 2) return Error("field " + std::to_string(f.number) + ": not a varint");
  size_t pos = 0;
  while (pos < f.bytes.size()) {
    auto v = read_varint(f.bytes, pos);
    if (!v) return v.error();
    out.push_back(*v);
  }
  return ok_status();
}

Result<uint64_t> scalar(const Field& f) {
  if (f.wire != 0) return Error("field " + std::to_string(f.number) + ": expected a varint");
  return f.value;
}

Result<Span> message(const Field& f) {
  if (f.wire != 2) return Error("field " + std::to_string(f.number) + ": expected a message");
  return f.bytes;
}

#define DECODE_TRY_ASSIGN(dst, expr)     \
  do {                                   \
    auto r_ = (expr);                    \
    if (!r_) return r_.error();          \
    dst = static_cast<decltype(dst)>(*r_); \
  } while (0)

// The string table, read before the messages that refer to it (it may come after them).
class Strings {
 public:
  explicit Strings(const std::vector<std::string>& table) : table_(table) {}
  Status get(uint64_t index, std::string& out) const {
    if (index >= table_.size()) return Error("string index " + std::to_string(index) + " outside the table");
    out = table_[index];
    return ok_status();
  }

 private:
  const std::vector<std::string>& table_;
};

Status decode_value_type(Span data, std::pair<std::string, std::string>& vt, const Strings& strings) {
  auto fields = parse_fields(data);
  if (!fields) return fields.error();
  uint64_t type = 0, unit = 0;
  for (const Field& f : *fields) {
    if (f.number == 1) DECODE_TRY_ASSIGN(type, scalar(f));
    else if (f.number == 2) DECODE_TRY_ASSIGN(unit, scalar(f));
  }
  OFFWAKE_TRY(strings.get(type, vt.first));
  return strings.get(unit, vt.second);
}

Status decode_label(Span data, DecodedLabel& l, const Strings& strings) {
  auto fields = parse_fields(data);
  if (!fields) return fields.error();
  uint64_t key = 0, str = 0, unit = 0;
  for (const Field& f : *fields) {
    if (f.number == 1) DECODE_TRY_ASSIGN(key, scalar(f));
    else if (f.number == 2) DECODE_TRY_ASSIGN(str, scalar(f));
    else if (f.number == 3) DECODE_TRY_ASSIGN(l.num, scalar(f));
    else if (f.number == 4) DECODE_TRY_ASSIGN(unit, scalar(f));
  }
  if (str && l.num) return Error("a label with both str and num");
  OFFWAKE_TRY(strings.get(key, l.key));
  OFFWAKE_TRY(strings.get(str, l.str));
  return strings.get(unit, l.num_unit);
}

Status decode_sample(Span data, DecodedSample& s, const Strings& strings) {
  auto fields = parse_fields(data);
  if (!fields) return fields.error();
  std::vector<uint64_t> values;
  for (const Field& f : *fields) {
    if (f.number == 1) OFFWAKE_TRY(append_varints(f, s.location_ids));
    else if (f.number == 2) OFFWAKE_TRY(append_varints(f, values));
    else if (f.number == 3) {
      Span m;
      DECODE_TRY_ASSIGN(m, message(f));
      s.labels.emplace_back();
      OFFWAKE_TRY(decode_label(m, s.labels.back(), strings));
    }
  }
  for (uint64_t v : values) s.values.push_back(static_cast<int64_t>(v));
  return ok_status();
}

Status decode_mapping(Span data, DecodedMapping& m, const Strings& strings) {
  auto fields = parse_fields(data);
  if (!fields) return fields.error();
  uint64_t filename = 0, build_id = 0, has_functions = 0;
  for (const Field& f : *fields) {
    switch (f.number) {
      case 1: DECODE_TRY_ASSIGN(m.id, scalar(f)); break;
      case 2: DECODE_TRY_ASSIGN(m.memory_start, scalar(f)); break;
      case 3: DECODE_TRY_ASSIGN(m.memory_limit, scalar(f)); break;
      case 4: DECODE_TRY_ASSIGN(m.file_offset, scalar(f)); break;
      case 5: DECODE_TRY_ASSIGN(filename, scalar(f)); break;
      case 6: DECODE_TRY_ASSIGN(build_id, scalar(f)); break;
      case 7: DECODE_TRY_ASSIGN(has_functions, scalar(f)); break;
      default: break;
    }
  }
  m.has_functions = has_functions != 0;
  OFFWAKE_TRY(strings.get(filename, m.filename));
  return strings.get(build_id, m.build_id);
}

Status decode_location(Span data, DecodedLocation& l) {
  auto fields = parse_fields(data);
  if (!fields) return fields.error();
  for (const Field& f : *fields) {
    if (f.number == 1) DECODE_TRY_ASSIGN(l.id, scalar(f));
    else if (f.number == 2) DECODE_TRY_ASSIGN(l.mapping_id, scalar(f));
    else if (f.number == 3) DECODE_TRY_ASSIGN(l.address, scalar(f));
    else if (f.number == 4) {
      Span line;
      DECODE_TRY_ASSIGN(line, message(f));
      auto lf = parse_fields(line);
      if (!lf) return lf.error();
      uint64_t function_id = 0;
      for (const Field& g : *lf)
        if (g.number == 1) DECODE_TRY_ASSIGN(function_id, scalar(g));
      l.function_ids.push_back(function_id);
    }
  }
  return ok_status();
}

Status decode_function(Span data, DecodedFunction& fn, const Strings& strings) {
  auto fields = parse_fields(data);
  if (!fields) return fields.error();
  uint64_t name = 0, system_name = 0, filename = 0;
  for (const Field& f : *fields) {
    switch (f.number) {
      case 1: DECODE_TRY_ASSIGN(fn.id, scalar(f)); break;
      case 2: DECODE_TRY_ASSIGN(name, scalar(f)); break;
      case 3: DECODE_TRY_ASSIGN(system_name, scalar(f)); break;
      case 4: DECODE_TRY_ASSIGN(filename, scalar(f)); break;
      case 5: DECODE_TRY_ASSIGN(fn.start_line, scalar(f)); break;
      default: break;
    }
  }
  OFFWAKE_TRY(strings.get(name, fn.name));
  OFFWAKE_TRY(strings.get(system_name, fn.system_name));
  return strings.get(filename, fn.filename);
}

// Ids are nonzero and unique within their table.
template <typename T>
Status check_ids(const std::vector<T>& items, const char* what) {
  std::set<uint64_t> seen;
  for (const T& t : items) {
    if (t.id == 0) return Error(std::string(what) + " with id 0");
    if (!seen.insert(t.id).second) return Error(std::string(what) + " id " + std::to_string(t.id) + " repeated");
  }
  return ok_status();
}

Status check_references(const DecodedProfile& p) {
  OFFWAKE_TRY(check_ids(p.mappings, "mapping"));
  OFFWAKE_TRY(check_ids(p.locations, "location"));
  OFFWAKE_TRY(check_ids(p.functions, "function"));
  for (const auto& l : p.locations) {
    if (l.mapping_id && !p.mapping(l.mapping_id)) return Error("location to an undefined mapping");
    for (uint64_t f : l.function_ids)
      if (!p.function(f)) return Error("line of an undefined function");
  }
  for (const auto& s : p.samples) {
    if (s.values.size() != p.sample_types.size()) return Error("a sample without one value per sample type");
    for (uint64_t id : s.location_ids)
      if (!p.location(id)) return Error("sample of an undefined location " + std::to_string(id));
  }
  return ok_status();
}

}  // namespace

const DecodedLabel* DecodedSample::label(const std::string& key) const {
  for (const auto& l : labels)
    if (l.key == key) return &l;
  return nullptr;
}

template <typename T>
static const T* find_id(const std::vector<T>& items, uint64_t id) {
  for (const T& t : items)
    if (t.id == id) return &t;
  return nullptr;
}

const DecodedLocation* DecodedProfile::location(uint64_t id) const { return find_id(locations, id); }
const DecodedFunction* DecodedProfile::function(uint64_t id) const { return find_id(functions, id); }
const DecodedMapping* DecodedProfile::mapping(uint64_t id) const { return find_id(mappings, id); }

std::vector<std::string> DecodedProfile::function_names(const DecodedSample& s) const {
  std::vector<std::string> out;
  for (uint64_t id : s.location_ids) {
    const DecodedLocation* l = location(id);
    for (uint64_t f : l ? l->function_ids : std::vector<uint64_t>{}) {
      const DecodedFunction* fn = function(f);
      out.push_back(fn ? fn->name : "?");
    }
  }
  return out;
}

Result<DecodedProfile> decode_profile(std::span<const uint8_t> data) {
  auto fields = parse_fields(data);
  if (!fields) return fields.error();
  DecodedProfile p;
  for (const Field& f : *fields) {
    if (f.number != 6) continue;
    Span m;
    DECODE_TRY_ASSIGN(m, message(f));
    p.strings.emplace_back(m.begin(), m.end());
  }
  if (p.strings.empty() || !p.strings[0].empty()) return Error("string_table[0] is not \"\"");
  const Strings strings(p.strings);
  std::vector<uint64_t> comments;
  uint64_t default_sample_type = 0;
  for (const Field& f : *fields) {
    Span m;
    switch (f.number) {
      case 1:
        DECODE_TRY_ASSIGN(m, message(f));
        p.sample_types.emplace_back();
        OFFWAKE_TRY(decode_value_type(m, p.sample_types.back(), strings));
        break;
      case 2:
        DECODE_TRY_ASSIGN(m, message(f));
        p.samples.emplace_back();
        OFFWAKE_TRY(decode_sample(m, p.samples.back(), strings));
        break;
      case 3:
        DECODE_TRY_ASSIGN(m, message(f));
        p.mappings.emplace_back();
        OFFWAKE_TRY(decode_mapping(m, p.mappings.back(), strings));
        break;
      case 4:
        DECODE_TRY_ASSIGN(m, message(f));
        p.locations.emplace_back();
        OFFWAKE_TRY(decode_location(m, p.locations.back()));
        break;
      case 5:
        DECODE_TRY_ASSIGN(m, message(f));
        p.functions.emplace_back();
        OFFWAKE_TRY(decode_function(m, p.functions.back(), strings));
        break;
      case 9: DECODE_TRY_ASSIGN(p.time_nanos, scalar(f)); break;
      case 10: DECODE_TRY_ASSIGN(p.duration_nanos, scalar(f)); break;
      case 11:
        DECODE_TRY_ASSIGN(m, message(f));
        p.has_period_type = true;
        OFFWAKE_TRY(decode_value_type(m, p.period_type, strings));
        break;
      case 12: DECODE_TRY_ASSIGN(p.period, scalar(f)); break;
      case 13: OFFWAKE_TRY(append_varints(f, comments)); break;
      case 14: DECODE_TRY_ASSIGN(default_sample_type, scalar(f)); break;
      default: break;  // the string table (read above), and fields this reader does not know
    }
  }
  for (uint64_t c : comments) {
    p.comments.emplace_back();
    OFFWAKE_TRY(strings.get(c, p.comments.back()));
  }
  OFFWAKE_TRY(strings.get(default_sample_type, p.default_sample_type));
  OFFWAKE_TRY(check_references(p));
  return p;
}

}  // namespace offwake::test
