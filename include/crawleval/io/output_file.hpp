// Output files, and what happens to them when the program is interrupted.
//
// An output never appears half-written and nothing but its target changes:
//  * "-" is standard output;
//  * an existing device, FIFO or socket (also behind a symbolic link: /dev/stdout, /dev/null) is
//    written directly, never replaced;
//  * anything else is written to a temporary file created exclusively in the target's directory
//    (mkstemp: a name nobody can predict, no link followed), then renamed over the target; a
//    symbolic link is followed to the file it names, which is replaced (the link stays);
//  * a read-only target, a directory, a dangling link, or a directory in which nothing can be
//    created is refused (InputError), also when running as root. check_output() says so before
//    any computation starts;
//  * on a write error, an interruption or destruction without commit(), the temporary is removed.
//
// SIGINT and SIGTERM (install_interrupt_handlers): the temporaries of unfinished outputs are
// removed, the message says what was interrupted and which outputs are complete (they are kept),
// and the program exits with 130 or 143.
#pragma once

#include <memory>
#include <ostream>
#include <string>

#include "crawleval/base/monitor.hpp"

namespace crawleval {

/// Checks that `path` can be written, without writing it; InputError naming `option`, the path and
/// the reason.
void check_output(const std::string& path, const std::string& option);

class OutputFile {
 public:
  /// `option` names the file in messages (e.g. "--json").
  explicit OutputFile(const std::string& path, const std::string& option = "output");
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  std::ostream& stream();
  /// Makes the output complete; Error when it could not be written (disk full, /dev/full).
  void commit();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Installs the SIGINT and SIGTERM handlers described above; `program` prefixes the message.
void install_interrupt_handlers(const char* program);

}  // namespace crawleval
