#include "crawleval/monitor.hpp"

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

}  // namespace crawleval
