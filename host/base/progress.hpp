// Progress of long runs: a line on stderr when stderr is a terminal and the run asked for it, or
// the embedding's RunMonitor (monitor.hpp) when one is installed, which may also stop the run.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "crawleval/base/monitor.hpp"

namespace crawleval::detail {

class Progress {
 public:
  /// `unit` names what is counted on the line ("epochs", "passes").
  Progress(bool enabled, std::string label, uint64_t total, const char* unit = "epochs")
      : monitor_(run_monitor()),
        enabled_(monitor_ || (enabled && isatty(2))),
        label_(std::move(label)),
        total_(total),
        unit_(unit) {}
  ~Progress() {
    if (shown_ && !monitor_) std::fprintf(stderr, "\r%*s\r", 72, "");
  }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// Called with the number of epochs done, from the thread that started the run; reports at
  /// most five times a second, and a monitor that takes longer than 50 ms (a Python callback)
  /// after four times its own time: it takes at most a fifth of the run. (Timed from its start,
  /// a callback of 0.25 s was called after every epoch: 60 epochs of a 0.5-s run took 15 s.)
  void update(uint64_t done) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (shown_ && now - last_ < gap_) return;
    last_ = now;
    shown_ = true;
    if (monitor_) {
      if (!monitor_->update(label_, done, total_)) stop_.store(true, std::memory_order_relaxed);
      last_ = std::chrono::steady_clock::now();
      gap_ = std::max<std::chrono::steady_clock::duration>(std::chrono::milliseconds(200),
                                                           4 * (last_ - now));
      return;
    }
    const double secs = std::chrono::duration<double>(now - start_).count();
    std::fprintf(stderr, "\r  %s: %llu/%llu %s (%.0f%%, %.1f s)   ", label_.c_str(),
                 (unsigned long long)done, (unsigned long long)total_, unit_,
                 total_ ? 100.0 * double(done) / double(total_) : 100.0, secs);
    std::fflush(stderr);
  }
  /// True once the monitor asked to stop (any thread may ask, between epochs).
  bool stopped() const { return stop_.load(std::memory_order_relaxed); }
  /// Throws Interrupted if the run was stopped (after the engine's threads have joined).
  void throw_if_stopped() const {
    if (stopped()) throw Interrupted();
  }

 private:
  RunMonitor* monitor_;
  bool enabled_;
  std::string label_;
  uint64_t total_;
  const char* unit_;
  bool shown_ = false;
  std::atomic<bool> stop_{false};
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_{};
  std::chrono::steady_clock::duration gap_ = std::chrono::milliseconds(200);
};

}  // namespace crawleval::detail
