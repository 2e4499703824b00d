// A profile.proto reader of the tests' own, written from the .proto and the protocol buffer
// encoding rules, sharing nothing with the writer under test: what the encoder wrote is read
// back field by field and with every reference resolved.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "util/result.h"

namespace offwake::test {

struct DecodedLabel {
  std::string key, str;
  int64_t num = 0;
  std::string num_unit;
};

struct DecodedSample {
  std::vector<uint64_t> location_ids;
  std::vector<int64_t> values;
  std::vector<DecodedLabel> labels;
  const DecodedLabel* label(const std::string& key) const;  // nullptr when absent
};

struct DecodedMapping {
  uint64_t id = 0, memory_start = 0, memory_limit = 0, file_offset = 0;
  std::string filename, build_id;
  bool has_functions = false;
};

struct DecodedLocation {
  uint64_t id = 0, mapping_id = 0, address = 0;
  std::vector<uint64_t> function_ids;  // one per Line
};

struct DecodedFunction {
  uint64_t id = 0;
  std::string name, system_name, filename;
  int64_t start_line = 0;
};

struct DecodedProfile {
  std::vector<std::pair<std::string, std::string>> sample_types;  // (type, unit)
  std::vector<DecodedSample> samples;
  std::vector<DecodedMapping> mappings;
  std::vector<DecodedLocation> locations;
  std::vector<DecodedFunction> functions;
  std::vector<std::string> strings;
  int64_t time_nanos = 0, duration_nanos = 0, period = 0;
  std::pair<std::string, std::string> period_type;
  bool has_period_type = false;
  std::vector<std::string> comments;
  std::string default_sample_type;

  const DecodedLocation* location(uint64_t id) const;
  const DecodedFunction* function(uint64_t id) const;
  const DecodedMapping* mapping(uint64_t id) const;
  // The function names of a sample's locations, leaf first.
  std::vector<std::string> function_names(const DecodedSample& s) const;
};

// Decodes a profile.proto message (not gzipped). Malformed input, an index outside the string
// table, a string table not starting with "", or an id that is 0, repeated or not defined is
// an error.
Result<DecodedProfile> decode_profile(std::span<const uint8_t> data);

}  // namespace offwake::test
