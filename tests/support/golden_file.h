// Golden files: the writer's output for fixed inputs, compared byte for byte, and rewritten
// (never by hand) when a test runs with OFFWAKE_REGENERATE_GOLDEN=1.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include "perfdata/bytes.h"

namespace offwake::test {

inline bool regenerating_golden() {
  const char* v = std::getenv("OFFWAKE_REGENERATE_GOLDEN");
  return v && std::string(v) == "1";
}

// Compares `produced` with the file at `path` and names the first byte that differs, or
// rewrites the file when regenerating.
inline void check_golden(const std::string& path, const perfdata::Bytes& produced) {
  ASSERT_FALSE(produced.empty());
  if (regenerating_golden()) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(produced.data()), static_cast<std::streamsize>(produced.size()));
    ASSERT_TRUE(out.good()) << "writing " << path;
    std::cout << "regenerated " << path << " (" << produced.size() << " bytes)\n";
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in.good()) << path << " is missing; run this test with OFFWAKE_REGENERATE_GOLDEN=1";
  perfdata::Bytes golden((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (golden == produced) return;
  size_t i = 0;
  while (i < golden.size() && i < produced.size() && golden[i] == produced[i]) ++i;
  ADD_FAILURE() << path << " differs from the writer's output at byte " << i << " (golden " << golden.size()
                << " bytes, writer " << produced.size()
                << " bytes). If the change is intended, rerun with OFFWAKE_REGENERATE_GOLDEN=1 and review the diff.";
}

}  // namespace offwake::test
