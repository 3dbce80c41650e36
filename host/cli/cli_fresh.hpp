// The freshness model's subcommands: `crawleval import politecrawling` and
// `crawleval fresh run|bound|generate`.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace crawleval {
class Comm;  // comm.hpp
}  // namespace crawleval

namespace crawleval::cli {

/// Registers the subcommands on `app`; returns the handler to call after parsing with the MPI
/// ranks (null in one process; `fresh run` shards over them): it returns the exit code, or -1
/// when none of these subcommands was parsed.
std::function<int(Comm*)> add_fresh_commands(CLI::App& app);

}  // namespace crawleval::cli
