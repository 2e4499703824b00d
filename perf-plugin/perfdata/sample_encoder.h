// PERF_RECORD_SAMPLE and the sample_id trailer: fields in exact sample_type bit order.
#pragma once

#include <span>

#include "perfdata/bytes.h"
#include "perfdata/records.h"

namespace offwake::perfdata {

// Ok when every bit of sample_type is one this implementation encodes.
Status check_sample_type(uint64_t sample_type);

Result<Bytes> encode_sample(const perf_event_attr& attr, const SampleRecord& sample);
Result<SampleRecord> decode_sample(const perf_event_attr& attr, uint16_t misc,
                                   std::span<const uint8_t> payload);

// The trailer of non-sample records; empty unless attr.sample_id_all.
void put_sample_id(ByteWriter& w, const perf_event_attr& attr, const SampleId& id);
Result<SampleId> get_sample_id(ByteReader& r, const perf_event_attr& attr);
size_t sample_id_size(const perf_event_attr& attr);

// Starts a record: writes a header whose size finish_record() fills in.
void begin_record(ByteWriter& w, uint32_t type, uint16_t misc);
Result<Bytes> finish_record(ByteWriter&& w);

}  // namespace offwake::perfdata
