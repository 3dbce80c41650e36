#include "crawleval/monitor.hpp"

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

}  // namespace crawleval
