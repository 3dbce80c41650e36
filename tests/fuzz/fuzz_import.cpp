// libFuzzer target: the PoliteCrawling importer. The input holds the dataset's five files, in
// its file order, separated by lines "--". They are written to a directory and imported: the
// import must succeed (and the population pass its checks) or fail with an InputError.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "crawleval/base/error.hpp"
#include "crawleval/io/fresh_io.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace crawleval;
  static const char* kFiles[5] = {"host_hostid_isconstrained.txt", "url_urlid_hostid.txt",
                                  "urlid_imp.txt", "urlid_offset_history.txt",
                                  "urlid_chrate_compl_obs_hist.txt"};
  static const std::string dir = [] {
    const std::string d = std::filesystem::temp_directory_path().string() + "/crawleval_fuzz_" +
                          std::to_string(::getpid());
    std::filesystem::create_directories(d);
    return d;
  }();
  const std::string in(reinterpret_cast<const char*>(data), size);
  std::size_t at = 0;
  for (int f = 0; f < 5; ++f) {
    std::size_t end = in.find("\n--\n", at);
    if (end == std::string::npos) end = in.size();
    std::ofstream(dir + "/" + kFiles[f], std::ios::binary) << in.substr(at, end - at);
    at = end < in.size() ? end + 4 : in.size();
  }
  try {
    ImportOptions o;
    o.max_bad_rows = 2;
    const FreshPopulation pop = import_politecrawling(dir, o, nullptr);
    validate_fresh(pop);
  } catch (const InputError&) {
  }
  return 0;
}
