// Populations in and out of files: the sources CSV and the columnar format (outputs:
// output_file.hpp; populations made in memory: population.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "crawleval/model/population.hpp"
#include "crawleval/model/problem.hpp"

namespace crawleval {

/// How a sources CSV treats columns it does not know (a `url` column, pandas' unnamed index).
struct SourcesCsvOptions {
  /// Refuse them (InputError naming the column), or ignore them with a note.
  bool strict_columns = false;
  /// Receives the note ("FILE:1: ignoring column(s) 'url' ..."); default: a line on stderr.
  std::function<void(const std::string&)> note;
};

/// Reads a sources CSV: a header row naming the columns (any order) `lambda`, `xi`, `mu` and
/// optionally `cost` (default 1), `id` (unique integers >= 0; default the row number), `x0`
/// (initial state) and `expiry`, then one row per source; other columns are ignored (or refused:
/// `options`). Blank lines and lines starting with '#' are skipped. Every problem throws
/// InputError naming the file, the line and the field.
Population read_sources_csv(const std::string& path, const SourcesCsvOptions& options = {});

/// The same, from the file's contents; `origin` names it in messages.
Population parse_sources_csv(std::string data, const std::string& origin,
                             const SourcesCsvOptions& options = {});

/// Writes a population as the columnar format when `path` ends in .cpop, else as a sources CSV.
/// A slice (first_id above 0) only as .cpop: a CSV has no field for its first global id, and its
/// sources would draw as ids 0, 1, ... (InputError naming `option` and the path).
void write_population(const Population& pop, const std::string& path,
                      const std::string& option = "--out");

/// The longest line a text input may have: a longer one is refused as soon as it is read, so a
/// stream without line ends (/dev/zero) cannot fill the memory.
inline constexpr std::size_t kMaxLineBytes = std::size_t(1) << 20;

/// The whole file, read once: a regular file, a pipe, a FIFO, /dev/stdin. InputError naming the
/// path when it cannot be opened or read, before it would need more memory than is available
/// (a regular file by its size, a stream as it grows), and when a line grows beyond kMaxLineBytes
/// (unless the data starts with the .cpop magic: binary, no lines).
std::string read_text_file(const std::string& path);

/// For a file that every process of an MPI run reads itself (processes > 1): InputError, naming
/// `what` and the path, unless it is a regular file. A pipe, a FIFO or /dev/stdin gives its bytes
/// to one reader alone: the others would see an empty file, or a part of one, or wait for a
/// writer that has gone. Only stat(): it cannot block on a FIFO. A path that cannot be stat()ed
/// passes (read_text_file says why it cannot be opened).
void require_regular_file(const std::string& path, const std::string& what, int processes);

/// The population of --sources or Population.read: a .cpop (a regular file read in place, or
/// bytes through a pipe, recognised by their magic) or a sources CSV, read once (pipes work).
/// Refuses what would not fit in memory (`bytes_per_source` of the caller's use per source), an
/// empty population, and any source validate_sources refuses: the same checks for every reader.
Population read_population(const std::string& path, double bytes_per_source,
                           const SourcesCsvOptions& csv = {});

/// The utility law of --utility (and the Python package's `utility`): deterministic, exponential,
/// lognormal:SIGMA, pareto:A, gamma:K or empirical:FILE (a CSV with columns value and probability:
/// values >= 0 with positive mean, probabilities >= 0, normalised by their sum). Sets cfg.utility
/// and, for a table, cfg.utility_table. InputError naming the setting (and the file's line).
void set_utility(RunConfig& cfg, const std::string& text, const char* setting = "--utility");
/// Writes a population as a sources CSV (an OutputFile: complete or not at all).
void write_sources_csv(const Population& pop, const std::string& path);

}  // namespace crawleval
