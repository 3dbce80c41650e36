#include "crawleval/io/output.hpp"
#include "crawleval/io/output_file.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <thread>

#include "crawleval/base/error.hpp"
#include "crawleval/base/version.hpp"
#include "crawleval/engine/cuda_backend.hpp"
#include "crawleval/io/io.hpp"
#include "crawleval/model/rng.hpp"

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
  return s.no_interval.empty() ? "not representable (overflow)" : s.no_interval;
}

/// "1 epoch", "20 epochs": a count with its noun in the right number.
std::string count(uint64_t n, const char* singular, const char* plural) {
  return std::to_string(n) + " " + (n == 1 ? singular : plural);
}

/// How an interval was made, for the table's footer.
std::string interval_method(const Summary& s, uint64_t replications, uint64_t epochs) {
  if (s.method == "replications")
    return "Student t over " + count(replications, "replication", "replications");
  if (!s.no_interval.empty()) return "none";
  char lag[32];
  std::snprintf(lag, sizeof lag, "%.2f", s.lag1);
  const uint64_t used = s.samples * s.batch_epochs;
  return "Student t over " + count(s.samples, "batch mean", "batch means") + " of " +
         count(s.batch_epochs, "epoch", "epochs") +
         (used < epochs ? " (the last " + std::to_string(used) + " of " + std::to_string(epochs) +
                              " measured epochs, the mean's too)"
                        : "") +
         (s.copies ? " (of replication 0: the " + std::to_string(s.copies) +
                         " replications are copies, the run draws nothing; "
                   : std::string(" (one replication; ")) +
         "lag-1 correlation of the batch means " + lag + ", not significant)";
}

std::string iso_date_utc() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::size_t start = line.find_first_not_of(" \t", colon + 1);
        return start == std::string::npos ? "" : line.substr(start);
      }
    }
  return "";
}

}  // namespace

void print_interval_notes(std::ostream& os, const std::vector<PolicyResult>& results,
                          uint64_t epochs) {
  // One line per distinct method, naming its policies when they differ.
  std::vector<std::pair<std::string, std::string>> methods;  // text, policies
  for (const PolicyResult& r : results) {
    const std::string text = interval_method(r.reward, r.replications, epochs);
    auto it = std::find_if(methods.begin(), methods.end(),
                           [&](const auto& m) { return m.first == text; });
    if (it == methods.end())
      methods.emplace_back(text, r.name);
    else
      it->second += ", " + r.name;
  }
  for (const auto& [text, names] : methods)
    if (text != "none")
      os << "95% CI" << (methods.size() > 1 ? " (" + names + ")" : "") << ": " << text << "\n";
  for (const PolicyResult& r : results)
    if (!r.reward.no_interval.empty())
      os << "no 95% CI for " << r.name << ": " << r.reward.no_interval << "\n";
  for (const PolicyResult& r : results)
    if (!r.warm_up.warning.empty())
      os << "warning: " << r.name << ": " << r.warm_up.warning << "\n";
}

void print_gap_notes(std::ostream& os, const std::vector<PolicyResult>& results,
                     const BoundResult* bound, const char* beyond) {
  if (!bound || !bound->applicable) return;
  for (const PolicyResult& r : results) {
    if (!(r.reward.mean > bound->bound)) continue;
    os << "gap < 0 for " << r.name << ": ";
    if (!r.reward.no_interval.empty())
      os << "its mean is " << beyond << " the bound (no interval: it may be sampling noise)\n";
    else if (r.reward.ci_low <= bound->bound)
      os << "sampling noise, its 95% CI reaches the bound (no policy passes it in the long run)\n";
    else
      os << "its whole 95% CI is " << beyond
         << " the bound: the measured epochs are not the long run (a transient, or too few)\n";
  }
}

void print_results_table(std::ostream& os, const Problem& pr,
                         const std::vector<PolicyResult>& results, const BoundResult* bound,
                         const EvaluateOptions& options) {
  const RunConfig& c = pr.config;
  os << pr.population->origin << ": " << count(pr.global_size(), "source", "sources") << ", budget "
     << c.budget << ", " << to_string(c.model) << " model";
  if (c.model == Model::stochastic) os << " (" << utility_setting(c) << " utilities)";
  os << ", start " << to_string(c.start);
  if (c.observe == Observe::belief) os << ", belief observation";
  if (pr.has_expiry) os << ", content expiry";
  os << "\n"
     << count(c.replications, "replication", "replications") << " x "
     << count(c.epochs, "measured epoch", "measured epochs") << " after ";
  if (options.warm_up.automatic)
    os << "an automatic burn-in per policy (column B: MSER-5 on a pilot, at most "
       << options.warm_up.max_burn_in << ")";
  else
    os << count(c.burn_in, "burn-in epoch", "burn-in epochs");
  os << ", seed " << c.seed << "\n\n";
  const bool gaps = bound && bound->applicable;
  int name_width = 13;  // a longer name (a function policy's) widens the column
  for (const PolicyResult& r : results) name_width = std::max(name_width, int(r.name.size()) + 1);
  os << std::left << std::setw(name_width) << "policy" << std::right << std::setw(14)
     << "mean reward" << std::setw(27) << "95% CI" << std::setw(6) << "R" << std::setw(7) << "B"
     << std::setw(12) << "cost/epoch";
  if (gaps) os << std::setw(21) << "gap to bound";
  os << std::setw(10) << "time s" << std::setw(16) << "src-epochs/s\n";
  // A right-aligned cell of width w, with at least one space before it (a value wider than its
  // column, such as a gap of 6e286, would otherwise run into the one before).
  auto cell = [&os](int w, const std::string& text) -> std::ostream& {
    if (int(text.size()) >= w) return os << ' ' << text;
    return os << std::setw(w) << text;
  };
  for (const PolicyResult& r : results) {
    const int prec = decimals(r.reward.mean);
    const std::string ci = r.reward.no_interval.empty() ? "[" + fmt(r.reward.ci_low, prec) + ", " +
                                                              fmt(r.reward.ci_high, prec) + "]"
                                                        : "n/a (below)";
    os << std::left << std::setw(name_width) << r.name << std::right;
    cell(14, fmt(r.reward.mean, prec));
    cell(27, ci);
    cell(6, std::to_string(r.replications));
    cell(7, std::to_string(r.warm_up.burn_in) + (r.warm_up.warning.empty() ? "" : "!"));
    cell(12, fmt(r.cost.mean, decimals(r.cost.mean)));
    if (gaps) {
      const double gap = bound->bound - r.reward.mean;
      cell(21, fmt(gap, prec) +
                   (bound->bound != 0.0 ? " (" + fmt(100.0 * gap / bound->bound, 2) + "%)" : ""));
    }
    cell(10, fmt(r.seconds, 3));
    cell(16, fmt_rate(r.source_epochs_per_second)) << "\n";
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
  if (!results.empty()) {
    os << "\nbackend " << to_string(results.front().backend) << "\n";
    print_interval_notes(os, results, c.epochs);
    print_gap_notes(os, results, bound);
    // What the throughput column counts: N x (measured epochs) per second of their wall time, or
    // of every epoch of the loops where a backend does not time the measured ones.
    std::string every;
    for (const PolicyResult& r : results)
      if (!r.rate_of_measured_epochs) every += (every.empty() ? "" : ", ") + r.name;
    os << "src-epochs/s: sources x measured epochs per second (burn-in, pilots, set-up excluded)"
       << (every.empty() ? "" : "; " + every + ": every epoch, burn-in included") << "\n";
  }
}

nlohmann::json summary_json(const Summary& s) {
  nlohmann::json j = {{"samples", s.samples}, {"method", s.method}};
  j["mean"] = number(s.mean);
  j["ci95_low"] = number(s.ci_low);
  j["ci95_high"] = number(s.ci_high);
  j["ci95_half_width"] = number(s.half_width);
  j["no_interval"] = s.no_interval.empty() ? nlohmann::json() : nlohmann::json(s.no_interval);
  return j;
}

nlohmann::json bound_json(const BoundResult& b) {
  nlohmann::json j = {{"applicable", b.applicable}, {"absent", nlohmann::json::object()}};
  const std::string why = b.applicable ? "not representable (overflow)" : b.note;
  put(j, "value", b.applicable ? b.bound : NAN, why);
  put(j, "lambda", b.applicable ? b.lambda : NAN, why);
  put(j, "crawl_rate", b.applicable ? b.crawl_rate : NAN,
      b.applicable && std::isnan(b.crawl_rate) ? "not computed for this model" : why);
  j["evaluations"] = b.evaluations;
  j["seconds"] = b.seconds;
  j["note"] = b.note.empty() ? nlohmann::json() : nlohmann::json(b.note);
  return j;
}

void print_bound(std::ostream& os, const Problem& pr, const BoundResult& b) {
  os << pr.population->origin << ": " << count(pr.global_size(), "source", "sources") << ", budget "
     << pr.config.budget << ", " << to_string(pr.config.model) << " model"
     << (pr.config.observe == Observe::belief ? ", belief observation" : "") << "\n";
  if (!b.applicable) {
    os << "no bound: " << b.note << "\n";
    return;
  }
  os << std::setprecision(10)
     << "Lagrangian upper bound on the long-run reward per epoch: " << b.bound
     << "\n  multiplier lambda = " << b.lambda
     << ", relaxed crawl cost per epoch = " << b.crawl_rate << "\n  "
     << count(b.evaluations, "pass", "passes") << " over the population, " << fmt(b.seconds, 3)
     << " s\n";
}

nlohmann::json context_json(const std::string& backend, const std::string& device) {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
  double load[3] = {NAN, NAN, NAN};
  const int got = getloadavg(load, 3);
  nlohmann::json loads = nlohmann::json::array();
  for (int k = 0; k < 3; ++k) loads.push_back(k < got ? number(load[k]) : nlohmann::json());
  const std::string cpu = cpu_model();
  return {{"version", version()},
          {"commit", git_commit()},
          {"build_type", build_type()},
          {"compiler", compiler()},
          {"date", iso_date_utc()},
          {"host_name", host},
          {"cpu_model", cpu.empty() ? nlohmann::json() : nlohmann::json(cpu)},
          {"num_cpus", std::thread::hardware_concurrency()},
          {"load_avg", loads},
          {"backend", backend},
          {"device", device.empty() ? nlohmann::json() : nlohmann::json(device)},
          // Which draws the numbers came from (rng.hpp): 2 = 64-bit ids, version 1's below 2^32.
          {"draw_contract", kDrawContract}};
}

void add_context(nlohmann::json& j, const std::string& backend, const std::string& device) {
  j["version"] = version();
  j["context"] = context_json(backend, device);
}

nlohmann::json policy_json(const PolicyResult& r, uint64_t epochs, const BoundResult* bound,
                           const std::string& no_bound, nlohmann::json metrics) {
  using nlohmann::json;
  const WarmUp& w = r.warm_up;
  json p = {{"name", r.name},
            {"backend", to_string(r.backend)},
            {"absent", json::object()},
            {"ci_method", r.reward.method},
            {"ci_samples", r.reward.samples},
            // The replications gave the same reward to the last bit: the interval (if any) is
            // over replication 0's epochs.
            {"replications_are_copies", r.reward.copies > 0},
            {"replications", r.replications},
            {"target_ci_reached", r.target_reached},
            {"epochs", epochs},
            {"burn_in", w.burn_in},
            {"seconds", r.seconds},
            {"warm_up_seconds", w.pilot_seconds},
            {"loop_seconds", r.loop_seconds},
            {"comm_seconds", r.comm_seconds},  // sharded runs: inside collectives, rank 0
            {"source_epochs_per_second", r.source_epochs_per_second},
            {"metrics", std::move(metrics)}};
  put(p, "mean_reward", r.reward.mean, "no samples");
  put(p, "ci95_low", r.reward.ci_low, interval_reason(r.reward));
  put(p, "ci95_high", r.reward.ci_high, interval_reason(r.reward));
  put(p, "ci95_half_width", r.reward.half_width, interval_reason(r.reward));
  put(p, "std_error", r.reward.std_error, interval_reason(r.reward));
  const bool batches = r.reward.method == "batch_means";
  if (batches && r.reward.batch_epochs)
    p["ci_batch_epochs"] = r.reward.batch_epochs;
  else
    put(p, "ci_batch_epochs", NAN,
        batches ? interval_reason(r.reward) : "the interval is over replications");
  put(p, "ci_lag1_correlation", batches ? r.reward.lag1 : NAN,
      batches ? interval_reason(r.reward) : "the interval is over replications");
  put(p, "mean_cost_per_epoch", r.cost.mean, "no samples");
  if (bound && bound->applicable) {
    put(p, "gap_to_bound", bound->bound - r.reward.mean, "not representable (overflow)");
    put(p, "relative_gap_to_bound", (bound->bound - r.reward.mean) / std::fabs(bound->bound),
        bound->bound == 0.0 ? "the bound is 0" : "not representable (overflow)");
  } else {
    const std::string why = bound ? "no bound: " + bound->note : "no bound: " + no_bound;
    put(p, "gap_to_bound", NAN, why);
    put(p, "relative_gap_to_bound", NAN, why);
  }
  if (r.replication_reward.size() <= 100000)
    p["replication_rewards"] = r.replication_reward;
  else
    put(p, "replication_rewards", NAN, "more than 100000 replications");

  json check = {
      {"checked", w.window_checked},
      {"transient", w.transient_in_window},
      {"mser5_truncation", w.window_truncation},
      {"not_checked", w.window_not_checked.empty() ? json() : json(w.window_not_checked)}};
  check["shift"] = number(w.window_shift);
  check["half_width"] = number(w.window_half_width);
  json warm = {
      {"automatic", w.automatic},
      {"burn_in", w.burn_in},
      {"discarded_epochs", w.burn_in ? json({{"first", 0}, {"count", w.burn_in}}) : json()},
      {"reason", w.reason},
      {"method", w.automatic ? "MSER-5 (White 1997; White, Cobb and Spratt 2000) on a pilot of "
                               "replication 0; the burn-in is twice its truncation point"
                             : "given"},
      {"mser5_truncation", w.automatic ? json(w.mser_truncation) : json()},
      {"pilot_epochs", w.automatic ? json(w.pilot_epochs) : json()},
      {"pilots", w.pilots},
      {"settled", w.automatic ? json(w.settled) : json()},
      {"capped", w.capped},
      {"max_burn_in", w.automatic ? json(w.max_burn_in) : json()},
      {"window_check", check},
      {"warning", w.warning.empty() ? json() : json(w.warning)}};
  p["warm_up"] = warm;
  json series = json::array();
  for (double v : w.series) series.push_back(number(v));
  p["reward_series"] = {{"replication", 0},
                        {"first_epoch", w.series_first},
                        {"epochs_per_point", w.series_stride},
                        {"values", series}};
  return p;
}

nlohmann::json report_json(const std::string& command, nlohmann::json population,
                           nlohmann::json parameters, const std::string& backend,
                           const std::string& device, int processes, nlohmann::json policies,
                           const BoundResult* bound, const std::string& no_bound,
                           const std::vector<PolicyResult>& results, double total_seconds) {
  using nlohmann::json;
  json j = {{"tool", "crawleval"},
            {"version", version()},
            {"command", command},
            {"context", context_json(backend, device)},
            {"population", std::move(population)},
            {"parameters", std::move(parameters)},
            {"backend", backend},
            {"processes", processes},
            {"policies", std::move(policies)},
            {"absent", json::object()}};
  if (bound) {
    j["bound"] = bound_json(*bound);
  } else {
    j["bound"] = nullptr;
    j["absent"]["bound"] = no_bound;
  }
  json warnings = json::array();
  for (const PolicyResult& r : results)
    if (!r.warm_up.warning.empty()) warnings.push_back(r.name + ": " + r.warm_up.warning);
  j["warnings"] = warnings;
  double run_seconds = 0.0;
  for (const PolicyResult& r : results) run_seconds += r.seconds;
  j["timings"] = {{"policies_seconds", run_seconds},
                  {"bound_seconds", bound ? bound->seconds : 0.0},
                  {"total_seconds", total_seconds}};
  return j;
}

void add_policy_notes(nlohmann::json& j, const PolicyNotes& notes) {
  if (const auto& n = notes.numerical_index)
    j["stochastic_index"] = {{"grid", n->grid},
                             {"classes", n->classes},
                             {"seconds", n->seconds},
                             {"indexable", n->indexable}};
}

nlohmann::json results_json(const Problem& pr, const std::vector<PolicyResult>& results,
                            Backend backend, const BoundResult* bound, double total_seconds,
                            const EvaluateOptions& options) {
  using nlohmann::json;
  const RunConfig& c = pr.config;
  json population = {{"origin", pr.population->origin},
                     {"sources", pr.global_size()},
                     {"unit_costs", pr.unit_costs},
                     {"content_expiry", pr.has_expiry},
                     {"total_cost", pr.total_cost}};
  json parameters = {
      {"budget", c.budget},
      {"epochs", c.epochs},
      {"burn_in", options.warm_up.automatic ? json("auto") : json(c.burn_in)},
      {"max_burn_in", options.warm_up.automatic ? json(options.warm_up.max_burn_in) : json()},
      {"replications", c.replications},
      {"target_ci", options.target_ci > 0 ? json(options.target_ci) : json()},
      {"max_replications", options.max_replications},
      {"model", to_string(c.model)},
      {"utility", utility_setting(c)},
      {"observe", to_string(c.observe)},
      {"start", to_string(c.start)},
      {"seed", c.seed},
      {"epoch_length", c.epoch_length}};
  json policies = json::array();
  for (const PolicyResult& r : results)
    policies.push_back(
        policy_json(r, c.epochs, bound, "not computed (--no-bound)",
                    {{"reward", summary_json(r.reward)}, {"crawl_cost", summary_json(r.cost)}}));
  return report_json("run", std::move(population), std::move(parameters), to_string(backend),
                     backend == Backend::cuda ? cuda::device_description() : "", 1,
                     std::move(policies), bound, "not computed (--no-bound)", results,
                     total_seconds);
}

nlohmann::json optimal_json(const Population& pop, double epoch_length, double budget,
                            const OptimalResult& r) {
  nlohmann::json cycle = nlohmann::json::array();
  for (const auto& step : r.cycle) {
    nlohmann::json ids = nlohmann::json::array();
    for (uint32_t i : step) ids.push_back(pop.id_of(i));
    cycle.push_back(ids);
  }
  nlohmann::json caps = nlohmann::json::array();
  for (uint32_t c : r.caps) caps.push_back(c);
  nlohmann::json j = {{"tool", "crawleval"},
                      {"command", "optimal"},
                      {"population", {{"origin", pop.origin}, {"sources", pop.size()}}},
                      {"parameters", {{"budget", budget}, {"epoch_length", epoch_length}}},
                      // The optimum only where the bracket is closed: null otherwise.
                      {"optimal_reward", r.closed ? nlohmann::json(r.gain) : nlohmann::json()},
                      {"closed", r.closed},
                      {"bracket_tolerance", r.bracket_tolerance},
                      {"optimal_reward_low", r.gain_low},
                      {"optimal_reward_high", r.gain_high},
                      {"age_caps", caps},
                      {"states", r.states},
                      {"solves", r.solves},
                      {"iterations", r.iterations},
                      {"converged", r.converged},
                      {"stopped_by_work_limit", r.out_of_work},
                      {"optimal_cycle", cycle},
                      {"optimal_cycle_reward", r.cycle_reward}};
  add_context(j, "cpu");
  return j;
}

void print_optimal(std::ostream& os, const Population& pop, const OptimalResult& r) {
  os << std::setprecision(10);
  std::string caps;
  for (std::size_t i = 0; i < r.caps.size(); ++i)
    caps += (i ? ", " : "") + std::to_string(r.caps[i]);
  os << "exact optimum (policy iteration over the ages, capped per source at " << caps << "; "
     << r.states << " joint states, " << r.solves << " programmes, " << r.iterations
     << " iterations)\n";
  if (r.closed) {
    os << "  optimal reward per epoch: " << fmt(r.gain, 6) << "   (the optimum lies in ["
       << fmt(r.gain_low, 9) << ", " << fmt(r.gain_high, 9) << "]: the capped programmes' gains "
       << "from below and above agree)\n";
  } else {
    os << "  no optimum: the optimum lies in [" << fmt(r.gain_low, 6) << ", " << fmt(r.gain_high, 6)
       << "], wider than the relative tolerance " << shown_number(r.bracket_tolerance) << " ("
       << (r.out_of_work ? "the solve reached --max-work, its limit on state-action "
                           "evaluations: raise it"
           : r.converged ? "the caps that would close it exceed --max-states: raise it"
                         : "the solve did not converge")
       << "); any policy's long-run reward is also a lower bound\n";
  }
  os << "  " << (r.closed ? "an optimal cycle" : "the lower programme's cycle") << " ("
     << count(r.cycle.size(), "epoch", "epochs") << ", reward " << fmt(r.cycle_reward, 6) << "): ";
  for (std::size_t k = 0; k < r.cycle.size() && k < 40; ++k) {
    os << "{";
    for (std::size_t j = 0; j < r.cycle[k].size(); ++j)
      os << (j ? "," : "") << pop.id_of(r.cycle[k][j]);
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
  const Population& pop = *pr.population;
  for (Policy policy : policies) {
    double total = 0.0;
    std::vector<uint8_t> crawled(pr.size());
    EpochObserver obs = [&](const EpochView& v) {
      total += v.reward;
      const double running = total / double(v.epoch + 1);
      std::fill(crawled.begin(), crawled.end(), 0);
      for (uint32_t i : *v.selected) crawled[i] = 1;
      for (std::size_t i = 0; i < pr.size(); ++i)
        os << to_string(policy) << ',' << v.epoch << ',' << pop.id_of(i) << ',' << (*v.states)[i]
           << ',' << (*v.scores)[i] << ',' << int(crawled[i]) << ',' << v.reward << ',' << running
           << '\n';
    };
    reference_rollout(one, policy, &obs);
  }
  f.commit();
}

}  // namespace crawleval
