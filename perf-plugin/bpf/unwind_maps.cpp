#include "bpf/unwind_maps.h"

#include <bpf/bpf.h>
#include <sys/mman.h>

#include <cerrno>
#include <utility>

#include "bpf/offwake_loader.h"

namespace offwake::bpf {

Result<UnwindMaps> UnwindMaps::open(const OffwakeBpf& bpf) {
  const uint32_t capacity = bpf.unwind_rows_capacity();
  if (capacity == 0) return Error("the BPF programs were loaded without unwind tables", EINVAL);
  const size_t bytes = size_t{capacity} * sizeof(offwake_unwind_row);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, bpf.unwind_rows_fd(), 0);
  if (p == MAP_FAILED) return Error::from_errno("mapping the unwind table memory");
  return UnwindMaps(static_cast<offwake_unwind_row*>(p), capacity, bpf.unwind_processes_fd(),
                    bpf.unwind_wanted_fd(), bpf.unwind_tables_epoch());
}

UnwindMaps::UnwindMaps(UnwindMaps&& o) noexcept
    : rows_(std::exchange(o.rows_, nullptr)),
      capacity_(std::exchange(o.capacity_, 0)),
      processes_fd_(o.processes_fd_),
      wanted_fd_(o.wanted_fd_),
      epoch_(std::exchange(o.epoch_, nullptr)),
      publish_failures_(o.publish_failures_) {}

UnwindMaps::~UnwindMaps() {
  if (rows_) munmap(rows_, size_t{capacity_} * sizeof(offwake_unwind_row));
}

void UnwindMaps::publish(uint32_t tgid, const offwake_unwind_process* value) {
  // Before the change: a walk that reads the epoch after it looks the tables up again.
  __atomic_fetch_add(epoch_, 1, __ATOMIC_SEQ_CST);
  if (!value) {
    bpf_map_delete_elem(processes_fd_, &tgid);  // ENOENT: it had none
    return;
  }
  if (bpf_map_update_elem(processes_fd_, &tgid, value, BPF_ANY) != 0) ++publish_failures_;
}

std::vector<uint32_t> UnwindMaps::requests() const {
  std::vector<uint32_t> out;
  if (wanted_fd_ < 0) return out;
  uint32_t key = 0;
  const uint32_t* prev = nullptr;
  while (bpf_map_get_next_key(wanted_fd_, prev, &key) == 0) {
    out.push_back(key);
    prev = &out.back();
  }
  return out;
}

void UnwindMaps::forget_request(uint32_t tgid) {
  if (wanted_fd_ >= 0) bpf_map_delete_elem(wanted_fd_, &tgid);  // ENOENT: it never asked
}

}  // namespace offwake::bpf
