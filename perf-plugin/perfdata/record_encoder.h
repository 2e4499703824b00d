// One encoder per record type. `id_attr` is the attr whose sample_type lays out the sample_id
// trailer of non-sample records (the first event's; the writer checks they all agree).
#pragma once

#include <span>

#include "perfdata/bytes.h"
#include "perfdata/records.h"

namespace offwake::perfdata {

Result<Bytes> encode_comm(const perf_event_attr& id_attr, const CommRecord& r);
Result<Bytes> encode_mmap2(const perf_event_attr& id_attr, const Mmap2Record& r);
Result<Bytes> encode_task(const perf_event_attr& id_attr, const TaskRecord& r);
Result<Bytes> encode_lost(const perf_event_attr& id_attr, const LostRecord& r);
Result<Bytes> encode_lost_samples(const perf_event_attr& id_attr, const LostSamplesRecord& r);
Result<Bytes> encode_cgroup(const perf_event_attr& id_attr, const CgroupRecord& r);
Result<Bytes> encode_namespaces(const perf_event_attr& id_attr, const NamespacesRecord& r);
Bytes encode_finished_round();
Bytes encode_finished_init();

// Pipe mode: an event's attr and ids, and one feature section.
Result<Bytes> encode_header_attr(const EventDesc& event);
Result<Bytes> encode_header_feature(int feature, std::span<const uint8_t> section);

// The decoders of the same records. `payload` is what follows the perf_event_header.
Result<Record> decode_record(const perf_event_attr& id_attr, const perf_event_header& header,
                             std::span<const uint8_t> payload);

}  // namespace offwake::perfdata
