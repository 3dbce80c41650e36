// libFuzzer target: the command-line parser and its validators. The input is split into
// arguments at newlines; parsing must end with an exit code (0, or 2 for a refused option), never
// a crash. Commands are not run (parse_only). Built and run by scripts/fuzz.
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command_line.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  std::vector<std::string> args = {"crawleval"};
  std::string cur;
  for (std::size_t k = 0; k < size && args.size() < 64; ++k) {
    const char c = char(data[k]);
    if (c == '\n') {
      args.push_back(cur);
      cur.clear();
    } else if (c != '\0') {
      cur += c;
    }
  }
  if (!cur.empty()) args.push_back(cur);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // CLI11 prints help and errors: keep the fuzzer's output readable.
  std::ostringstream sink;
  std::streambuf* out = std::cout.rdbuf(sink.rdbuf());
  std::streambuf* err = std::cerr.rdbuf(sink.rdbuf());
  const int rc = crawleval::cli::command_line(int(args.size()), argv.data(), true);
  std::cout.rdbuf(out);
  std::cerr.rdbuf(err);
  if (rc != 0 && rc != 2) __builtin_trap();  // the parser only knows these two answers
  return 0;
}
