// Files in and out: the sources CSV and the synthetic population (outputs: output_file.hpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "crawleval/problem.hpp"

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

/// Stores `pop` in ascending id order (stable: the order of its other columns follows). Ids must
/// be unique; a repeated id throws InputError naming both positions: file lines (`lines`: "FILE:L:
/// field 'id': id X already used on line K") or 0-based rows of the input columns (`rows`:
/// "ORIGIN: row R: field 'id': id X already used in row K").
enum class IdPositions { lines, rows };
void sort_by_id(Population& pop, IdPositions positions);

/// A population from columns held elsewhere (the Python package's numpy arrays): `n` sources,
/// `lambda`, `xi` and `mu` required; `cost` (default 1), `id` (default 0..n-1), `x0`, `expiry`
/// (0 = never) and `observe` (1 = full, 0 = belief: Population::observe) may be null. Copied
/// once, stored in id order (sort_by_id, rows), and checked (validate_sources): InputError names
/// the field and the source's id.
Population population_from_columns(std::size_t n, const double* lambda, const double* xi,
                                   const double* mu, const double* cost, const uint64_t* id,
                                   const double* x0, const uint32_t* expiry,
                                   const std::string& origin, const uint8_t* observe = nullptr);

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

/// Writes a population as a sources CSV (an OutputFile: complete or not at all).
void write_sources_csv(const Population& pop, const std::string& path);

/// The papers' 4-source example (Table 1 of the research report / conference paper): Lambda = 250
/// for all, xi = (1.0, 0.7, 0.2, 0.08), mu = (0.7, 0.35, 0.7, 0.21), unit costs.
Population paper_example();

/// A synthetic population of n sources; the distributions are documented in synthetic.hpp.
/// Deterministic in (n, seed); source i depends only on (seed, i).
enum class SyntheticCosts { unit, lognormal };
Population synthetic_population(uint64_t n, uint64_t seed,
                                SyntheticCosts costs = SyntheticCosts::unit);
/// Sources [first, first + count) of synthetic_population(n, seed, costs), generated alone (each
/// process of a sharded run makes its own shard; the origin names the whole population).
Population synthetic_slice(uint64_t n, uint64_t seed, SyntheticCosts costs, uint64_t first,
                           uint64_t count);

}  // namespace crawleval
