// gzip (RFC 1952) of a buffer in memory, with zlib: pprof files are gzipped profile.proto.
#pragma once

#include <cstdint>
#include <span>

#include "perfdata/bytes.h"
#include "util/result.h"

namespace offwake::report {

Result<perfdata::Bytes> gzip(std::span<const uint8_t> data);

}  // namespace offwake::report
