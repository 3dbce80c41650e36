#include "crawleval/base/monitor.hpp"

#include <cstring>

#include <algorithm>

#include <chrono>

namespace crawleval {

namespace {
// Per thread: a run reads the monitor of the thread that starts it, so runs started by several
// threads (Python threads, with the GIL released) each see their own.
thread_local RunMonitor* g_monitor = nullptr;
}  // namespace

RunMonitor* set_run_monitor(RunMonitor* monitor) {
  RunMonitor* old = g_monitor;
  g_monitor = monitor;
  return old;
}

RunMonitor* run_monitor() { return g_monitor; }

void check_interrupt() {
  RunMonitor* m = g_monitor;
  if (!m) return;
  thread_local std::chrono::steady_clock::time_point last{};
  const auto now = std::chrono::steady_clock::now();
  if (now - last < std::chrono::milliseconds(50)) return;
  last = now;
  if (!m->keep_going()) throw Interrupted();
}

namespace {
char g_activity[512];
}  // namespace

void set_activity(const std::string& what) {
  // Written while no signal is being handled in practice; a torn string is only a message.
  const std::size_t n = std::min(what.size(), sizeof g_activity - 1);
  g_activity[n] = '\0';
  std::memcpy(g_activity, what.data(), n);
}

const char* current_activity() { return g_activity; }

}  // namespace crawleval
