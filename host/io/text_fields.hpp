// Reading fields of text files with messages that name the file, the line and the field: shared by
// the sources CSV (csv.cpp), the freshness population CSV (fresh_csv.cpp) and the PoliteCrawling
// importer (politecrawling.cpp).
#pragma once

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "crawleval/error.hpp"

namespace crawleval::text {

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

inline std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = char(std::tolower((unsigned char)c));
  return r;
}

/// A line of a file, for messages: "FILE:LINE: field 'NAME'".
struct Location {
  const std::string& path;
  std::size_t line;
  std::string here() const { return printable(path, 256) + ":" + std::to_string(line); }
  std::string at(const char* field) const { return here() + ": field '" + field + "'"; }
};

/// A field's text as messages quote it (escaped, cut if long).
inline std::string shown(std::string_view t) { return "'" + printable(t) + "'"; }

/// A finite number (a leading '+' is allowed); InputError naming the location otherwise.
inline double parse_number(std::string_view text, const Location& loc, const char* field) {
  const std::string_view t = trim(text);
  if (t.empty()) throw InputError(loc.at(field) + " is empty");
  double v = 0.0;
  const char* first = t.data();
  const char* end = t.data() + t.size();
  if (*first == '+') ++first;  // from_chars does not take a leading '+' ...
  if (first != end && (*first == '+' || (*first == '-' && first != t.data())))
    throw InputError(loc.at(field) + ": " + shown(t) + " is not a number");  // ... nor "+-0"
  const auto [ptr, ec] = std::from_chars(first, end, v);
  if (ec == std::errc::result_out_of_range)
    throw InputError(loc.at(field) + ": " + shown(t) + " is out of range");
  if (ec != std::errc() || ptr != end)
    throw InputError(loc.at(field) + ": " + shown(t) + " is not a number");
  if (!std::isfinite(v))
    throw InputError(loc.at(field) + ": " + shown(t) + " is not a finite number");
  return v;
}

/// An integer >= 0; InputError naming the location otherwise.
inline uint64_t parse_uint(std::string_view text, const Location& loc, const char* field) {
  const std::string_view t = trim(text);
  uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || ptr != t.data() + t.size())
    throw InputError(loc.at(field) + ": " + shown(t) + " is not an integer >= 0");
  return v;
}

/// Splits a line at every `sep` (empty fields kept).
inline void split(std::string_view line, char sep, std::vector<std::string_view>& fields) {
  fields.clear();
  std::size_t start = 0;
  for (;;) {
    const std::size_t at = line.find(sep, start);
    if (at == std::string_view::npos) {
      fields.push_back(line.substr(start));
      return;
    }
    fields.push_back(line.substr(start, at - start));
    start = at + 1;
  }
}

}  // namespace crawleval::text
