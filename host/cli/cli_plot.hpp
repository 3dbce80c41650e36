// `crawleval plot RESULT.json [...]`: figures of results, drawn by the Python package's plot
// script (python/crawleval/plot.py, built into the binary) with matplotlib.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace crawleval::cli {

/// Registers the subcommand on `app`; returns the handler to call after parsing (it returns the
/// exit code, or -1 when the subcommand was not parsed).
std::function<int()> add_plot_command(CLI::App& app);

/// The text of python/crawleval/plot.py (generated at build time).
const char* plot_script();

}  // namespace crawleval::cli
