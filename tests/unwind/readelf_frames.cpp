#include "unwind/readelf_frames.h"

#include <algorithm>
#include <map>
#include <regex>
#include <sstream>

#include "support/run.h"

namespace offwake::test {
namespace {

const std::regex kCie(R"(^([0-9a-f]+) [0-9a-f]+ [0-9a-f]+ CIE \"([^\"]*)\")");
const std::regex kFde(R"(^([0-9a-f]+) [0-9a-f]+ [0-9a-f]+ FDE cie=([0-9a-f]+) pc=([0-9a-f]+)\.\.([0-9a-f]+))");
const std::regex kHeader(R"(^\s+LOC\s+CFA\b)");
// 16 digits: entry headers and "ZERO terminator" lines start with 8.
const std::regex kRow(R"(^([0-9a-f]{16}) (.*)$)");
// A cell: "rsp+8", "c-16", "u", "exp", or a register rule, which readelf prints as two words:
// "r9 (r9)".
const std::regex kCell(R"(r\d+ \([a-z0-9]+\)|\S+)");
const std::regex kRegPlus(R"(^([a-z0-9]+)([+-]\d+)$)");

uint64_t hex(const std::string& s) { return std::stoull(s, nullptr, 16); }

struct Cie {
  bool signal = false;
  ReadelfFde::Row initial{};
};

std::vector<std::string> cells(const std::string& s) {
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), kCell); it != std::sregex_iterator(); ++it)
    out.push_back(it->str());
  return out;
}

}  // namespace

std::vector<ReadelfFde> parse_frames_interp(const std::string& text) {
  std::vector<ReadelfFde> out;
  std::map<std::pair<bool, uint64_t>, Cie> cies;
  bool debug = false;
  Cie* cie = nullptr;          // the CIE whose rows follow, if any
  ReadelfFde* fde = nullptr;   // the FDE whose rows follow, if any
  std::vector<std::string> columns;
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  std::vector<std::pair<size_t, uint64_t>> pending;  // FDE index -> its CIE's offset
  while (std::getline(in, line)) {
    if (line.rfind("Contents of the .debug_frame", 0) == 0) debug = true;
    if (line.rfind("Contents of the .eh_frame", 0) == 0) debug = false;
    if (std::regex_search(line, m, kCie)) {
      fde = nullptr;
      cie = &cies[{debug, hex(m[1])}];
      cie->signal = m[2].str().find('S') != std::string::npos;
      continue;
    }
    if (std::regex_search(line, m, kFde)) {
      cie = nullptr;
      out.push_back({});
      fde = &out.back();
      fde->debug_frame = debug;
      fde->start = hex(m[3]);
      fde->end = hex(m[4]);
      pending.push_back({out.size() - 1, hex(m[2])});
      continue;
    }
    if (std::regex_search(line, kHeader)) {
      columns = cells(line);  // "LOC", "CFA", register names, "ra"
      continue;
    }
    if ((fde || cie) && std::regex_match(line, m, kRow)) {
      std::vector<std::string> c = cells(m[2].str());
      ReadelfFde::Row row{hex(m[1]), "", "", ""};
      for (size_t i = 0; i < c.size() && i + 1 < columns.size(); ++i) {
        const std::string& col = columns[i + 1];
        if (col == "CFA") row.cfa = c[i];
        else if (col == "rbp") row.rbp = c[i];
        else if (col == "ra") row.ra = c[i];
      }
      if (fde)
        fde->rows.push_back(row);
      else
        cie->initial = row;
    }
  }
  // The CIE's rules once all are read (a CIE may follow its FDEs); an FDE without rows of its
  // own has its CIE's initial rules over its whole range.
  for (auto [index, cie_offset] : pending) {
    ReadelfFde& f = out[index];
    const Cie& c = cies[{f.debug_frame, cie_offset}];
    f.signal = c.signal;
    if (f.rows.empty()) f.rows.push_back({f.start, c.initial.cfa, c.initial.rbp, c.initial.ra});
  }
  return out;
}

std::vector<ReadelfFde> readelf_frames(const std::string& path, std::string* error) {
  RunResult r = run("readelf --debug-dump=frames-interp '" + path + "'");
  // readelf exits 1 on libc with nothing on stderr and the whole dump on stdout.
  if (r.out.find("Contents of the ") == std::string::npos) {
    *error = "readelf failed (" + std::to_string(r.status) + "): " + r.err;
    return {};
  }
  return parse_frames_interp(r.out);
}

uint32_t readelf_rule(bool signal, const std::string& cfa, const std::string& rbp, const std::string& ra) {
  auto pack = [](uint32_t kind, uint32_t cfa_offset = 0, int32_t rbp_offset = 0) {
    return offwake_unwind_pack(kind, cfa_offset, rbp_offset);
  };
  if (signal) return pack(OFFWAKE_UNWIND_SIGNAL);
  if (ra == "u") return pack(OFFWAKE_UNWIND_END_OF_STACK);
  std::smatch m;
  uint32_t kind, cfa_offset;
  if (cfa == "exp") return pack(OFFWAKE_UNWIND_EXPRESSION);
  if (!std::regex_match(cfa, m, kRegPlus)) return pack(OFFWAKE_UNWIND_UNSUPPORTED);
  if (m[1] == "rsp") kind = OFFWAKE_UNWIND_CFA_RSP;
  else if (m[1] == "rbp") kind = OFFWAKE_UNWIND_CFA_RBP;
  else return pack(OFFWAKE_UNWIND_UNSUPPORTED);
  long long n = std::stoll(m[2]);
  if (n < 0 || n > OFFWAKE_UNWIND_CFA_MAX) return pack(OFFWAKE_UNWIND_UNSUPPORTED);
  cfa_offset = static_cast<uint32_t>(n);
  if (ra == "exp" || ra == "vexp") return pack(OFFWAKE_UNWIND_EXPRESSION);
  // vfork's return address, popped into rdi: from rsp, rbp untouched.
  if (ra == "r5 (rdi)")
    return pack(kind == OFFWAKE_UNWIND_CFA_RSP && (rbp.empty() || rbp == "u" || rbp == "s") ? OFFWAKE_UNWIND_RA_RDI
                                                                                           : OFFWAKE_UNWIND_UNSUPPORTED,
                kind == OFFWAKE_UNWIND_CFA_RSP ? cfa_offset : 0);
  if (ra != "c-8") return pack(OFFWAKE_UNWIND_UNSUPPORTED);
  if (rbp.empty() || rbp == "u" || rbp == "s") return pack(kind, cfa_offset, 0);
  if (rbp == "exp" || rbp == "vexp") return pack(OFFWAKE_UNWIND_EXPRESSION);
  if (rbp.size() < 2 || rbp[0] != 'c') return pack(OFFWAKE_UNWIND_UNSUPPORTED);
  long long r = std::stoll(rbp.substr(1));
  if (r == 0 || r % 8 != 0 || r < OFFWAKE_UNWIND_RBP_MIN || r > OFFWAKE_UNWIND_RBP_MAX)
    return pack(OFFWAKE_UNWIND_UNSUPPORTED);
  return pack(kind, cfa_offset, static_cast<int32_t>(r));
}

uint32_t collapse(uint32_t rule) {
  uint32_t kind = offwake_unwind_kind(rule);
  if (kind == OFFWAKE_UNWIND_CFA_RSP || kind == OFFWAKE_UNWIND_CFA_RBP || kind == OFFWAKE_UNWIND_RA_RDI) return rule;
  if (kind == OFFWAKE_UNWIND_PLT) kind = OFFWAKE_UNWIND_EXPRESSION;
  return offwake_unwind_pack(kind, 0, 0);
}

namespace {

struct Piece {
  uint64_t start, end;
  const ReadelfFde* fde;
};

void push_merged(std::vector<TruthRow>& rows, TruthRow r) {
  if (!rows.empty() && rows.back().pc == r.pc) rows.pop_back();
  if (!rows.empty() && rows.back().rule == r.rule) return;
  rows.push_back(r);
}

}  // namespace

std::vector<TruthRow> truth_rows(const std::vector<ReadelfFde>& fdes) {
  std::vector<Piece> eh, debug;
  for (const ReadelfFde& f : fdes)
    if (f.end > f.start) (f.debug_frame ? debug : eh).push_back({f.start, f.end, &f});
  auto by_start = [](const Piece& a, const Piece& b) { return a.start < b.start; };
  std::sort(eh.begin(), eh.end(), by_start);
  std::vector<Piece> pieces = eh;
  // .debug_frame where no .eh_frame FDE is: cut each debug FDE around every eh one.
  for (const Piece& d : debug) {
    std::vector<Piece> left{d};
    for (const Piece& e : eh) {
      std::vector<Piece> next;
      for (const Piece& p : left) {
        if (e.end <= p.start || e.start >= p.end) {
          next.push_back(p);
          continue;
        }
        if (p.start < e.start) next.push_back({p.start, e.start, p.fde});
        if (e.end < p.end) next.push_back({e.end, p.end, p.fde});
      }
      left = std::move(next);
    }
    pieces.insert(pieces.end(), left.begin(), left.end());
  }
  std::sort(pieces.begin(), pieces.end(), by_start);

  std::vector<TruthRow> rows;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Piece& p = pieces[i];
    const auto& fr = p.fde->rows;
    for (size_t j = 0; j < fr.size(); ++j) {
      uint64_t from = std::max(fr[j].loc, p.start);
      uint64_t to = std::min(j + 1 < fr.size() ? fr[j + 1].loc : p.fde->end, p.end);
      if (from >= to) continue;
      push_merged(rows, {from, collapse(readelf_rule(p.fde->signal, fr[j].cfa, fr[j].rbp, fr[j].ra))});
    }
    if (i + 1 == pieces.size() || pieces[i + 1].start > p.end)
      push_merged(rows, {p.end, offwake_unwind_pack(OFFWAKE_UNWIND_NONE, 0, 0)});
  }
  return rows;
}

std::vector<TruthRow> collapsed_rows(const std::vector<TruthRow>& rows) {
  std::vector<TruthRow> out;
  for (const TruthRow& r : rows) push_merged(out, {r.pc, collapse(r.rule)});
  return out;
}

}  // namespace offwake::test
