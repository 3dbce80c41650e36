// libFuzzer target: the freshness population CSV, then its settings' checks, the bound and a few
// epochs of the engine (fast selection against the reference selection, within the budget).
#include <cstddef>
#include <cstdint>
#include <string>

#include "crawleval/analysis/fresh_rates.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/engine/fresh_engine.hpp"
#include "crawleval/evaluate/fresh_evaluate.hpp"
#include "crawleval/io/fresh_io.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace crawleval;
  FreshPopulation pop;
  try {
    pop = parse_fresh_csv(std::string(reinterpret_cast<const char*>(data), size), "fuzz.csv");
  } catch (const InputError&) {
    return 0;
  }
  if (pop.size() == 0 || pop.size() > 2000) return 0;
  double total = 0.0, smallest = pop.cost[0];
  for (double c : pop.cost) total += c, smallest = std::min(smallest, c);
  for (double budget : {smallest, total / 3}) {
    for (uint32_t cap : {0u, 1u}) {
      FreshConfig cfg;
      cfg.budget = budget;
      cfg.host_cap = cap;
      cfg.epochs = 2;
      cfg.threads = 1;
      std::vector<std::vector<uint32_t>> ref, fast;
      try {
        (void)fresh_bound(pop, cfg);
        for (bool reference : {true, false}) {
          const FreshObserver obs = [&](uint32_t, uint64_t, const std::vector<uint32_t>& c) {
            long double used = 0;
            for (uint32_t i : c) used += pop.cost[i];
            if (used > (long double)budget_limit_finite(budget) * (1 + 1e-15L))
              fuzz::finding("a crawled set costs more than the budget");
            (reference ? ref : fast).push_back(c);
          };
          fresh_rollout(pop, cfg, FreshPolicy::index, reference, &obs);
        }
      } catch (const InputError&) {
        continue;
      }
      if (ref != fast) fuzz::finding("the fast freshness selection differs from the reference");
    }
  }
  return 0;
}
