// Reading fields of text files with messages that name the file, the line and the field: shared by
// the sources CSV (csv.cpp), the freshness population CSV (fresh_csv.cpp) and the PoliteCrawling
// importer (politecrawling.cpp).
#pragma once

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "crawleval/base/error.hpp"
#include "crawleval/base/monitor.hpp"
#include "crawleval/io/column_names.hpp"

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

/// Appends v in its shortest round-trip text (to_chars: a file reads back bit for bit), then sep.
template <class T>
inline void append_field(std::string& buf, T v, char sep) {
  char tmp[64];
  const auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
  buf.append(tmp, r.ptr);
  buf.push_back(sep);
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

/// What read_csv_rows does with a header column that is not one of its names: refuse it
/// (strict), or skip it and list its name in *ignored.
struct ExtraColumns {
  bool strict = true;
  std::vector<std::string>* ignored = nullptr;
};

/// A comma-separated file with a header row naming its columns, in any order and any case, out
/// of `names[0..count)`, by the rule of every reader of named columns (column_names.hpp). A UTF-8
/// BOM is dropped; blank lines and lines starting with '#' are skipped. Calls row(fields, position,
/// loc) for every data row, where position[c] is column c's field (-1: absent). InputError, naming
/// the file and line: a near miss of a known name or a name that is not UTF-8, an unrelated column
/// (unless `extra` ignores it) or a repeated one, a missing `required` one ("missing column(s) a,
/// b" + help), a row with another number of fields, an empty file, no row after the header
/// (`rows_are` names what the rows are in that message).
template <class Row>
void read_csv_rows(std::string_view data, const std::string& path, const char* const* names,
                   int count, std::initializer_list<int> required, const std::string& help,
                   Row&& row, ExtraColumns extra = {}, const char* rows_are = "sources") {
  if (data.size() >= 3 && std::memcmp(data.data(), "\xEF\xBB\xBF", 3) == 0) data.remove_prefix(3);
  const ColumnSchema schema{{names, names + count}, required, help};
  std::vector<int> position(std::size_t(count), -1);
  std::size_t n_fields = 0, rows = 0;
  bool have_header = false;
  std::vector<std::string_view> fields;
  std::size_t pos = 0, line_no = 0;
  while (pos < data.size()) {
    std::size_t end = data.find('\n', pos);
    if (end == std::string_view::npos) end = data.size();
    const std::string_view line = trim(data.substr(pos, end - pos));
    pos = end + 1;
    ++line_no;
    if ((line_no & 0xFFFF) == 0) check_interrupt();  // a long file read from Python: Ctrl-C
    if (line.empty() || line.front() == '#') continue;
    split(line, ',', fields);
    const Location loc{path, line_no};
    if (!have_header) {
      have_header = true;
      n_fields = fields.size();
      position = match_columns(fields, schema, loc.here(), extra.strict, extra.ignored);
      continue;
    }
    if (fields.size() != n_fields)
      throw InputError(loc.here() + ": expected " + std::to_string(n_fields) + " fields, found " +
                       std::to_string(fields.size()));
    row(fields, position, loc);
    ++rows;
  }
  if (!have_header)
    throw InputError(printable(path, 256) + ": empty file (expected a header row and " + rows_are +
                     ")");
  if (rows == 0) throw InputError(printable(path, 256) + ": no " + rows_are + " after the header");
}

}  // namespace crawleval::text
