#include "bpf/event_reader.h"

#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <string>

namespace offwake::bpf {

Status deliver_event(const void* data, size_t size, const EventCallback& cb) {
  // Without a wakeup chain the BPF side sends the event without its key's chain.
  if (size != sizeof(offwake_event) && size != OFFWAKE_EVENT_BASE_SIZE)
    return Error("timeline event of " + std::to_string(size) + " bytes, expected " +
                     std::to_string(OFFWAKE_EVENT_BASE_SIZE) + " or " + std::to_string(sizeof(offwake_event)) +
                     " (BPF object and loader disagree)",
                 EPROTO);
  offwake_event e;
  std::memset(&e, 0, sizeof e);
  std::memcpy(&e, data, size);
  return cb(e);
}

void EventReader::RingBufferDeleter::operator()(struct ring_buffer* rb) const { ring_buffer__free(rb); }

Result<std::unique_ptr<EventReader>> EventReader::open(int ringbuf_fd) {
  std::unique_ptr<EventReader> r(new EventReader());
  // The reader is heap-allocated and never moves: libbpf keeps `this` as the callback context.
  struct ring_buffer* rb = ring_buffer__new(ringbuf_fd, &EventReader::on_sample, r.get(), nullptr);
  if (!rb) return Error::from_errno("opening the timeline ring buffer");
  r->rb_.reset(rb);
  return r;
}

// libbpf's sample callback: no exception may cross back into libbpf, and a negative
// return makes it stop after this record.
int EventReader::on_sample(void* ctx, void* data, size_t size) {
  auto* self = static_cast<EventReader*>(ctx);
  try {
    Status s = deliver_event(data, size, *self->cb_);
    if (!s) {
      self->status_ = s;
      return -ECANCELED;
    }
  } catch (const std::exception& e) {
    self->status_ = Error(std::string("timeline event callback threw: ") + e.what());
    return -ECANCELED;
  }
  ++self->delivered_;
  return 0;
}

Result<size_t> EventReader::finish(int ret, const char* what) {
  cb_ = nullptr;
  if (!status_) {
    Status s = status_;
    status_ = ok_status();
    return s.error();
  }
  if (ret < 0 && ret != -EINTR) return Error(what, -ret);
  return delivered_;
}

Result<size_t> EventReader::poll(int timeout_ms, const EventCallback& cb) {
  cb_ = &cb;
  delivered_ = 0;
  // Without a wait, read the ring directly: epoll would only report it after a wakeup,
  // and the BPF side wakes the reader only when it had caught up.
  int ret = timeout_ms == 0 ? ring_buffer__consume(rb_.get()) : ring_buffer__poll(rb_.get(), timeout_ms);
  return finish(ret, "reading the timeline ring buffer");
}

Result<size_t> EventReader::consume(const EventCallback& cb) { return poll(0, cb); }

int EventReader::epoll_fd() const { return ring_buffer__epoll_fd(rb_.get()); }

}  // namespace offwake::bpf
