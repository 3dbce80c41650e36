// One error vocabulary for the whole program.
//
//  * InputError: the user gave something invalid (file, field, flag). The CLI prints the message
//  and
//    exits with code 2. The message names the file, line and field when there is one.
//  * Error: anything else that went wrong (I/O failure, CUDA error, ...): exit code 1.
//
// CE_EXPECTS(cond, msg) is the precondition check that produces a user-facing InputError.
#pragma once

#include <atomic>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>

namespace crawleval {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InputError : public Error {
 public:
  using Error::Error;
};

/// Untrusted text (a CSV field, a file name) made safe to print in a message: control bytes
/// (C0, DEL, and C1 controls encoded in UTF-8, which a terminal may act on) are written as \xNN,
/// and text longer than max_bytes is cut, saying how long it was.
inline std::string printable(std::string_view text, std::size_t max_bytes = 80) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  const std::size_t n = text.size() > max_bytes ? max_bytes : text.size();
  for (std::size_t k = 0; k < n; ++k) {
    const unsigned char c = static_cast<unsigned char>(text[k]);
    const bool c1 = c == 0xC2 && k + 1 < text.size() &&
                    static_cast<unsigned char>(text[k + 1]) >= 0x80 &&
                    static_cast<unsigned char>(text[k + 1]) <= 0x9F;
    if (c < 0x20 || c == 0x7F || c1) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += char(c);
    }
  }
  if (n < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

/// An exception must not leave an OpenMP parallel region (the program would abort). Loop bodies
/// that can throw run through run(); the first exception is kept, later bodies are skipped, and
/// rethrow() after the region throws it on the calling thread.
class ParallelErrors {
 public:
  template <class F>
  void run(F&& body) noexcept {
    if (failed_.load(std::memory_order_relaxed)) return;
    try {
      body();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!first_) first_ = std::current_exception();
      failed_.store(true, std::memory_order_relaxed);
    }
  }
  void rethrow() {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr first_;
  std::atomic<bool> failed_{false};
};

/// Exit codes of the CLI.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

}  // namespace crawleval

#define CE_EXPECTS(cond, msg)                                     \
  do {                                                            \
    if (!(cond)) throw ::crawleval::InputError(std::string(msg)); \
  } while (0)
