// Debian's Chromium, headless, for the tests that look at a flame graph in a real browser.
// As root (CI) it needs --no-sandbox; each run gets its own profile directory so that runs
// neither share state nor write to $HOME.
#pragma once

#include <string>

#include "support/run.h"

namespace offwake::test {

// `chromium --headless ... ARGS` (args: the page and what to do with it), killed after 120 s:
// a guard against a Chromium that hangs, not a timing the tests depend on (a run takes seconds).
RunResult run_chromium(const TempDir& profile, const std::string& args);

// Takes a screenshot of `page` (a file) into `png`, the window `width` x `height`.
RunResult chromium_screenshot(const TempDir& profile, const std::string& page, const std::string& png, int width,
                              int height);

// The DOM of `page` after its scripts ran (within `budget_ms` of virtual time), as HTML.
// Virtual time moves on when the page is idle, not with the clock, so the budget does not
// depend on the machine's speed; the pages' scripts run at load, with no timers to wait for.
RunResult chromium_dump_dom(const TempDir& profile, const std::string& page, int budget_ms = 5000);

}  // namespace offwake::test
