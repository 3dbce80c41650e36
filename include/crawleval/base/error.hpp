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
#include <charconv>
#include <cstdint>
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

/// The errors every process of a sharded run throws together (agree_on_failure, comm.hpp): none
/// waits at a collective, so they end the run the usual way (one message, from process 0) instead
/// of aborting every process.
class AgreedError : public Error {
 public:
  using Error::Error;
};
class AgreedInputError : public InputError {
 public:
  using InputError::InputError;
};

/// Untrusted text (a CSV field, a file name) made safe to print in a message, and valid UTF-8
/// whatever it held (a Python caller decodes it): control characters (C0, DEL, and the C1 controls
/// U+0080-U+009F, which a terminal may act on) and every byte that is not part of a valid UTF-8
/// sequence (Latin-1 text, a cut sequence, overlong forms, surrogates) are written as \xNN; a
/// text longer than max_bytes is cut at a character boundary, saying how long it was.
/// Example: printable("caf\xe9\x1b[0m") == "caf\\xe9\\x1b[0m".
inline std::string printable(std::string_view text, std::size_t max_bytes = 80) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  auto escape = [&](unsigned char c) {
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 15];
  };
  std::size_t k = 0;
  while (k < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[k]);
    // The length of a valid UTF-8 sequence starting here (0: not one), and its code point.
    std::size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      len = 1, cp = c;
    } else if (c >= 0xC2 && c <= 0xF4) {
      const std::size_t want = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
      cp = c & (want == 2 ? 0x1F : want == 3 ? 0x0F : 0x07);
      std::size_t j = 1;
      for (; j < want && k + j < text.size(); ++j) {
        const unsigned char d = static_cast<unsigned char>(text[k + j]);
        if ((d & 0xC0) != 0x80) break;
        cp = (cp << 6) | (d & 0x3F);
      }
      const bool overlong = (want == 3 && cp < 0x800) || (want == 4 && cp < 0x10000);
      if (j == want && !overlong && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF)) len = want;
    }
    const bool control = len == 1 ? (cp < 0x20 || cp == 0x7F) : (len == 2 && cp <= 0x9F);
    const std::size_t used = len ? len : 1;  // input bytes this character takes
    if (k + used > max_bytes) break;         // cut before a character that would pass the limit
    if (len == 0 || control)
      for (std::size_t j = 0; j < used; ++j) escape(static_cast<unsigned char>(text[k + j]));
    else
      out.append(text.data() + k, len);
    k += used;
  }
  if (k < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

/// A number for a message: the shortest text that reads back as the same double (1e-300, 0.1,
/// 2.5e+20, inf, nan), never std::to_string's six fixed decimals (0.000000 for 1e-300, 300
/// digits for 1e300).
inline std::string shown_number(double v) {
  char buf[40];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
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
