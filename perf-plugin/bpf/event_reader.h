// Reads timeline-mode blocks (struct offwake_event) out of the BPF ring buffer.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "offwake.h"
#include "util/result.h"

struct ring_buffer;

namespace offwake::bpf {

// Called once per event, in ring-buffer order. An error stops the reading and is returned
// by the read call; the event that failed is consumed all the same.
using EventCallback = std::function<Status(const offwake_event&)>;

// Checks one ring-buffer record and passes it to `cb`: a record that is not exactly one
// struct offwake_event (a loader and a BPF object that disagree) is an error.
Status deliver_event(const void* data, size_t size, const EventCallback& cb);

class EventReader {
 public:
  // A consumer of the BPF_MAP_TYPE_RINGBUF map `ringbuf_fd` (which must outlive it).
  static Result<std::unique_ptr<EventReader>> open(int ringbuf_fd);

  EventReader(const EventReader&) = delete;
  EventReader& operator=(const EventReader&) = delete;

  // Waits up to timeout_ms (0: not at all, -1: forever) for events, then reads all that
  // are there. Returns how many were delivered. An interrupted wait (EINTR) reads nothing.
  Result<size_t> poll(int timeout_ms, const EventCallback& cb);
  // Reads every event there is without waiting (the end of a recording).
  Result<size_t> consume(const EventCallback& cb);
  // Readable when events wait; for a caller that polls several sources itself.
  int epoll_fd() const;

 private:
  EventReader() = default;
  static int on_sample(void* ctx, void* data, size_t size);
  Result<size_t> finish(int ret, const char* what);

  struct RingBufferDeleter {
    void operator()(struct ring_buffer* rb) const;
  };
  std::unique_ptr<struct ring_buffer, RingBufferDeleter> rb_;
  // Set for the duration of one poll/consume call.
  const EventCallback* cb_ = nullptr;
  Status status_ = ok_status();
  size_t delivered_ = 0;
};

}  // namespace offwake::bpf
