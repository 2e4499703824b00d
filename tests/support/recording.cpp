#include "support/recording.h"

#include <map>

#include "support/paths.h"
#include "support/truth.h"

namespace offwake::test {

const Recording& recording(const std::string& workload, const std::string& options) {
  static std::map<std::string, Recording> cache;
  const std::string key = workload + "|" + options;
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  Recording& r = cache[key];
  r.data = r.dir->file("perf.data");
  r.record = run(kOffwake + " record " + options + " -o " + r.data + " -- " + kWorkloads + workload);
  auto truths = parse_truth(r.record.out);
  if (truths.size() == 1) r.truth = truths[0];
  return r;
}

}  // namespace offwake::test
