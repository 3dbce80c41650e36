// The binary columnar population format (.cpop): for populations too big for CSV, and read in
// slices, so that each process of a sharded run (sharded.hpp) reads its own sources and nothing
// else (read with pread at the slice's offsets; a file that shrinks meanwhile is reported as bad
// input). A .cpop can also come through a pipe (read once into memory: parse_columnar).
//
// Layout, little-endian:
//   bytes 0-63   header: magic "CEPOP001" (8 bytes), n (uint64), version 1 or 2 (uint32), flags
//                (uint32: 1 = an x0 column, 2 = an expiry column), first_id (uint64: version 2,
//                the global id of source 0, Population::first_id; zero in version 1), zeros (32)
//                Written as version 1 when first_id is 0 (the files earlier versions wrote).

//   then the columns, each n values, in this order:
//                lambda, xi, mu, cost (float64), id (uint64, strictly ascending),
//                x0 (float64, if flag 1), expiry (uint32 epochs, 0 = never; if flag 2)
// A file's size must be exactly what its header says. The values are validated like a CSV's
// (problem.hpp, validate), with messages naming the file and the source's id.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "crawleval/model/problem.hpp"

namespace crawleval {

/// Whether `path` is a regular file that starts with the format's magic (false when it cannot be
/// read, and for pipes and devices, which are never sniffed: that would consume them).
bool is_columnar_file(const std::string& path);
/// Whether bytes already read start with the format's magic.
bool columnar_magic(std::string_view data);

struct ColumnarHeader {
  uint64_t n = 0;
  bool x0 = false, expiry = false;
  uint64_t file_bytes = 0;
  uint64_t first_id = 0;  ///< Population::first_id (version 2; 0 in version 1)
};
/// The header, checked against the file's size; InputError naming the file and what is wrong.
ColumnarHeader read_columnar_header(const std::string& path);

/// A digest (FNV-1a) of the header, the file's size and every column's values at `positions`
/// (source indices; those >= n are skipped): what the processes of a sharded run compare, with
/// the positions of every process's slice bounds, before each reads its own slice.
uint64_t columnar_digest(const std::string& path, const std::vector<uint64_t>& positions);

/// Sources [first, first + count) of the file (count may be 0). Checks the ids ascend (also
/// against the source just before the slice).
Population read_columnar(const std::string& path, uint64_t first, uint64_t count);
/// The whole file.
Population read_columnar(const std::string& path);
/// A whole .cpop already in memory (read from a pipe); `origin` names it in messages.
Population parse_columnar(std::string_view data, const std::string& origin);

namespace detail {
/// Test hook: called with the file's path after a reader has checked the header, before it reads
/// the columns (tests shrink the file there). Null in normal use.
extern void (*columnar_after_header)(const std::string& path);
}  // namespace detail

/// Writes a population (ids strictly ascending, as every reader stores them) in this format: an
/// OutputFile, complete or not at all.
void write_columnar(const Population& pop, const std::string& path);

}  // namespace crawleval
