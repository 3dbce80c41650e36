// What the fuzzers check beyond "no crash": an accepted population goes through problem
// construction into the selection (where the cost-weight overflow of issue #25 sat, just past
// where parsing ends), and every engine must give the reference's answer within the budget.
// A violation aborts: libFuzzer reports it as a finding with the input that caused it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "crawleval/base/error.hpp"
#include "crawleval/engine/rollout.hpp"
#include "crawleval/evaluate/driver.hpp"
#include "crawleval/model/problem.hpp"

namespace crawleval::fuzz {

[[noreturn]] inline void finding(const char* what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what);
  std::abort();
}

/// Crawled sets epoch by epoch.
inline std::vector<std::vector<uint32_t>> sets_of(const Problem& pr, Policy p, Backend b) {
  std::vector<std::vector<uint32_t>> sets;
  const EpochObserver obs = [&](const EpochView& v) { sets.push_back(*v.selected); };
  rollout(pr, p, b, &obs);
  return sets;
}

/// Runs `pop` for a few epochs under budgets at its edges (the smallest cost, a third of the
/// total, the largest cost), on the reference and the CPU backend (its small engine, and its wide
/// engine on the population repeated past kCpuSmallN sources), both models: the same crawled
/// sets, never more than the budget. InputError (a refused budget or setting) is fine.
inline void check_engines(const Population& pop) {
  if (pop.size() == 0 || pop.size() > 4000) return;
  if (!pop.observe.empty()) {
    // The engines' whittle and greedy refuse a population with an observe column (mixed
    // observation is the function policies'): check that, then the engines without it.
    RunConfig cfg;
    cfg.budget = *std::max_element(pop.cost.begin(), pop.cost.end());
    cfg.epochs = 1;
    try {
      const Problem pr = make_problem(pop, cfg);
      rollout(pr, Policy::whittle, Backend::cpu);
      finding("the engines' whittle ran a population with an observe column");
    } catch (const InputError&) {
    }
    Population plain = pop;
    plain.observe.clear();
    check_engines(plain);
    return;
  }
  std::vector<double> c = pop.cost;
  std::sort(c.begin(), c.end());
  const double total = pop.total_cost();
  // The wide engine: the sources repeated (new ids) until there are more than kCpuSmallN.
  Population wide;
  wide.origin = pop.origin;
  for (uint64_t copy = 0; wide.size() <= kCpuSmallN; ++copy)
    for (std::size_t i = 0; i < pop.size(); ++i) {
      wide.lambda.push_back(pop.lambda[i]), wide.xi.push_back(pop.xi[i]);
      wide.mu.push_back(pop.mu[i]), wide.cost.push_back(pop.cost[i]);
      if (!pop.x0.empty()) wide.x0.push_back(pop.x0[i]);
      if (!pop.expiry.empty()) wide.expiry.push_back(pop.expiry[i]);
      wide.id.push_back(wide.id.size());
    }
  for (const Population* p : {&pop, static_cast<const Population*>(&wide)}) {
    for (double budget : {c.front(), total / 3, c.back()}) {
      for (Model model : {Model::deterministic, Model::stochastic}) {
        // The wide engine is the slow part of an input: one budget and model per input.
        if (p == &wide && (budget != total / 3 || model != Model::deterministic)) continue;
        RunConfig cfg;
        cfg.budget = p == &wide ? budget * double(wide.size()) / double(pop.size()) : budget;
        cfg.epochs = 2;
        cfg.burn_in = 1;
        cfg.threads = 1;
        cfg.model = model;
        Problem pr;
        try {
          pr = make_problem(*p, cfg);
        } catch (const InputError&) {
          continue;
        }
        for (Policy policy : {Policy::whittle, Policy::greedy}) {
          const auto want = sets_of(pr, policy, Backend::reference);
          const auto got = sets_of(pr, policy, Backend::cpu);
          if (got != want) finding("the CPU backend's crawled sets differ from the reference's");
          for (const auto& s : want) {
            long double used = 0;
            for (uint32_t i : s) used += p->cost[i];
            if (used > (long double)budget_limit_finite(cfg.budget) * (1 + 1e-15L))
              finding("a crawled set costs more than the budget");
          }
        }
      }
    }
  }
}

}  // namespace crawleval::fuzz
