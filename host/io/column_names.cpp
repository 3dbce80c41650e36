// Named columns: the one rule of every reader (include/crawleval/io/column_names.hpp).
#include "crawleval/io/column_names.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "crawleval/base/error.hpp"

namespace crawleval {

namespace {

const char* const kSourcesNames[] = {"lambda", "xi", "mu", "cost", "id", "x0", "expiry", "observe"};
const char* const kFreshNames[] = {"id",      "host",         "importance", "rate",
                                   "rate_lo", "rate_hi",      "complete",   "constrained",
                                   "cost",    "observations", "changes"};

/// The base letters of U+0100-U+017F (Latin Extended-A), one per code point; 'I' stands for "ij"
/// and 'O' for "oe".
constexpr char kExtendedA[] =
    "aaaaaa"
    "cccccccc"
    "dddd"
    "eeeeeeeeee"
    "gggggggg"
    "hhhh"
    "iiiiiiiiii"
    "II"
    "jj"
    "kkk"
    "llllllllll"
    "nnnnnnnnn"
    "oooooo"
    "OO"
    "rrrrrr"
    "ssssssss"
    "tttttt"
    "uuuuuuuuuuuu"
    "ww"
    "yyy"
    "zzzzzz"
    "s";
static_assert(sizeof kExtendedA == 128 + 1, "one letter per code point of U+0100-U+017F");

/// The base letters of U+00C0-U+00FF (Latin-1's letters; '*' keeps the multiplication and
/// division signs, 'A' stands for "ae", 'T' for "th", 'S' for "ss").
constexpr char kLatin1[] = "aaaaaaAceeeeiiiidnooooo*ouuuuyTSaaaaaaAceeeeiiiidnooooo*ouuuuyTy";
static_assert(sizeof kLatin1 == 64 + 1, "one letter per code point of U+00C0-U+00FF");

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6)), out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12)), out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18)), out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F)), out += char(0x80 | (cp & 0x3F));
  }
}

/// One code point folded: lower case, accents dropped, the Greek letters that name columns
/// spelled out.
void fold_code_point(std::string& out, uint32_t cp) {
  auto letter = [&](char c) {
    if (c == 'I')
      out += "ij";
    else if (c == 'O')
      out += "oe";
    else if (c == 'A')
      out += "ae";
    else if (c == 'T')
      out += "th";
    else if (c == 'S')
      out += "ss";
    else
      out += c;
  };
  if (cp >= 0xFF01 && cp <= 0xFF5E) cp -= 0xFEE0;  // fullwidth ASCII ("ｃｏｓｔ"): the letters
  if (cp < 0x80) {
    out += char(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
  } else if ((cp >= 0x200B && cp <= 0x200D) || cp == 0x2060 || cp == 0xFEFF) {
    // zero-width spaces and joiners, a byte-order mark: invisible, dropped
  } else if (cp >= 0xC0 && cp <= 0xFF && kLatin1[cp - 0xC0] != '*') {
    letter(kLatin1[cp - 0xC0]);
  } else if (cp >= 0x100 && cp <= 0x17F) {
    letter(kExtendedA[cp - 0x100]);
  } else if (cp >= 0x300 && cp <= 0x36F) {
    // combining accents (a decomposed "û"): dropped
  } else if (cp == 0x3BB || cp == 0x39B) {
    out += "lambda";
  } else if (cp == 0x3BC || cp == 0x39C || cp == 0xB5) {
    out += "mu";
  } else if (cp == 0x3BE || cp == 0x39E) {
    out += "xi";
  } else {
    append_utf8(out, cp);
  }
}

/// The next code point of valid UTF-8 at text[k] (advancing k), or -1 where the bytes are not.
int64_t next_code_point(std::string_view text, std::size_t& k) {
  const unsigned char c = static_cast<unsigned char>(text[k]);
  if (c < 0x80) return ++k, c;
  if (c < 0xC2 || c > 0xF4) return -1;
  const std::size_t want = c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  uint32_t cp = c & (want == 2 ? 0x1F : want == 3 ? 0x0F : 0x07);
  for (std::size_t j = 1; j < want; ++j) {
    if (k + j >= text.size()) return -1;
    const unsigned char d = static_cast<unsigned char>(text[k + j]);
    if ((d & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (d & 0x3F);
  }
  const bool overlong = (want == 3 && cp < 0x800) || (want == 4 && cp < 0x10000);
  if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
  k += want;
  return cp;
}

/// The name folded (case, accents); false when it is not valid UTF-8, and then *folded is its
/// bytes read as Latin-1, folded (what the writer of a Latin-1 file meant).
bool fold(std::string_view name, std::string* folded) {
  folded->clear();
  std::size_t k = 0;
  while (k < name.size()) {
    const int64_t cp = next_code_point(name, k);
    if (cp < 0) {
      folded->clear();
      for (char c : name) fold_code_point(*folded, static_cast<unsigned char>(c));
      return false;
    }
    fold_code_point(*folded, uint32_t(cp));
  }
  return true;
}

/// The code points of valid UTF-8 (a folded name is: fold writes it).
std::u32string code_points(std::string_view text) {
  std::u32string out;
  std::size_t k = 0;
  while (k < text.size()) {
    const int64_t cp = next_code_point(text, k);
    if (cp < 0) break;
    out += char32_t(cp);
  }
  return out;
}

/// The edit distance with swaps of neighbours (optimal string alignment), in code points: a
/// Cyrillic 'о' in "cоst" is one edit, not two bytes.
std::size_t edit_distance(std::string_view a_text, std::string_view b_text) {
  const std::u32string a = code_points(a_text), b = code_points(b_text);
  const std::size_t m = a.size(), n = b.size();
  std::vector<std::size_t> d((m + 1) * (n + 1));
  auto at = [&](std::size_t i, std::size_t j) -> std::size_t& { return d[i * (n + 1) + j]; };
  for (std::size_t i = 0; i <= m; ++i) at(i, 0) = i;
  for (std::size_t j = 0; j <= n; ++j) at(0, j) = j;
  for (std::size_t i = 1; i <= m; ++i)
    for (std::size_t j = 1; j <= n; ++j) {
      std::size_t v = std::min(
          {at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        v = std::min(v, at(i - 2, j - 2) + 1);
      at(i, j) = v;
    }
  return d[m * (n + 1) + n];
}

bool is_plural(const std::string& name, std::string_view known) {
  const std::string k(known);
  if (name == k + "s" || name == k + "es") return true;
  return !k.empty() && k.back() == 'y' && name == k.substr(0, k.size() - 1) + "ies";
}

std::string lower_ascii(std::string_view s) {
  std::string r(s);
  for (char& c : r)
    if (c >= 'A' && c <= 'Z') c = char(c + 32);
  return r;
}

/// Whether some reader knows `lower` (a name of another model is unrelated, not a near miss).
bool known_elsewhere(const std::string& lower) {
  for (const char* n : kSourcesNames)
    if (lower == n) return true;
  for (const char* n : kFreshNames)
    if (lower == n) return true;
  return false;
}

/// The known name `folded` resembles: equal, plural, then the smallest distance within the
/// limit (ties: the first in the schema's order); -1 for none.
int resembled(const std::string& folded, const std::vector<const char*>& names) {
  int best = -1;
  std::size_t best_score = ~std::size_t(0);
  for (std::size_t c = 0; c < names.size(); ++c) {
    const std::string_view known = names[c];
    std::size_t score;
    if (folded == known)
      score = 0;
    else if (is_plural(folded, known))
      score = 1;
    else {
      const std::size_t d = edit_distance(folded, known);
      if (d > (known.size() <= 4 ? 1u : 2u)) continue;
      score = 1 + d;
    }
    if (score < best_score) best_score = score, best = int(c);
  }
  return best;
}

/// A header's name: without surrounding blanks, and without the double quotes of a quoted CSV
/// field (R's write.csv quotes every name: a quoted "cost" ignored as unrelated ran with unit
/// costs).
std::string header_name(std::string_view s) {
  // Blanks: space, tab, and in UTF-8 the no-break space, zero-width space and byte-order mark
  // (a spreadsheet's export puts them where a space would be).
  static constexpr std::string_view kWide[] = {"\xC2\xA0", "\xE2\x80\x8B", "\xEF\xBB\xBF"};
  for (bool trimmed = true; trimmed && !s.empty();) {
    trimmed = false;
    if (s.front() == ' ' || s.front() == '\t') s.remove_prefix(1), trimmed = true;
    if (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
      s.remove_suffix(1), trimmed = true;
    for (std::string_view w : kWide) {
      if (s.size() >= w.size() && s.substr(0, w.size()) == w)
        s.remove_prefix(w.size()), trimmed = true;
      if (s.size() >= w.size() && s.substr(s.size() - w.size()) == w)
        s.remove_suffix(w.size()), trimmed = true;
    }
  }
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return std::string(s);
}

std::string quoted(std::string_view s) { return "'" + printable(s) + "'"; }

std::string names_list(const ColumnSchema& schema) {
  std::string out;
  for (std::size_t c = 0; c < schema.names.size(); ++c)
    out += std::string(c ? ", " : "") + schema.names[c];
  return out;
}

}  // namespace

const ColumnSchema& sources_columns() {
  static const ColumnSchema schema{
      {std::begin(kSourcesNames), std::end(kSourcesNames)},
      {0, 1, 2},
      "(the header must name lambda, xi, mu and optionally cost, id, x0, expiry, observe)"};
  return schema;
}

const ColumnSchema& fresh_columns() {
  static const ColumnSchema schema{
      {std::begin(kFreshNames), std::end(kFreshNames)},
      {2, 3},
      "(the header must name rate and importance, and optionally id, host, complete, "
      "constrained, cost, rate_lo, rate_hi, observations, changes)"};
  return schema;
}

ColumnName classify_column_name(std::string_view name, const std::vector<const char*>& names) {
  const std::string lower = lower_ascii(name);
  for (std::size_t c = 0; c < names.size(); ++c)
    if (lower == names[c]) return {ColumnNameKind::known, int(c)};
  std::string folded;
  if (!fold(name, &folded)) return {ColumnNameKind::not_utf8, resembled(folded, names)};
  if (known_elsewhere(lower)) return {ColumnNameKind::unrelated, -1};
  const int near = resembled(folded, names);
  if (near >= 0) return {ColumnNameKind::near_miss, near};
  return {ColumnNameKind::unrelated, -1};
}

std::vector<int> match_columns(const std::vector<std::string_view>& header,
                               const ColumnSchema& schema, const std::string& where, bool strict,
                               std::vector<std::string>* ignored, const std::string* help) {
  const std::string& tail = help ? *help : schema.help;
  std::vector<int> position(schema.names.size(), -1);
  for (std::size_t k = 0; k < header.size(); ++k) {
    const std::string name = header_name(header[k]);
    const ColumnName m = classify_column_name(name, schema.names);
    switch (m.kind) {
      case ColumnNameKind::known:
        if (position[std::size_t(m.column)] >= 0)
          throw InputError(where + ": column " + quoted(schema.names[std::size_t(m.column)]) +
                           " appears twice");
        position[std::size_t(m.column)] = int(k);
        break;
      case ColumnNameKind::near_miss:
        throw InputError(where + ": unknown column " + quoted(name) + "; did you mean '" +
                         schema.names[std::size_t(m.column)] + "'? " + tail);
      case ColumnNameKind::not_utf8:
        throw InputError(where + ": unknown column " + quoted(name) +
                         " (its name is not valid UTF-8: save the file as UTF-8)" +
                         (m.column >= 0 ? std::string("; did you mean '") +
                                              schema.names[std::size_t(m.column)] + "'?"
                                        : std::string()) +
                         " " + tail);
      case ColumnNameKind::unrelated:
        if (strict) throw InputError(where + ": unknown column " + quoted(name) + " " + tail);
        if (ignored) ignored->push_back(name);
        break;
    }
  }
  std::string missing;
  for (int c : schema.required)
    if (position[std::size_t(c)] < 0)
      missing += std::string(missing.empty() ? "" : ", ") + schema.names[std::size_t(c)];
  if (!missing.empty()) throw InputError(where + ": missing column(s) " + missing + " " + tail);
  return position;
}

std::string ignored_columns_note(const std::string& origin, const std::vector<std::string>& ignored,
                                 const ColumnSchema& schema, const std::string& hint) {
  if (ignored.empty()) return "";
  std::string names;
  for (std::size_t k = 0; k < ignored.size() && k < 8; ++k)
    names += (k ? ", " : "") + quoted(ignored[k]);
  if (ignored.size() > 8) names += " and " + std::to_string(ignored.size() - 8) + " more";
  return printable(origin, 256) + ": ignoring column" + (ignored.size() > 1 ? "s " : " ") + names +
         " (not one of " + names_list(schema) + hint + ")";
}

}  // namespace crawleval
