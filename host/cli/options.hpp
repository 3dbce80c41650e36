// Validators for command-line values, checked on the text as typed, before any work: integers
// written with digits only (no sign: "-1" is not wrapped around to 2^64 - 1) and within a range;
// finite numbers within a range. CLI11 prefixes the message with the option's name, and the
// program exits with code 2.
#pragma once

#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "crawleval/base/error.hpp"

namespace crawleval::cli {

/// Integers in [lo, hi], digits only.
inline CLI::Validator integer_in(uint64_t lo, uint64_t hi) {
  std::ostringstream range;
  if (hi == std::numeric_limits<uint64_t>::max() ||
      (hi == std::numeric_limits<uint32_t>::max() && lo > 0))
    range << ">= " << lo;
  else
    range << "from " << lo << " to " << hi;
  const std::string what = range.str();
  return CLI::Validator(
      [lo, hi, what](std::string& text) -> std::string {
        uint64_t v = 0;
        const char* b = text.data();
        const char* e = b + text.size();
        const auto [ptr, ec] = std::from_chars(b, e, v);
        const bool digits =
            !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
        if (!digits || ec != std::errc() || ptr != e || v < lo || v > hi)
          return "'" + text + "' is not a whole number " + what +
                 (hi < std::numeric_limits<uint64_t>::max() && what[0] == '>'
                      ? " (at most " + std::to_string(hi) + ")"
                      : "");
        return {};
      },
      "INT " + what);
}

/// Any text but the empty one (an option given as '' would otherwise mean its default). `form`
/// is shown in the help after the option's type unless `described` is false (an option whose
/// type_name is the form already).
inline CLI::Validator non_empty(const std::string& form, bool described = true) {
  return CLI::Validator(
      [form](std::string& text) -> std::string {
        return text.empty() ? "'' is empty: give " + form : std::string();
      },
      described ? form : std::string());
}

/// "auto", or an integer in [lo, hi] (integer_in).
inline CLI::Validator auto_or_integer(uint64_t lo, uint64_t hi) {
  const CLI::Validator number = integer_in(lo, hi);
  return CLI::Validator(
      [number](std::string& text) -> std::string {
        if (text == "auto") return {};
        std::string copy = text;
        const std::string why = number(copy);
        return why.empty() ? why : why + " (or auto)";
      },
      "auto|" + number.get_description());
}

/// Finite numbers in [lo, hi] (open at lo or hi when asked); hi = kHuge means no upper limit.
inline CLI::Validator number_in(double lo, double hi, bool open_lo = false, bool open_hi = false) {
  std::ostringstream range;
  if (hi >= std::numeric_limits<double>::max())
    range << (open_lo ? "> " : ">= ") << lo;
  else
    range << "in " << (open_lo ? "(" : "[") << lo << ", " << hi << (open_hi ? ")" : "]");
  const std::string what = range.str();
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double v = 0.0;
        const char* b = text.data();
        const char* e = b + text.size();
        if (b != e && *b == '+') ++b;
        const auto [ptr, ec] = std::from_chars(b, e, v);
        const bool ok = b != e && *b != '+' && ec == std::errc() && ptr == e && std::isfinite(v) &&
                        (open_lo ? v > lo : v >= lo) && (open_hi ? v < hi : v <= hi);
        if (!ok) return "'" + text + "' is not a finite number " + what;
        return {};
      },
      "NUMBER " + what);
}

/// "1 host", "2 hosts": a count with its noun in the right number.
inline std::string count_of(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

/// Most threads a run may ask for: a small multiple of the hardware's (more only waits, and a very
/// large team overflows the OpenMP runtime's stacks).
inline uint64_t max_threads() {
  const unsigned hw = std::thread::hardware_concurrency();
  return 4 * uint64_t(hw > 0 ? hw : 1);
}

/// --slice FIRST:COUNT of a synthetic population of n sources: [FIRST, FIRST + COUNT), inside it;
/// InputError naming --slice.
inline std::pair<uint64_t, uint64_t> parse_slice(const std::string& slice, uint64_t n) {
  const std::size_t colon = slice.find(':');
  auto whole = [&](const std::string& text, const char* what) -> uint64_t {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
      throw InputError("--slice '" + printable(slice, 64) + "': " + what +
                       " must be a whole number (FIRST:COUNT)");
    uint64_t v = 0;
    if (std::from_chars(text.data(), text.data() + text.size(), v).ec != std::errc())
      throw InputError("--slice '" + printable(slice, 64) + "': " + what +
                       " is too large (at most 2^63)");
    return v;
  };
  if (colon == std::string::npos)
    throw InputError("--slice '" + printable(slice, 64) +
                     "' is not FIRST:COUNT (e.g. 5000000000:4096)");
  const uint64_t first = whole(slice.substr(0, colon), "FIRST");
  const uint64_t count = whole(slice.substr(colon + 1), "COUNT");
  if (count == 0) throw InputError("--slice " + slice + ": COUNT must be at least 1");
  if (first >= n || count > n - first)
    throw InputError("--slice " + slice + ": sources [" + std::to_string(first) + ", " +
                     std::to_string(first) + " + " + std::to_string(count) +
                     ") pass the end of --synthetic " + std::to_string(n));
  return {first, count};
}

inline constexpr uint64_t kMaxU32 = std::numeric_limits<uint32_t>::max();
inline constexpr uint64_t kMaxU64 = std::numeric_limits<uint64_t>::max();
inline constexpr double kHuge = std::numeric_limits<double>::max();

}  // namespace crawleval::cli
