// libFuzzer target: the sources CSV parser. Any input must either parse into a population that
// passes its own checks or be refused with an InputError; anything else (a crash, another
// exception, a sanitizer report) is a finding. Built and run by scripts/fuzz.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "crawleval/error.hpp"
#include "crawleval/io.hpp"
#include "crawleval/problem.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  try {
    // Both treatments of unknown columns (refused, or ignored with a note: silenced here).
    crawleval::SourcesCsvOptions options;
    options.strict_columns = size % 2 == 1;
    options.note = [](const std::string&) {};
    const crawleval::Population pop = crawleval::parse_sources_csv(
        std::string(reinterpret_cast<const char*>(data), size), "fuzz.csv", options);
    crawleval::RunConfig cfg;
    cfg.budget = pop.total_cost() > 0 ? pop.total_cost() / 2 : 1.0;
    cfg.epochs = 1;
    (void)crawleval::make_problem(pop, cfg);  // derived quantities of every accepted row
  } catch (const crawleval::InputError&) {
    // refused with a message: fine
  }
  return 0;
}
