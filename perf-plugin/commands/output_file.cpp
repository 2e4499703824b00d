#include "commands/output_file.h"

#include <fcntl.h>
#include <unistd.h>

#include "perfdata/sink.h"
#include "perfdata/writer.h"
#include "util/fd.h"

namespace offwake {

Status write_file(const std::string& path, const void* data, size_t size) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  UniqueFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd.valid()) return Error::from_errno("cannot create " + path);  // the user's name, not ours
  perfdata::PendingFile pending(tmp);
  perfdata::FdSink sink(std::move(fd), path, false);
  OFFWAKE_TRY(sink.write({static_cast<const uint8_t*>(data), size}));
  OFFWAKE_TRY(sink.flush());
  if (fsync(sink.fd()) != 0) return Error::from_errno("writing " + path);
  return pending.commit(path);
}

}  // namespace offwake
