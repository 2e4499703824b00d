// A perf.data as Debian's perf itself decodes it, for tests that check our files without our
// own reader: each sample's fields, resolved callchain and PERF_SAMPLE_RAW bytes through perf's
// Python scripting (perf_sample_fields.py), and its callchain as recorded, context markers
// included, from perf's dump (perf script -D). Golden tests compare these field by field with
// the inputs the golden file was written from.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "support/run.h"

namespace offwake::test {

struct PerfDecodedSample {
  std::string event;
  uint32_t pid = 0, tid = 0, cpu = 0, cpumode = 0;  // cpumode: misc & PERF_RECORD_MISC_CPUMODE_MASK
  uint64_t time = 0, period = 0, ip = 0;
  std::vector<uint64_t> frames;     // leaf first, as perf resolved them (no context markers)
  std::vector<uint64_t> chain;      // the callchain as recorded, with PERF_CONTEXT_* markers
  std::vector<uint8_t> raw;         // PERF_SAMPLE_RAW payload (perf's raw_buf), padding included
};

inline std::vector<uint64_t> parse_hex_list(const std::string& s) {
  std::vector<uint64_t> out;
  std::istringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(std::stoull(item, nullptr, 16));
  return out;
}

inline std::vector<uint8_t> parse_hex_bytes(const std::string& s) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < s.size(); i += 2) out.push_back(static_cast<uint8_t>(std::stoul(s.substr(i, 2), nullptr, 16)));
  return out;
}

// "sample event=... pid=... ..." lines of perf_sample_fields.py.
inline std::vector<PerfDecodedSample> parse_sample_fields(const std::string& text) {
  std::vector<PerfDecodedSample> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("sample ", 0) != 0) continue;
    PerfDecodedSample s;
    std::istringstream words(line.substr(7));
    std::string word;
    while (words >> word) {
      const size_t eq = word.find('=');
      if (eq == std::string::npos) continue;
      const std::string key = word.substr(0, eq), v = word.substr(eq + 1);
      if (key == "event") s.event = v;
      else if (key == "pid") s.pid = static_cast<uint32_t>(std::stoul(v));
      else if (key == "tid") s.tid = static_cast<uint32_t>(std::stoul(v));
      else if (key == "cpu") s.cpu = static_cast<uint32_t>(std::stoul(v));
      else if (key == "cpumode") s.cpumode = static_cast<uint32_t>(std::stoul(v));
      else if (key == "time") s.time = std::stoull(v);
      else if (key == "period") s.period = std::stoull(v);
      else if (key == "ip") s.ip = std::stoull(v, nullptr, 16);
      else if (key == "frames") s.frames = parse_hex_list(v);
      else if (key == "raw") s.raw = parse_hex_bytes(v);
    }
    out.push_back(std::move(s));
  }
  return out;
}

// The callchains of perf script -D, one per PERF_RECORD_SAMPLE in file order:
//   "... FP chain: nr:N" then N lines ".....  I: HEX".
inline std::vector<std::vector<uint64_t>> parse_dump_chains(const std::string& text) {
  std::vector<std::vector<uint64_t>> out;
  std::istringstream lines(text);
  std::string line;
  size_t left = 0;  // entries of the current chain still to read
  while (std::getline(lines, line)) {
    if (line.find("PERF_RECORD_SAMPLE(") != std::string::npos) {
      out.emplace_back();
      left = 0;
    } else if (const size_t nr = line.find("... FP chain: nr:"); nr == 0 && !out.empty()) {
      left = std::stoul(line.substr(17));
    } else if (left > 0 && line.rfind(".....", 0) == 0) {
      out.back().push_back(std::stoull(line.substr(line.find(':') + 1), nullptr, 16));
      --left;
    }
  }
  return out;
}

// Every sample of `file` as `perf` decodes it; empty, with `error` set, if perf failed.
inline std::vector<PerfDecodedSample> perf_decoded_samples(const std::string& perf, const std::string& file,
                                                           std::string* error) {
  const RunResult fields =
      run(perf + " script -s " OFFWAKE_SOURCE_DIR "/tests/support/perf_sample_fields.py -i " + file);
  const RunResult dump = run(perf + " script -D -i " + file);
  if (fields.status != 0 || dump.status != 0) {
    *error = "perf script failed: " + fields.err + dump.err;
    return {};
  }
  std::vector<PerfDecodedSample> samples = parse_sample_fields(fields.out);
  const std::vector<std::vector<uint64_t>> chains = parse_dump_chains(dump.out);
  if (chains.size() != samples.size()) {
    *error = "perf's dump shows " + std::to_string(chains.size()) + " samples, its scripting " +
             std::to_string(samples.size()) + ":\n" + fields.out;
    return {};
  }
  for (size_t i = 0; i < samples.size(); ++i) samples[i].chain = chains[i];
  return samples;
}

}  // namespace offwake::test
