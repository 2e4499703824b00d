#include "bpf/aggregates.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace offwake::bpf {

namespace {

// Every bucket, in batches (two system calls per key would take seconds for 100,000 keys),
// each batch handed to `fn`, and deleted as it is read when `remove`.
// The map's key size: the part of struct offwake_key its chain depth uses (OFFWAKE_KEY_SIZE).
Result<size_t> key_size(int map_fd) {
  struct bpf_map_info info {};
  __u32 len = sizeof info;
  if (bpf_obj_get_info_by_fd(map_fd, &info, &len) != 0) return Error::from_errno("reading aggregation map info");
  if (info.key_size < OFFWAKE_KEY_BASE_SIZE || info.key_size > sizeof(offwake_key))
    return Error("aggregation map key of " + std::to_string(info.key_size) + " bytes (BPF object and reader disagree)",
                 EPROTO);
  return size_t{info.key_size};
}

Status batch_aggregates(int map_fd, bool remove, const AggregateBatchFn& fn) {
  constexpr __u32 kBatch = 4096;
  auto size = key_size(map_fd);
  if (!size) return size.error();
  std::vector<uint8_t> keys(kBatch * *size);
  std::vector<offwake_value> values(kBatch);
  std::vector<Aggregate> batch;
  batch.reserve(kBatch);
  offwake_key out_batch{};  // hash maps use a 4-byte bucket cursor; a key is larger
  void* in_batch = nullptr;
  LIBBPF_OPTS(bpf_map_batch_opts, opts);
  for (;;) {
    __u32 count = kBatch;
    int err = remove ? bpf_map_lookup_and_delete_batch(map_fd, in_batch, &out_batch, keys.data(), values.data(),
                                                       &count, &opts)
                     : bpf_map_lookup_batch(map_fd, in_batch, &out_batch, keys.data(), values.data(), &count, &opts);
    int e = errno;
    batch.clear();
    for (__u32 i = 0; i < count; ++i) {
      Aggregate a{};
      std::memcpy(&a.key, keys.data() + i * *size, *size);  // the rest of the chain stays zero
      a.value = values[i];
      batch.push_back(a);
    }
    if (!batch.empty()) OFFWAKE_TRY(fn(batch));
    if (err != 0) {
      if (e == ENOENT) return ok_status();  // no more buckets
      return Error(remove ? "draining aggregation map" : "reading aggregation map", e);
    }
    in_batch = &out_batch;
  }
}

Result<std::vector<Aggregate>> collect(int map_fd, bool remove) {
  std::vector<Aggregate> out;
  OFFWAKE_TRY(batch_aggregates(map_fd, remove, [&](std::span<const Aggregate> b) {
    out.insert(out.end(), b.begin(), b.end());
    return ok_status();
  }));
  return out;
}

}  // namespace

Result<std::vector<Aggregate>> read_aggregates(int map_fd) { return collect(map_fd, false); }

Result<std::vector<Aggregate>> drain_aggregates(int map_fd) { return collect(map_fd, true); }

Status visit_aggregates(int map_fd, const AggregateBatchFn& fn) { return batch_aggregates(map_fd, false, fn); }

Status drain_aggregates(int map_fd, const AggregateBatchFn& fn) { return batch_aggregates(map_fd, true, fn); }

Result<offwake_counters> read_counters(int map_fd) {
  static_assert(sizeof(offwake_counters) % sizeof(uint64_t) == 0);
  constexpr size_t kFields = sizeof(offwake_counters) / sizeof(uint64_t);
  int ncpus = libbpf_num_possible_cpus();
  if (ncpus <= 0) return Error("counting possible CPUs", -ncpus);
  std::vector<offwake_counters> per_cpu(static_cast<size_t>(ncpus));
  __u32 zero = 0;
  if (bpf_map_lookup_elem(map_fd, &zero, per_cpu.data()) != 0)
    return Error::from_errno("reading loss counters");
  uint64_t sum[kFields] = {};
  for (const auto& c : per_cpu) {
    uint64_t fields[kFields];
    std::memcpy(fields, &c, sizeof(c));
    for (size_t i = 0; i < kFields; ++i) sum[i] += fields[i];
  }
  offwake_counters total;
  std::memcpy(&total, sum, sizeof(total));
  return total;
}

}  // namespace offwake::bpf
