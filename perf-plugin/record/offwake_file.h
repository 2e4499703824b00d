// What the commands that write an offwake recording (perf offwake record, perf offwake
// convert) check and do before they start: the previous output moved aside, the --state
// letters. The pseudo-threads' names, the samples and the losses at the end are
// samples/block_writer.h's.
#pragma once

#include <cstdint>
#include <string>

#include "util/result.h"

namespace offwake {

// Whether `path` exists.
bool path_exists(const std::string& path);

// An existing `output` (not "-") becomes output.old, as perf record does.
Status move_old_output(const std::string& output);

// --state letters (S, D, I) into OFFWAKE_WANT_* bits.
Result<uint32_t> parse_state_letters(const std::string& letters);

}  // namespace offwake
