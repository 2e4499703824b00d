// What the commands that write an offwake recording (perf offwake record, perf offwake
// convert) check and do: the previous output moved aside as the new one is committed, or
// the stream opened, the --state letters. The pseudo-threads' names, the samples and the losses at the end are
// samples/block_writer.h's.
#pragma once

#include <cstdint>
#include <string>

#include "util/fd.h"
#include "util/result.h"

namespace offwake {

// Whether `path` exists.
bool path_exists(const std::string& path);

// Whether perf.data goes out as a stream (pipe mode): to standard output ("-"), or into a
// FIFO that exists, as perf record writes into one.
bool output_is_stream(const std::string& output);
// The stream's descriptor: standard output's duplicate, or the FIFO opened for writing (which
// waits for its reader, as perf record does).
Result<UniqueFd> open_output_stream(const std::string& output);
// How messages name the output: "standard output" for "-".
std::string output_name(const std::string& output);

// An existing `output` (not a stream) becomes output.old, as perf record does, unless it is
// empty. Called when the new file is complete (PerfDataWriter::close's BeforeCommit): a
// recording that fails leaves the existing file as it was.
Status move_old_output(const std::string& output);

// --state letters (S, D, I) into OFFWAKE_WANT_* bits.
Result<uint32_t> parse_state_letters(const std::string& letters);

}  // namespace offwake
