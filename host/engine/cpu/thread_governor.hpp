// The wide CPU engine's thread count, epoch by epoch (cpu_backend.cpp), kept apart so that its
// rule is tested on its own (tests/test_cpu_backend.cpp).
#pragma once

#include <ctime>

namespace crawleval::detail {

/// The wide engine's thread count, epoch by epoch, when the user left it to the engine. With a
/// core taken by another process, an epoch's pass on every core waits at its end for a thread
/// that the system descheduled in the middle of a chunk, and may take longer than one thread
/// doing all the work (#14). So each pass reports its wall time and the CPU time its threads
/// spent: a pass whose wall time exceeds that CPU time, twice running, would have been faster on
/// one thread, and the engine goes on with one, trying all of them again every kRetry epochs (for
/// one epoch, if that pass is slow too).
/// Unloaded, the wall time is about the CPU time over the thread count and nothing changes.
/// Results do not depend on the thread count (rewards are summed per chunk in chunk order).
class ThreadGovernor {
 public:
  static constexpr int kRetry = 32;
  ThreadGovernor(int max, bool adapt) : max_(max), adapt_(adapt && max > 1), use_(max) {}
  int threads() const { return use_; }
  bool adapting() const { return adapt_; }
  int single_epochs() const { return single_; }
  /// After a pass on threads() threads: its wall time and its threads' CPU time, in seconds.
  void record(double wall, double cpu) {
    if (!adapt_) return;
    if (use_ > 1) {
      slow_ = wall > cpu ? slow_ + 1 : 0;
      if (slow_ >= 2) use_ = 1, slow_ = 0, since_ = 0;
    } else {
      ++single_;
      if (++since_ >= kRetry) use_ = max_, slow_ = 1;  // one slow pass ends the retry
    }
  }

 private:
  int max_;
  bool adapt_;
  int use_;
  int slow_ = 0, since_ = 0, single_ = 0;
};

/// CPU time the calling thread has used, in seconds.
inline double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

}  // namespace crawleval::detail
