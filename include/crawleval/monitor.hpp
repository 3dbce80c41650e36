// Progress and cancellation of long runs for a program that embeds crawleval (the Python package):
// a process-wide hook that the CPU engines call as they go, and the error a stopped run throws.
//
// The engines call the installed monitor from the thread that started the run (OpenMP's master
// thread), at most about five times a second, between epochs. When it returns false the run stops
// at the next epoch boundary of every thread and the call throws Interrupted: nothing is returned
// half-done. Without a monitor, the CLI's progress line on a terminal is unchanged.
#pragma once

#include <cstdint>
#include <string>

#include "crawleval/error.hpp"

namespace crawleval {

class RunMonitor {
 public:
  virtual ~RunMonitor() = default;
  /// `done` of `total` epochs of the run named `label` (a policy). false: stop the run.
  virtual bool update(const std::string& label, uint64_t done, uint64_t total) = 0;
};

/// Installs `monitor` (nullptr: none) and returns the one it replaces. Not thread-safe: install it
/// before a run starts and remove it after the run returns.
RunMonitor* set_run_monitor(RunMonitor* monitor);
RunMonitor* run_monitor();

/// A run stopped by its monitor (the Python package turns it into KeyboardInterrupt).
class Interrupted : public Error {
 public:
  Interrupted() : Error("interrupted") {}
};

}  // namespace crawleval
