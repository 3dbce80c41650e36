// libFuzzer target: the .cpop reader (the bytes of a file or a pipe: parse_columnar; the pread
// path of files reads the same layout through the same slice reader), then the checks every
// reader applies (read_population's: validate_sources) and the engines (fuzz_check.hpp).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "crawleval/base/error.hpp"
#include "crawleval/io/columnar.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  crawleval::Population pop;
  try {
    pop = crawleval::parse_columnar(std::string_view(reinterpret_cast<const char*>(data), size),
                                    "fuzz.cpop");
    crawleval::validate_sources(pop, crawleval::RunConfig{});
  } catch (const crawleval::InputError&) {
    return 0;
  }
  crawleval::fuzz::check_engines(pop);
  return 0;
}
