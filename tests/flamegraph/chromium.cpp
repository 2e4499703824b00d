#include "flamegraph/chromium.h"

namespace offwake::test {

namespace {

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

RunResult run_chromium(const TempDir& profile, const std::string& args) {
  // --no-sandbox: root (CI) cannot use the setuid-less sandbox. --disable-gpu: no GPU here.
  // The rest keep a first run quiet: no first-run tabs, no crash reporter, no updates.
  // timeout: a Chromium that hangs fails its test instead of holding up the whole suite.
  return run("timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run --no-default-browser-check "
             "--disable-breakpad --disable-component-update --hide-scrollbars --user-data-dir=" +
             quoted(profile.path()) + " " + args);
}

RunResult chromium_screenshot(const TempDir& profile, const std::string& page, const std::string& png, int width,
                              int height) {
  return run_chromium(profile, "--screenshot=" + quoted(png) + " --window-size=" + std::to_string(width) + "," +
                                   std::to_string(height) + " " + quoted("file://" + page));
}

RunResult chromium_dump_dom(const TempDir& profile, const std::string& page, int budget_ms) {
  // --allow-file-access-from-files: a page may read the SVG document it embeds from file://.
  return run_chromium(profile, "--allow-file-access-from-files --virtual-time-budget=" + std::to_string(budget_ms) +
                                   " --dump-dom " + quoted("file://" + page));
}

}  // namespace offwake::test
