// The command line of crawleval (command_line.cpp), callable without running a command.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace crawleval::cli {

/// Parses argv (every option's value is validated here) and runs the command; returns the exit
/// code (0 success, 2 bad input, 1 other failures). parse_only: return after parsing, running
/// nothing (the option parser's fuzzer).
int command_line(int argc, char** argv, bool parse_only = false);

/// Every command's options as the parser holds them, for the test that each --help and the
/// synopsis of docs/cli.md list exactly those: "learn mirrorsync" -> {"--arms,-K", "--budget,-B",
/// ...} (an option's long names, then its short ones; a positional by its name), help excluded.
std::map<std::string, std::vector<std::string>> parser_options();

}  // namespace crawleval::cli
