// `crawleval index`: the stochastic model's numerical Whittle index of a population's sources
// (stochastic_index.hpp), beside Theorem 1's, with its indexability check.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace crawleval::cli {

/// Registers the subcommand on `app`; returns the handler to call after parsing (it returns the
/// exit code, or -1 when the subcommand was not parsed).
std::function<int()> add_index_command(CLI::App& app);

}  // namespace crawleval::cli
