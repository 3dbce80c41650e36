// Progress and cancellation of long runs for a program that embeds crawleval (the Python package):
// a per-thread hook that the CPU engines call as they go, and the error a stopped run throws.
//
// The engines call the monitor installed by the thread that started the run, from that thread
// (OpenMP's master thread), at most about five times a second, between epochs. Many replications
// of a small population run side by side: there only the master thread's replications report, so
// a stop can wait for the replications in flight on the other threads. When it returns false the
// run stops at the next epoch boundary of every thread and the call throws Interrupted: nothing is
// returned half-done. Without a monitor, the CLI's progress line on a terminal is unchanged.
#pragma once

#include <cstdint>
#include <string>

#include "crawleval/base/error.hpp"

namespace crawleval {

class RunMonitor {
 public:
  virtual ~RunMonitor() = default;
  /// `done` of `total` epochs of the run named `label` (a policy). false: stop the run.
  virtual bool update(const std::string& label, uint64_t done, uint64_t total) = 0;
  /// Whether to go on with a step that reports no progress (reading a file, a bound, a solver's
  /// set-up). false: stop.
  virtual bool keep_going() { return true; }
};

/// Installs `monitor` (nullptr: none) for runs started by the calling thread and returns the one it
/// replaces: install it before a run starts, restore the previous one after the run returns.
RunMonitor* set_run_monitor(RunMonitor* monitor);
RunMonitor* run_monitor();

/// A run stopped by its monitor (the Python package turns it into KeyboardInterrupt).
class Interrupted : public Error {
 public:
  Interrupted() : Error("interrupted") {}
};

/// For long steps outside the epoch loops (reading a population, the bound, the exact optimum's
/// set-up, the learners' rounds): asks the calling thread's monitor, at most about 20 times a
/// second, whether to go on, and throws Interrupted when it says stop. Without a monitor (the
/// CLI, whose signal handler ends the process) it costs a thread-local read.
void check_interrupt();

/// What the program is doing, for the message if it is interrupted ("simulating whittle"), and
/// that text (a NUL-terminated array, read by the CLI's signal handler: no allocation).
void set_activity(const std::string& what);
const char* current_activity();

}  // namespace crawleval
