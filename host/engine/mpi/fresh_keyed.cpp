// One GPU per rank for the freshness model (fresh_keyed.hpp): the pass's settings, its refusals and
// its host twin, fresh_keyed_step row by row with the CPU engine's chunk sums. (The agent that
// drives a pass is the CPU engine's, fresh_rollout.cpp.)
#include "crawleval/engine/fresh_keyed.hpp"

#include <algorithm>
#include <vector>

#include "crawleval/base/comm.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/model/custom_fresh_policy.hpp"
#include "crawleval/model/problem.hpp"

namespace crawleval {

std::string fresh_keyed_refusal(const FreshPopulation& pop, const FreshConfig& cfg) {
  if (cfg.learn)
    return "--learn: the learning variant runs on the CPU only (use --backend cpu or auto)";
  if (pop.size() > kMaxLocalSources)
    return "a rank holds at most 4,294,967,294 URLs on a GPU: use more ranks";
  return "";
}

namespace detail {

FreshKeyedColumns fresh_keyed_columns(const FreshPopulation& pop, const FreshConfig& cfg,
                                      FreshPolicy policy, const FreshPlan& plan, bool function) {
  if (function) policy = FreshPolicy::index;  // (its scores are not computed)
  const std::size_t m = pop.size();
  CE_EXPECTS(plan.params.size() == m, "internal: a freshness plan of other rows");
  FreshKeyedColumns c;
  c.params = plan.params.data();
  c.complete = pop.complete.data();
  c.cost = pop.cost.data();
  c.rho = plan.rates.rho.empty() ? nullptr : plan.rates.rho.data();
  c.coins = coin_policy(policy);
  c.coin_p = c.coins && !plan.rates.p.empty() ? plan.rates.p.data() : nullptr;
  if (cfg.start == FreshStart::steady) {
    CE_EXPECTS(plan.steady_period.size() == m, "internal: a steady start without its periods");
    c.period = plan.steady_period.data();
  }
  c.policy = policy;
  c.objective = cfg.objective;
  c.epoch_length = cfg.epoch_length;
  c.nutch_start = cfg.nutch_start;
  c.nutch_max = cfg.nutch_max;
  c.seed = cfg.seed;
  c.first = pop.first;
  c.nutch = policy == FreshPolicy::nutch_adaptive;
  c.function = function;
  return c;
}

namespace {

/// --policy custom: the header this file is built with (CMake's CRAWLEVAL_FRESH_POLICY).
struct CompiledCustom {
  static double score(const FreshView& v, const FreshParams& p, double epoch_length) {
    return custom::fresh_score(v, p, epoch_length);
  }
};

class HostFreshKeyedPass final : public FreshKeyedPass {
 public:
  HostFreshKeyedPass(const FreshPopulation& pop, const FreshConfig& cfg, FreshPolicy policy,
                     const FreshPlan& plan, bool function)
      : c_(fresh_keyed_columns(pop, cfg, policy, plan, function)),
        n_(pop.size()),
        age_(n_),
        changes_(n_),
        want_(n_),
        schedule_(c_.nutch ? n_ : 0) {
    c_.age = age_.data(), c_.changes = changes_.data(), c_.want = want_.data();
    c_.schedule = c_.nutch ? schedule_.data() : nullptr;
  }

  uint64_t start(uint32_t replication) override {
    uint64_t cut = 0;
    for (std::size_t j = 0; j < n_; ++j) cut += fresh_keyed_start(c_, j, replication);
    return cut;
  }
  uint64_t run(const FreshKeyedEpoch& e, const uint8_t* crawled, double* sums, uint64_t* keys,
               uint8_t* due, uint32_t* age, uint32_t* seen) override {
    const std::size_t chunks = (n_ + kFoldChunk - 1) / kFoldChunk;
    uint64_t cut = 0;
    for (std::size_t c = 0; c < chunks; ++c) {
      double fresh = 0.0, penalty = 0.0, cost = 0.0;
      for (std::size_t j = c * kFoldChunk; j < std::min(n_, (c + 1) * kFoldChunk); ++j) {
        const bool crawl = e.apply && crawled[j];
        const FreshKeyedSums s =
            fresh_keyed_step<CompiledCustom>(c_, j, e, crawl, keys, due, age, seen);
        fresh += s.fresh, penalty += s.penalty, cut += s.saturated;
        if (crawl) cost += s.cost;
      }
      if (e.apply) sums[c] = fresh, sums[chunks + c] = penalty, sums[2 * chunks + c] = cost;
    }
    return cut;
  }

 private:
  FreshKeyedColumns c_;
  std::size_t n_;
  std::vector<uint32_t> age_, changes_;
  std::vector<uint8_t> want_;
  std::vector<NutchState> schedule_;
};

}  // namespace

std::unique_ptr<FreshKeyedPass> host_fresh_keyed_pass(const FreshPopulation& pop,
                                                      const FreshConfig& cfg, FreshPolicy policy,
                                                      const FreshPlan& plan, bool function) {
  return std::make_unique<HostFreshKeyedPass>(pop, cfg, policy, plan, function);
}

}  // namespace detail

}  // namespace crawleval
