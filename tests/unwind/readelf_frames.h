// The independent reader the unwind tests compare against: binutils' readelf
// --debug-dump=frames-interp, parsed into the same step function of rules that an unwind
// table is. readelf shows every DWARF expression as "exp", so the PLT rule and other
// expressions are one kind here (collapse()).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "unwind_row.h"

namespace offwake::test {

// readelf's view of one FDE: its range and rows (text columns), with its CIE's.
struct ReadelfFde {
  bool debug_frame = false;
  bool signal = false;  // its CIE's augmentation has 'S'
  uint64_t start = 0, end = 0;
  struct Row {
    uint64_t loc;
    std::string cfa, rbp, ra;  // rbp "" when readelf shows no rbp column
  };
  std::vector<Row> rows;  // the CIE's initial row when the FDE itself has none
};

std::vector<ReadelfFde> parse_frames_interp(const std::string& text);

// Runs readelf on `path` and parses it; an empty result with `error` set if it fails.
std::vector<ReadelfFde> readelf_frames(const std::string& path, std::string* error);

// A rule in unwind_row.h's terms from readelf's columns, with the precedence of
// classify_frame: signal, undefined return address, CFA, return address, rbp.
uint32_t readelf_rule(bool signal, const std::string& cfa, const std::string& rbp, const std::string& ra);

// PLT rules become EXPRESSION, and the fields of rules that have none are zeroed.
uint32_t collapse(uint32_t rule);

struct TruthRow {
  uint64_t pc;
  uint32_t rule;  // collapsed
  bool operator==(const TruthRow&) const = default;
};

// The step function of the FDEs as the unwind table defines it: .eh_frame first, .debug_frame
// only where .eh_frame says nothing, NONE after each FDE that the next does not adjoin,
// adjacent equal rules merged. FDEs must not overlap within a section (checked by the tests).
std::vector<TruthRow> truth_rows(const std::vector<ReadelfFde>& fdes);

// Merges adjacent rows whose collapsed rules are equal: the tables' rows in truth_rows' terms.
std::vector<TruthRow> collapsed_rows(const std::vector<TruthRow>& rows);

}  // namespace offwake::test
