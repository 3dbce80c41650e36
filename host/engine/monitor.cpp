#include "crawleval/monitor.hpp"

namespace crawleval {

namespace {
RunMonitor* g_monitor = nullptr;
}

RunMonitor* set_run_monitor(RunMonitor* monitor) {
  RunMonitor* old = g_monitor;
  g_monitor = monitor;
  return old;
}

RunMonitor* run_monitor() { return g_monitor; }

}  // namespace crawleval
