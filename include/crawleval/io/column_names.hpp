// Named columns: one rule for every reader of a header or a table's column names (the sources CSV,
// the freshness population CSV, the utility law's table, the Python package's DataFrames).
//
// A name matches a known column in any case ("Cost" is cost), with or without the double quotes
// of a quoted CSV field. A name that is not one is
//  * unrelated (a `url`, pandas' unnamed index): ignored with a note, or refused where the reader
//    is strict;
//  * a near miss, refused whatever the reader's strictness, since ignoring it would run with the
//    column's default: after folding case and accents ("Coût" is "cout"), it equals a known name,
//    is its plural ("costs", "expiries"), or lies within edit distance 1 of a known name of up to
//    4 letters, 2 of a longer one (an insertion, a deletion, a substitution or a swap of two
//    neighbours: "cots", "lamdba");
//  * not valid UTF-8 (a Latin-1 "co\xfbt"): refused, saying which known name it resembles.
// A name that some reader knows (`host` of the freshness model, in a sources CSV) is never a near
// miss of another: it is unrelated there.
//
// Example: match_columns({"lambda", "XI", "mu", "costs"}, sources_columns(), ...) throws
// InputError "...: unknown column 'costs'; did you mean 'cost'? (...)".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace crawleval {

/// The named columns of a reader: their names (lower case) in the reader's column order, the
/// ones it requires, and what its messages add ("(the header must name ...)").
struct ColumnSchema {
  std::vector<const char*> names;
  std::vector<int> required;
  std::string help;
};

/// The sources CSV's columns: lambda, xi, mu (required), cost, id, x0, expiry, observe.
const ColumnSchema& sources_columns();
/// The freshness population's: id, host, importance, rate, rate_lo, rate_hi, complete,
/// constrained, cost, observations, changes (rate and importance required).
const ColumnSchema& fresh_columns();

enum class ColumnNameKind { known, unrelated, near_miss, not_utf8 };

struct ColumnName {
  ColumnNameKind kind = ColumnNameKind::unrelated;
  /// known: the column's index in the schema's names; near_miss and not_utf8: the known name it
  /// resembles (-1 for a not_utf8 name that resembles none).
  int column = -1;
};

/// What `name` (as given: any case, surrounding blanks already trimmed) is to a reader of
/// `names`.
ColumnName classify_column_name(std::string_view name, const std::vector<const char*>& names);

/// The columns of a header (or a table's column names, in order): for each of the schema's
/// names, the position of the column naming it (-1 when absent). Unrelated names are appended to
/// *ignored as given (refused instead when `strict`). InputError, prefixed with `where` ("FILE:1",
/// "DataFrame"): a near miss or a name that is not UTF-8 ("unknown column 'costs'; did you mean
/// 'cost'?"), an unrelated name when strict ("unknown column 'url'"), a column named twice, a
/// required column missing; each followed by `help` (default: the schema's).
std::vector<int> match_columns(const std::vector<std::string_view>& header,
                               const ColumnSchema& schema, const std::string& where, bool strict,
                               std::vector<std::string>* ignored,
                               const std::string* help = nullptr);

/// The note for ignored columns: "ORIGIN: ignoring column(s) 'url', ... (not one of NAMES`hint`)"
/// (at most 8 named). Empty when nothing was ignored.
std::string ignored_columns_note(const std::string& origin, const std::vector<std::string>& ignored,
                                 const ColumnSchema& schema, const std::string& hint);

}  // namespace crawleval
