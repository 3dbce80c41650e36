#include "crawleval/output.hpp"
#include "crawleval/output_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

#include "crawleval/cuda_backend.hpp"
#include "crawleval/error.hpp"
#include "crawleval/io.hpp"

namespace crawleval {

namespace {

/// Fixed-point with `precision` decimals, or scientific when the value would be wider than a
/// table column (rewards of 1e12 ran the columns together).
std::string fmt(double v, int precision = 2) {
  if (!std::isfinite(v)) return "n/a";
  char buf[64];
  if (std::fabs(v) >= 1e9)
    std::snprintf(buf, sizeof buf, "%.4e", v);
  else
    std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

std::string fmt_rate(double v) {
  char buf[64];
  if (v >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2fG", v / 1e9);
  else if (v >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2fM", v / 1e6);
  else if (v >= 1e3)
    std::snprintf(buf, sizeof buf, "%.2fk", v / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

/// Decimals that keep a table column readable: 2 below 1e3, 1 below 1e5, none above.
int decimals(double v) {
  const double a = std::fabs(v);
  return a >= 1e5 ? 0 : a >= 1e3 ? 1 : 2;
}

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

/// obj[key] = v, or null with the reason under obj["absent"][key] (JSON has no inf or NaN).
void put(nlohmann::json& obj, const char* key, double v, const std::string& reason) {
  obj[key] = number(v);
  if (!std::isfinite(v)) obj["absent"][key] = reason;
}

/// Why a summary's interval is absent.
std::string interval_reason(const Summary& s) {
  return s.samples < 2 ? "fewer than 2 samples" : "not representable (overflow)";
}

}  // namespace

void print_results_table(std::ostream& os, const Problem& pr,
                         const std::vector<PolicyResult>& results, const BoundResult* bound) {
  const RunConfig& c = pr.config;
  os << pr.population->origin << ": " << pr.global_size() << " sources, budget " << c.budget << ", "
     << to_string(c.model) << " model";
  if (c.model == Model::stochastic) os << " (" << utility_setting(c) << " utilities)";
  os << ", start " << to_string(c.start);
  if (c.observe == Observe::belief) os << ", belief observation";
  if (pr.has_expiry) os << ", content expiry";
  os << "\n"
     << c.replications << " replication(s) x " << c.epochs << " epochs after " << c.burn_in
     << " burn-in epochs, seed " << c.seed << "\n\n";
  const bool gaps = bound && bound->applicable;
  int name_width = 13;  // a longer name (a function policy's) widens the column
  for (const PolicyResult& r : results) name_width = std::max(name_width, int(r.name.size()) + 1);
  os << std::left << std::setw(name_width) << "policy" << std::right << std::setw(14)
     << "mean reward" << std::setw(27) << "95% CI" << std::setw(6) << "R" << std::setw(12)
     << "cost/epoch";
  if (gaps) os << std::setw(21) << "gap to bound";
  os << std::setw(10) << "time s" << std::setw(16) << "src-epochs/s\n";
  for (const PolicyResult& r : results) {
    const int prec = decimals(r.reward.mean);
    std::string ci = "[" + fmt(r.reward.ci_low, prec) + ", " + fmt(r.reward.ci_high, prec) + "]";
    os << std::left << std::setw(name_width) << r.name << std::right << std::setw(14)
       << fmt(r.reward.mean, prec) << std::setw(27) << ci << std::setw(6) << r.replications
       << std::setw(12) << fmt(r.cost.mean, decimals(r.cost.mean));
    if (gaps) {
      const double gap = bound->bound - r.reward.mean;
      os << std::setw(21)
         << (fmt(gap, prec) +
             (bound->bound != 0.0 ? " (" + fmt(100.0 * gap / bound->bound, 2) + "%)" : ""));
    }
    os << std::setw(10) << fmt(r.seconds, 3) << std::setw(16)
       << fmt_rate(r.source_epochs_per_second) << "\n";
  }
  if (bound) {
    if (bound->applicable)
      os << std::left << std::setw(13) << "bound" << std::right << std::setw(14)
         << fmt(bound->bound, decimals(bound->bound))
         << "   Lagrangian upper bound on any policy (lambda " << fmt(bound->lambda, 6) << ", "
         << fmt(bound->seconds, 3) << " s)\n";
    else
      os << "bound: " << bound->note << "\n";
  }
  if (!results.empty())
    os << "\nbackend " << to_string(results.front().backend) << "; CI over "
       << (results.front().reward.method == "batch_means" ? "20 batch means of one run"
                                                          : "replications")
       << "\n";
}

nlohmann::json bound_json(const BoundResult& b) {
  if (!b.applicable) return {{"applicable", false}, {"note", b.note}};
  nlohmann::json j = {{"applicable", true}, {"evaluations", b.evaluations}, {"seconds", b.seconds}};
  put(j, "value", b.bound, "not representable (overflow)");
  put(j, "lambda", b.lambda, "not representable (overflow)");
  put(j, "crawl_rate", b.crawl_rate, "not representable (overflow)");
  return j;
}

void print_bound(std::ostream& os, const Problem& pr, const BoundResult& b) {
  os << pr.population->origin << ": " << pr.global_size() << " sources, budget " << pr.config.budget
     << ", " << to_string(pr.config.model) << " model"
     << (pr.config.observe == Observe::belief ? ", belief observation" : "") << "\n";
  if (!b.applicable) {
    os << "no bound: " << b.note << "\n";
    return;
  }
  os << std::setprecision(10)
     << "Lagrangian upper bound on the long-run reward per epoch: " << b.bound
     << "\n  multiplier lambda = " << b.lambda
     << ", relaxed crawl cost per epoch = " << b.crawl_rate << "\n  " << b.evaluations
     << " passes over the population, " << fmt(b.seconds, 3) << " s\n";
}

nlohmann::json results_json(const Problem& pr, const std::vector<PolicyResult>& results,
                            Backend backend, const BoundResult* bound, double total_seconds) {
  using nlohmann::json;
  const RunConfig& c = pr.config;
  json j;
  j["tool"] = "crawleval";
  j["command"] = "run";
  j["population"] = {{"origin", pr.population->origin},
                     {"sources", pr.global_size()},
                     {"unit_costs", pr.unit_costs},
                     {"content_expiry", pr.has_expiry},
                     {"total_cost", pr.total_cost}};
  j["parameters"] = {{"budget", c.budget},
                     {"epochs", c.epochs},
                     {"burn_in", c.burn_in},
                     {"replications", c.replications},
                     {"model", to_string(c.model)},
                     {"utility", utility_setting(c)},
                     {"observe", to_string(c.observe)},
                     {"start", to_string(c.start)},
                     {"seed", c.seed},
                     {"epoch_length", c.epoch_length}};
  j["backend"] = to_string(backend);
  if (backend == Backend::cuda) j["device"] = cuda::device_description();
  json policies = json::array();
  for (const PolicyResult& r : results) {
    json p = {{"name", r.name},
              {"backend", to_string(r.backend)},
              {"ci_method", r.reward.method},
              {"ci_samples", r.reward.samples},
              {"replications", r.replications},
              {"target_ci_reached", r.target_reached},
              {"epochs", c.epochs},
              {"seconds", r.seconds},
              {"loop_seconds", r.loop_seconds},
              {"comm_seconds", r.comm_seconds},  // sharded runs: inside collectives, rank 0
              {"source_epochs_per_second", r.source_epochs_per_second}};
    put(p, "mean_reward", r.reward.mean, "no samples");
    put(p, "ci95_low", r.reward.ci_low, interval_reason(r.reward));
    put(p, "ci95_high", r.reward.ci_high, interval_reason(r.reward));
    put(p, "ci95_half_width", r.reward.half_width, interval_reason(r.reward));
    put(p, "std_error", r.reward.std_error, interval_reason(r.reward));
    put(p, "mean_cost_per_epoch", r.cost.mean, "no samples");
    if (bound && bound->applicable) {
      put(p, "gap_to_bound", bound->bound - r.reward.mean, "not representable (overflow)");
      put(p, "relative_gap_to_bound", (bound->bound - r.reward.mean) / bound->bound,
          bound->bound == 0.0 ? "the bound is 0" : "not representable (overflow)");
    }
    if (r.replication_reward.size() <= 100000) p["replication_rewards"] = r.replication_reward;
    policies.push_back(p);
  }
  j["policies"] = policies;
  if (bound) j["bound"] = bound_json(*bound);
  double run_seconds = 0.0;
  for (const PolicyResult& r : results) run_seconds += r.seconds;
  j["timings"] = {{"policies_seconds", run_seconds},
                  {"bound_seconds", bound ? bound->seconds : 0.0},
                  {"total_seconds", total_seconds}};
  return j;
}

nlohmann::json optimal_json(const Population& pop, double epoch_length, double budget,
                            const OptimalResult& r) {
  nlohmann::json cycle = nlohmann::json::array();
  for (const auto& step : r.cycle) {
    nlohmann::json ids = nlohmann::json::array();
    for (uint32_t i : step) ids.push_back(pop.id[i]);
    cycle.push_back(ids);
  }
  return {{"tool", "crawleval"},
          {"command", "optimal"},
          {"population", {{"origin", pop.origin}, {"sources", pop.size()}}},
          {"parameters", {{"budget", budget}, {"epoch_length", epoch_length}}},
          {"optimal_reward", r.gain},
          {"optimal_reward_low", r.gain_low},
          {"optimal_reward_high", r.gain_high},
          {"cap_error_bound", r.cap_error},
          {"age_cap", r.cap},
          {"states", r.states},
          {"iterations", r.iterations},
          {"converged", r.converged},
          {"optimal_cycle", cycle},
          {"optimal_cycle_reward", r.cycle_reward}};
}

void print_optimal(std::ostream& os, const Population& pop, const OptimalResult& r) {
  os << std::setprecision(10);
  os << "exact optimum (relative value iteration, " << r.states << " joint states, ages capped at "
     << r.cap << ")\n";
  os << "  optimal reward per epoch: " << fmt(r.gain, 6) << "   (bracket [" << fmt(r.gain_low, 6)
     << ", " << fmt(r.gain_high, 6) << "], " << r.iterations << " iterations"
     << (r.converged ? "" : ", NOT converged") << ")\n";
  os << "  cap error bound: the true optimum is at most " << fmt(r.gain_high + r.cap_error, 6)
     << "\n";
  os << "  an optimal cycle (" << r.cycle.size() << " epochs, reward " << fmt(r.cycle_reward, 6)
     << "): ";
  for (std::size_t k = 0; k < r.cycle.size() && k < 40; ++k) {
    os << "{";
    for (std::size_t j = 0; j < r.cycle[k].size(); ++j)
      os << (j ? "," : "") << pop.id[r.cycle[k][j]];
    os << "}";
  }
  if (r.cycle.size() > 40) os << " ...";
  os << "\n";
}

void write_json(const std::string& path, const nlohmann::json& j, const std::string& option) {
  OutputFile f(path, option);
  f.stream() << j.dump(2) << "\n";
  f.commit();
}

void write_trace(const std::string& path, const Problem& pr, const std::vector<Policy>& policies) {
  constexpr std::size_t kMaxTraceSources = 10000;
  if (pr.size() > kMaxTraceSources)
    throw InputError("--trace is for small populations (at most 10000 sources); this one has " +
                     std::to_string(pr.size()));
  Problem one = pr;
  one.config.replications = 1;
  OutputFile f(path, "--trace");
  std::ostream& os = f.stream();
  os << "policy,epoch,source,state,score,crawled,epoch_reward,running_average\n";
  os << std::setprecision(17);
  const std::vector<uint64_t>& ids = pr.population->id;
  for (Policy policy : policies) {
    double total = 0.0;
    std::vector<uint8_t> crawled(pr.size());
    EpochObserver obs = [&](const EpochView& v) {
      total += v.reward;
      const double running = total / double(v.epoch + 1);
      std::fill(crawled.begin(), crawled.end(), 0);
      for (uint32_t i : *v.selected) crawled[i] = 1;
      for (std::size_t i = 0; i < pr.size(); ++i)
        os << to_string(policy) << ',' << v.epoch << ',' << ids[i] << ',' << (*v.states)[i] << ','
           << (*v.scores)[i] << ',' << int(crawled[i]) << ',' << v.reward << ',' << running << '\n';
    };
    reference_rollout(one, policy, &obs);
  }
  f.commit();
}

}  // namespace crawleval
