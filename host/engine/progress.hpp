// Progress on stderr for long runs, only when stderr is a terminal and the run asked for it.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace crawleval::detail {

class Progress {
 public:
  Progress(bool enabled, std::string label, uint64_t total)
      : enabled_(enabled && isatty(2)), label_(std::move(label)), total_(total) {}
  ~Progress() {
    if (shown_) std::fprintf(stderr, "\r%*s\r", 72, "");
  }
  /// Called with the number of units done; prints at most five times a second.
  void update(uint64_t done) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (shown_ && now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    shown_ = true;
    const double secs = std::chrono::duration<double>(now - start_).count();
    std::fprintf(stderr, "\r  %s: %llu/%llu epochs (%.0f%%, %.1f s)   ", label_.c_str(),
                 (unsigned long long)done, (unsigned long long)total_,
                 total_ ? 100.0 * double(done) / double(total_) : 100.0, secs);
    std::fflush(stderr);
  }

 private:
  bool enabled_;
  std::string label_;
  uint64_t total_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_{};
};

}  // namespace crawleval::detail
