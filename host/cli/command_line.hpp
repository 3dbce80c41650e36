// The command line of crawleval (command_line.cpp), callable without running a command.
#pragma once

namespace crawleval::cli {

/// Parses argv (every option's value is validated here) and runs the command; returns the exit
/// code (0 success, 2 bad input, 1 other failures). parse_only: return after parsing, running
/// nothing (the option parser's fuzzer).
int command_line(int argc, char** argv, bool parse_only = false);

}  // namespace crawleval::cli
