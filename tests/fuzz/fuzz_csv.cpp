// libFuzzer target: the sources CSV parser, then what an accepted population goes through. Any
// input must either parse into a population that passes its own checks or be refused with an
// InputError; an accepted one must then give every engine the reference's crawled sets within the
// budget (fuzz_check.hpp). Anything else (a crash, another exception, a sanitizer report, an
// engine that disagrees) is a finding. Built and run by scripts/fuzz.
#include <cstddef>
#include <cstdint>
#include <string>

#include "crawleval/base/error.hpp"
#include "crawleval/io/io.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  crawleval::Population pop;
  try {
    // Both treatments of unknown columns (refused, or ignored with a note: silenced here).
    crawleval::SourcesCsvOptions options;
    options.strict_columns = size % 2 == 1;
    options.note = [](const std::string&) {};
    pop = crawleval::parse_sources_csv(std::string(reinterpret_cast<const char*>(data), size),
                                       "fuzz.csv", options);
  } catch (const crawleval::InputError&) {
    return 0;  // refused with a message: fine
  }
  crawleval::fuzz::check_engines(pop);
  return 0;
}
