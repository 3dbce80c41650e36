// The freshness model's settings (fresh_config.hpp): the run's checks, an MPI
// rank's shard, the rate solves' columns.
#include <cmath>
#include <optional>
#include <string>

#include "base/chunked_sum.hpp"
#include "crawleval/base/comm.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/model/fresh_config.hpp"
#include "crawleval/model/problem.hpp"

namespace crawleval {

namespace {

void validate_fresh_rows(const FreshPopulation& pop, const FreshConfig& cfg, bool whole) {
  if (whole || pop.size() > 0) validate_fresh(pop);
  CE_EXPECTS(pop.size() < 0xFFFFFFFFull, "the freshness engine takes at most 2^32 - 2 sources");
  CE_EXPECTS(std::isfinite(cfg.epoch_length) && cfg.epoch_length > 0.0,
             "--epoch-length: must be a finite number > 0");
  CE_EXPECTS(std::isfinite(cfg.budget) && cfg.budget > 0.0,
             "--budget: must be a finite number > 0");
  CE_EXPECTS(cfg.epochs >= 1, "--epochs: must be >= 1");
  CE_EXPECTS(cfg.burn_in < 0xFFFFFFFFull && cfg.epochs < 0xFFFFFFFFull - cfg.burn_in,
             "--epochs + --burn-in: at most 2^32 - 2");
  CE_EXPECTS(cfg.replications >= 1, "--replications: must be >= 1");
  CE_EXPECTS(cfg.replications <= UINT32_MAX - cfg.first_replication,
             "--replications: the replications' draw indices pass 2^32");
  CE_EXPECTS(cfg.epsilon >= 0.0 && cfg.epsilon <= 1.0, "--epsilon: must be in [0, 1]");
  CE_EXPECTS(cfg.relearn >= 1, "--relearn: must be >= 1");
  CE_EXPECTS(std::isfinite(cfg.prior) && cfg.prior > 0.0, "--prior: must be a finite number > 0");
  CE_EXPECTS(std::isfinite(cfg.nutch_start) && cfg.nutch_start >= 1.0,
             "--nutch-start: must be a finite number >= 1 (epochs)");
  CE_EXPECTS(std::isfinite(cfg.nutch_max) && cfg.nutch_max >= cfg.nutch_start,
             "--nutch-max: must be a finite number >= --nutch-start");
  for (std::size_t i = 0; i < pop.size(); ++i) {
    const double rt = pop.rate[i] * cfg.epoch_length;
    if (!(rt <= 1.0e4))
      throw InputError(printable(pop.origin, 256) + ": source " + std::to_string(pop.id[i]) +
                       ": field 'rate': rate x epoch length " + shown_number(rt) +
                       " exceeds 10000 changes per epoch (shorten --epoch-length)");
    // Below 1e-200 changes per epoch the relaxed problem's best period (about sqrt(2 lambda C /
    // (w D T)) epochs) could pass 1e300, beyond the bound's search: such a page never changes
    // within any run. 0 is exact (never changes).
    if (rt != 0.0 && rt < 1.0e-200)
      throw InputError(printable(pop.origin, 256) + ": source " + std::to_string(pop.id[i]) +
                       ": field 'rate': rate x epoch length " + shown_number(rt) +
                       " is below 1e-200 changes per epoch (give 0 for a page that never changes)");
    // The policies' scores are importance / cost times a probability, and the rate solves'
    // multiplier is of that size (searched within [1e-300, 1e300]): beyond these ranges they leave
    // the normal doubles, and the results changed with the units (200 random pages: every policy
    // the same to 12 digits from importance / cost 1e-295 to 1e295, other numbers at 1e-302 and at
    // 1e305). Only the ratios of the importances, and those of the costs to the budget, matter:
    // scaling them is always a way out.
    const double c = pop.cost[i], w = pop.importance[i];
    if (!(c >= 1e-300 && c <= 1e300))
      throw InputError(printable(pop.origin, 256) + ": source " + std::to_string(pop.id[i]) +
                       ": field 'cost': " + shown_number(c) +
                       " is outside [1e-300, 1e300]; only the costs' ratios to the budget "
                       "matter: scale them and --budget by the same factor");
    if (w > 0.0 && !(w / c >= 1e-290 && w / c <= 1e290))
      throw InputError(printable(pop.origin, 256) + ": source " + std::to_string(pop.id[i]) +
                       ": importance / cost " + shown_number(w / c) +
                       " is outside [1e-290, 1e290], where the scores and the rate solves keep "
                       "their precision; only ratios matter: scale the importances, or the costs "
                       "and --budget");
  }
}

}  // namespace

void validate_fresh_config(const FreshPopulation& pop, const FreshConfig& cfg, Comm* processes) {
  Comm& comm = processes ? *processes : solo_comm();
  // This process's rows first (a rank's part may be empty: the run's emptiness is checked below),
  // agreed over the ranks: every rank throws the first failing rank's error.
  collectively(comm, [&] { validate_fresh_rows(pop, cfg, comm.size() == 1); });
  CE_EXPECTS(comm.sum(uint64_t(pop.size())) > 0, printable(pop.origin, 256) + ": no sources");
  // Results are normalised by the total importance: it must be a normal, finite number, with room
  // for the per-epoch sums (importance times a harmonic number). Only the ratios of the
  // importances matter, so scaling them all is always a way out.
  const double total_w = detail::chunked_sum(comm, pop.size(), cfg.threads,
                                             [&](std::size_t i) { return pop.importance[i]; });
  CE_EXPECTS(total_w > 0.0, printable(pop.origin, 256) +
                                ": every importance is 0: there is no freshness to measure");
  CE_EXPECTS(total_w <= 1e300 && total_w >= 1e-300,
             printable(pop.origin, 256) + ": the importances sum to " + shown_number(total_w) +
                 ", outside [1e-300, 1e300] where the normalised results keep their precision; "
                 "only their ratios matter: scale them all by the same factor");
  // The rate solves divide the budget by the costs' sum (uniform: R / sum C), and sum C D.
  const double total_c = detail::chunked_sum(comm, pop.size(), cfg.threads,
                                             [&](std::size_t i) { return pop.cost[i]; });
  CE_EXPECTS(total_c <= 1e303,
             printable(pop.origin, 256) + ": the costs sum to " + shown_number(total_c) +
                 ", above 1e303; only their ratios to the budget matter: scale them and --budget "
                 "by the same factor");
}

FreshColumns FreshColumns::of(const FreshPopulation& pop, std::size_t first, std::size_t count) {
  CE_EXPECTS(first + count <= pop.size(), "internal: columns beyond the population");
  return FreshColumns{pop.importance.data() + first, pop.rate.data() + first,
                      pop.cost.data() + first, pop.complete.data() + first, count};
}

bool rate_based(FreshPolicy p) {
  return p == FreshPolicy::lambda_crawl || p == FreshPolicy::lambda_crawl_approx ||
         p == FreshPolicy::binary_lambda_crawl || p == FreshPolicy::uniform ||
         p == FreshPolicy::proportional;
}

Shard fresh_shard(const FreshPopulation& pop, Comm& comm) {
  const std::vector<uint64_t> sizes = comm.allgather(std::vector<uint64_t>{pop.size()});
  uint64_t total = 0, first = 0;
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    if (int(r) == comm.rank()) first = total;
    total += sizes[r];
  }
  const Shard want = shard_of(total, comm.rank(), comm.size());
  // (Agreed, so that every rank throws rather than one while the others wait at a collective.)
  const bool mine = want.first == first && want.count == pop.size();
  CE_EXPECTS(comm.all(mine),
             mine ? std::string("internal: another process holds the wrong part")
                  : "internal: process " + std::to_string(comm.rank()) + " holds sources " +
                        std::to_string(first) + ".." + std::to_string(first + pop.size()) +
                        " of the run where its part is " + std::to_string(want.first) + ".." +
                        std::to_string(want.first + want.count));
  return want;
}

}  // namespace crawleval
