// The windowed selection's figures on the CPU wide engine, which runs the GPU's plan math
// (window_select.hpp): window misses (each a fallback pass over every source), levels, recounts
// and listed sources per epoch, with the CPU time per measured epoch on one thread, for the
// Whittle policy on the synthetic population after a burn-in of 300 epochs (fresh start).
//
//   window_misses N M_OVER_N [deterministic|stochastic] [EPOCHS=100]
//
// Prints one JSON line. Not a test: it asserts nothing. bench/results/2026-12-07-window-spread.md
// compares two builds with it.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "crawleval/engine/rollout.hpp"
#include "crawleval/model/population.hpp"
#include "crawleval/model/problem.hpp"

namespace ce = crawleval;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s N M_OVER_N [deterministic|stochastic] [EPOCHS]\n", argv[0]);
    return 2;
  }
  const std::size_t n = std::size_t(std::atof(argv[1]));
  const double fraction = std::atof(argv[2]);
  const bool stochastic = argc > 3 && std::string(argv[3]) == "stochastic";
  ce::RunConfig cfg;
  cfg.budget = double(n) * fraction;
  cfg.epochs = argc > 4 ? uint64_t(std::atoll(argv[4])) : 100;
  cfg.burn_in = 300;
  cfg.start = ce::Start::fresh;
  cfg.threads = 1;
  cfg.model = stochastic ? ce::Model::stochastic : ce::Model::deterministic;
  const ce::Population pop = ce::synthetic_population(n, 1);
  const ce::Problem pr = ce::make_problem(pop, cfg);
  const ce::RolloutOutput out = ce::cpu_rollout(pr, ce::Policy::whittle);
  const ce::EngineCounters& k = out.counters;
  std::printf(
      "{\"n\": %zu, \"m_over_n\": %g, \"model\": \"%s\", \"ms_per_epoch\": %.4f, \"selections\": "
      "%llu, \"misses\": %llu, \"levels\": %llu, \"recounts\": %llu, \"listed_per_epoch\": %.0f, "
      "\"reward\": %.17g}\n",
      n, fraction, stochastic ? "stochastic" : "deterministic",
      1e3 * out.measured_seconds / double(out.measured_epochs), (unsigned long long)k.selections,
      (unsigned long long)k.window_misses, (unsigned long long)k.levels,
      (unsigned long long)k.recounts, double(k.listed) / double(k.selections),
      out.replication_reward.at(0));
  return 0;
}
