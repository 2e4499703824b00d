#include "sched/sched_decoder.h"

#include <traceevent/event-parse.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "offwake.h"
#include "util/printable.h"

namespace offwake::sched {

namespace {

// The trace entry's common_flags: the context every ftrace record was written in.
constexpr unsigned kFlagHardirq = 0x08, kFlagSoftirq = 0x10, kFlagNmi = 0x40;

Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error::from_errno("reading " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The first __print_flags table in an event's print format: letter -> bit.
void find_flags(const tep_print_arg* a, std::map<std::string, uint64_t>& out) {
  for (; a && out.empty(); a = a->next) {
    switch (a->type) {
      case TEP_PRINT_FLAGS:
        for (const tep_print_flag_sym* f = a->flags.flags; f; f = f->next)
          if (f->value && f->str) out[f->str] = strtoull(f->value, nullptr, 0);
        break;
      case TEP_PRINT_OP:
        find_flags(a->op.left, out);
        find_flags(a->op.right, out);
        break;
      case TEP_PRINT_TYPE:
        find_flags(a->typecast.item, out);
        break;
      default:
        break;
    }
  }
}

Result<tep_format_field*> field(tep_event* e, const char* name, bool common = false) {
  tep_format_field* f = common ? tep_find_common_field(e, name) : tep_find_field(e, name);
  if (!f) return Error::bad_input(quote_text(std::string(e->system) + ":" + e->name) + " has no field " + name, EPROTO);
  return f;
}

}  // namespace

struct SchedDecoder::Layout {
  tep_event *switch_event = nullptr, *waking_event = nullptr;
  tep_format_field *type = nullptr, *flags = nullptr;
  tep_format_field *prev_comm = nullptr, *prev_pid = nullptr, *prev_state = nullptr, *next_comm = nullptr,
                   *next_pid = nullptr;
  tep_format_field *waking_flags = nullptr, *comm = nullptr, *pid = nullptr;
  // prev_state report bits, from sched_switch's print format.
  uint64_t s_bit = 0x1, d_bit = 0x2, i_bit = 0x80, preempt_bit = 0x100;
};

void SchedDecoder::TepDeleter::operator()(tep_handle* t) const { tep_free(t); }

SchedDecoder::SchedDecoder(SchedDecoder&&) noexcept = default;
SchedDecoder& SchedDecoder::operator=(SchedDecoder&&) noexcept = default;
SchedDecoder::~SchedDecoder() = default;

namespace {

// libtraceevent (1.7.1) can crash on a malformed format text, and a perf.data file's formats
// are input: they are parsed once in a child process first, so that a crash is an error.
Status formats_parse_safely(const std::string& switch_format, const std::string& waking_format) {
  const pid_t child = fork();
  if (child < 0) return Error::from_errno("forking to check the tracepoint formats");
  if (child == 0) {
    tep_handle* tep = tep_alloc();
    tep_event* e = nullptr;
    if (tep) {
      (void)tep_parse_format(tep, &e, switch_format.data(), switch_format.size(), "sched");
      (void)tep_parse_format(tep, &e, waking_format.data(), waking_format.size(), "sched");
    }
    _exit(0);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    return Error::bad_input("libtraceevent crashed parsing the sched tracepoint formats (signal " +
                     std::to_string(WTERMSIG(status)) + "): a malformed format description",
                 EPROTO);
  return ok_status();
}

}  // namespace

Result<SchedDecoder> SchedDecoder::from_formats(const std::string& switch_format, const std::string& waking_format) {
  OFFWAKE_TRY(formats_parse_safely(switch_format, waking_format));
  SchedDecoder d;
  d.tep_.reset(tep_alloc());
  if (!d.tep_) return Error("libtraceevent: out of memory", ENOMEM);
  auto parse = [&](const std::string& text, const char* name) -> Result<tep_event*> {
    tep_event* e = nullptr;
    enum tep_errno err = tep_parse_format(d.tep_.get(), &e, text.data(), text.size(), "sched");
    if (err != 0 || !e) {
      char buf[128] = "";
      tep_strerror(d.tep_.get(), err, buf, sizeof buf);
      return Error::bad_input(std::string("parsing the format of sched:") + name + ": " + buf, EPROTO);
    }
    if (std::strcmp(e->name, name) != 0)
      return Error::bad_input(std::string("the format of sched:") + name + " describes " + quote_text(e->name), EPROTO);
    return e;
  };
  auto sw = parse(switch_format, "sched_switch");
  if (!sw) return sw.error();
  auto wk = parse(waking_format, "sched_waking");
  if (!wk) return wk.error();
  auto l = std::make_unique<Layout>();
  l->switch_event = *sw;
  l->waking_event = *wk;
  struct {
    tep_format_field** out;
    tep_event* event;
    const char* name;
    bool common;
  } wanted[] = {
      {&l->type, *sw, "common_type", true},      {&l->flags, *sw, "common_flags", true},
      {&l->prev_comm, *sw, "prev_comm", false},  {&l->prev_pid, *sw, "prev_pid", false},
      {&l->prev_state, *sw, "prev_state", false}, {&l->next_comm, *sw, "next_comm", false},
      {&l->next_pid, *sw, "next_pid", false},    {&l->waking_flags, *wk, "common_flags", true},
      {&l->comm, *wk, "comm", false},            {&l->pid, *wk, "pid", false},
  };
  for (const auto& w : wanted) {
    auto f = field(w.event, w.name, w.common);
    if (!f) return f.error();
    *w.out = *f;
  }
  std::map<std::string, uint64_t> flags;
  find_flags((*sw)->print_fmt.args, flags);
  if (flags.count("S") && flags.count("D")) {
    l->s_bit = flags["S"];
    l->d_bit = flags["D"];
    uint64_t top = 0;
    for (const auto& [letter, bit] : flags) top = std::max(top, bit);
    l->i_bit = flags.count("I") ? flags["I"] : 0;
    // "+" (preempted) is TASK_REPORT_MAX, the bit above every flag.
    l->preempt_bit = top << 1;
  }
  d.switch_id_ = static_cast<uint64_t>((*sw)->id);
  d.waking_id_ = static_cast<uint64_t>((*wk)->id);
  d.layout_ = std::move(l);
  return d;
}

// Without tracefs, or its scheduler formats, this machine has no tracepoint back end.
Result<SchedDecoder> SchedDecoder::from_tracefs(const std::string& tracefs) {
  if (access((tracefs + "/events").c_str(), R_OK) != 0)
    return Error::from_errno("tracefs is not mounted at " + tracefs +
                                 " (mount -t tracefs nodev " + tracefs + ")",
                             ErrorKind::kUnavailable);
  auto sw = read_text(tracefs + "/events/sched/sched_switch/format");
  if (!sw) return sw.error().with_kind(ErrorKind::kUnavailable);
  auto wk = read_text(tracefs + "/events/sched/sched_waking/format");
  if (!wk) return wk.error().with_kind(ErrorKind::kUnavailable);
  return from_formats(*sw, *wk);
}

Status SchedDecoder::decode(std::span<const uint8_t> raw, SchedEvent& e) const {
  const Layout& l = *layout_;
  auto number = [&](const tep_format_field* f, unsigned long long& v) -> Status {
    if (f->offset < 0 || static_cast<size_t>(f->offset) + static_cast<size_t>(f->size) > raw.size())
      return Error::bad_input("sched tracepoint record of " + std::to_string(raw.size()) + " bytes: field " + f->name +
                       " is outside it",
                   EPROTO);
    if (tep_read_number_field(const_cast<tep_format_field*>(f), raw.data(), &v) != 0)
      return Error::bad_input(std::string("reading field ") + f->name, EPROTO);
    return ok_status();
  };
  auto text = [&](const tep_format_field* f, std::string& out) -> Status {
    if (f->offset < 0 || static_cast<size_t>(f->offset) + static_cast<size_t>(f->size) > raw.size())
      return Error::bad_input(std::string("sched tracepoint record: field ") + f->name + " is outside it", EPROTO);
    const char* p = reinterpret_cast<const char*>(raw.data()) + f->offset;
    out.assign(p, strnlen(p, static_cast<size_t>(f->size)));
    return ok_status();
  };
  unsigned long long type = 0, flags = 0, v = 0;
  OFFWAKE_TRY(number(l.type, type));
  if (type == switch_id_) {
    e.kind = SchedKind::kSwitch;
    OFFWAKE_TRY(text(l.prev_comm, e.prev_comm));
    OFFWAKE_TRY(text(l.next_comm, e.next_comm));
    OFFWAKE_TRY(number(l.prev_pid, v));
    e.prev_tid = static_cast<uint32_t>(v);
    OFFWAKE_TRY(number(l.next_pid, v));
    e.next_tid = static_cast<uint32_t>(v);
    OFFWAKE_TRY(number(l.prev_state, v));
    if (v & l.preempt_bit) e.prev_state = 0;
    else if (l.i_bit && (v & l.i_bit)) e.prev_state = OFFWAKE_STATE_UNINTERRUPTIBLE | OFFWAKE_STATE_NOLOAD;
    else if (v & l.d_bit) e.prev_state = OFFWAKE_STATE_UNINTERRUPTIBLE;
    else if (v & l.s_bit) e.prev_state = OFFWAKE_STATE_INTERRUPTIBLE;
    else e.prev_state = v ? 0x4 : 0;  // stopped, traced, dead, ...: not a block
    e.irq = 0;
    return ok_status();
  }
  if (type == waking_id_) {
    e.kind = SchedKind::kWaking;
    OFFWAKE_TRY(text(l.comm, e.target_comm));
    OFFWAKE_TRY(number(l.pid, v));
    e.target_tid = static_cast<uint32_t>(v);
    OFFWAKE_TRY(number(l.waking_flags, flags));
    e.irq = (flags & kFlagNmi)       ? OFFWAKE_WAKER_NMI
            : (flags & kFlagHardirq) ? OFFWAKE_WAKER_HARDIRQ
            : (flags & kFlagSoftirq) ? OFFWAKE_WAKER_SOFTIRQ
                                     : 0;
    return ok_status();
  }
  return Error::bad_input("a tracepoint record of type " + std::to_string(type) + ", neither sched_switch (" +
                   std::to_string(switch_id_) + ") nor sched_waking (" + std::to_string(waking_id_) + ")",
               EPROTO);
}

}  // namespace offwake::sched
