// crawleval: evaluate crawl-scheduling policies on the ephemeral-content model.
//
//   crawleval run      --paper-example | --sources FILE.csv | --synthetic N  --budget M  [...]
//   crawleval optimal  --paper-example | --sources FILE.csv  --budget M
//   crawleval generate --synthetic N --seed S --out FILE.csv
//
// Exit codes: 0 success, 2 bad input (message names the file, line and field), 1 other failures.
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <chrono>
#include <iostream>

#include "crawleval/cuda_backend.hpp"
#include "crawleval/driver.hpp"
#include "crawleval/error.hpp"
#include "crawleval/io.hpp"
#include "crawleval/optimal.hpp"
#include "crawleval/output.hpp"

namespace ce = crawleval;

namespace {

struct PopulationArgs {
  std::string sources;
  bool paper = false;
  uint64_t synthetic = 0;
  std::string synthetic_costs = "unit";

  void add(CLI::App* app, bool allow_synthetic) {
    app->add_option("--sources", sources, "CSV of sources: header with lambda,xi,mu[,cost,id,x0]");
    app->add_flag("--paper-example", paper, "the papers' 4-source example (Table 1)");
    if (allow_synthetic) {
      app->add_option("--synthetic", synthetic, "a synthetic population of N sources (see --seed)");
      app->add_option("--synthetic-costs", synthetic_costs, "unit | lognormal")
          ->check(CLI::IsMember({"unit", "lognormal"}));
    }
  }

  ce::Population load(uint64_t seed) const {
    const int given = int(!sources.empty()) + int(paper) + int(synthetic > 0);
    if (given != 1)
      throw ce::InputError("give exactly one of --sources FILE, --paper-example, --synthetic N");
    if (paper) return ce::paper_example();
    if (synthetic > 0)
      return ce::synthetic_population(synthetic, seed,
                                      synthetic_costs == "lognormal" ? ce::SyntheticCosts::lognormal
                                                                     : ce::SyntheticCosts::unit);
    return ce::read_sources_csv(sources);
  }
};

template <class T, class Parse>
T parse_or_throw(const std::string& text, Parse parse, const char* flag, const char* choices) {
  const auto v = parse(text);
  if (!v) throw ce::InputError(std::string(flag) + " '" + text + "' is not one of: " + choices);
  return *v;
}

int run_command(const PopulationArgs& pa, ce::RunConfig cfg,
                const std::vector<std::string>& policy_names, const std::string& model,
                const std::string& utility, const std::string& start,
                const std::string& backend_name, const std::string& json_path,
                const std::string& trace_path, bool no_progress) {
  const auto t0 = std::chrono::steady_clock::now();
  cfg.model =
      parse_or_throw<ce::Model>(model, ce::parse_model, "--model", "deterministic, stochastic");
  cfg.utility = parse_or_throw<ce::UtilityDist>(utility, ce::parse_utility, "--utility",
                                                "deterministic, exponential");
  std::vector<ce::Policy> policies;
  for (const std::string& name : policy_names)
    policies.push_back(parse_or_throw<ce::Policy>(name, ce::parse_policy, "--policy",
                                                  "whittle, greedy, round_robin, random"));
  if (policies.empty()) throw ce::InputError("--policy needs at least one policy");
  const ce::Backend requested = parse_or_throw<ce::Backend>(
      backend_name, ce::parse_backend, "--backend", "auto, cpu, reference, cuda");
  const ce::Population pop = pa.load(cfg.seed);
  if (start.empty())
    cfg.start = pop.x0.empty() ? ce::Start::empty : ce::Start::given;
  else
    cfg.start =
        parse_or_throw<ce::Start>(start, ce::parse_start, "--start", "empty, fresh, full, given");
  cfg.progress = !no_progress;
  const ce::Problem problem = ce::make_problem(pop, cfg);
  const ce::Backend backend = ce::resolve_backend(requested);
  if (!trace_path.empty() && problem.size() > 10000)
    throw ce::InputError("--trace is for small populations (at most 10000 sources); this one has " +
                         std::to_string(problem.size()));

  std::vector<ce::PolicyResult> results;
  for (ce::Policy p : policies) results.push_back(ce::evaluate(problem, p, backend));
  ce::print_results_table(std::cout, problem, results);
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!json_path.empty()) {
    ce::write_json(json_path, ce::results_json(problem, results, backend, total));
    std::cout << "wrote " << json_path << "\n";
  }
  if (!trace_path.empty()) {
    ce::write_trace(trace_path, problem, policies);
    std::cout << "wrote " << trace_path << " (replication 0, reference backend)\n";
  }
  return ce::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "crawleval: evaluate crawl-scheduling policies (Whittle index and baselines) on the "
      "ephemeral-content crawling model"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "crawleval 0.1.0");

  // run
  PopulationArgs run_pop;
  ce::RunConfig cfg;
  std::vector<std::string> policy_names = {"whittle", "greedy", "round_robin", "random"};
  std::string model = "deterministic", utility = "exponential", start, backend = "auto";
  std::string json_path, trace_path;
  bool no_progress = false;
  CLI::App* run = app.add_subcommand("run", "simulate policies and report mean reward per epoch");
  run_pop.add(run, true);
  run->add_option("--seed", cfg.seed, "seed of the synthetic population and of every random draw")
      ->capture_default_str();
  run->add_option("--budget,-M", cfg.budget, "crawl budget per epoch (sum of costs)")->required();
  run->add_option("--epochs,-H", cfg.epochs, "measured epochs per replication")
      ->capture_default_str();
  run->add_option("--burn-in,-B", cfg.burn_in, "epochs run before measuring")
      ->capture_default_str();
  run->add_option("--replications,-R", cfg.replications, "independent replications")
      ->capture_default_str();
  run->add_option("--model", model, "deterministic | stochastic")->capture_default_str();
  run->add_option("--utility", utility, "stochastic model: deterministic | exponential utilities")
      ->capture_default_str();
  run->add_option("--start", start,
                  "initial states: empty | fresh | full | given (default: given "
                  "when the CSV has x0, else fresh)");
  run->add_option("--epoch-length,-T", cfg.epoch_length, "epoch length T")->capture_default_str();
  run->add_option("--policy", policy_names, "whittle,greedy,round_robin,random")
      ->delimiter(',')
      ->capture_default_str();
  run->add_option("--backend", backend, "auto | cpu | reference | cuda")->capture_default_str();
  run->add_option("--threads", cfg.threads, "CPU threads (0: all)")->capture_default_str();
  run->add_option("--json", json_path, "write results as JSON");
  run->add_option("--trace", trace_path, "write per-epoch states and actions as CSV (small N)");
  run->add_flag("--no-progress", no_progress, "no progress lines on stderr");

  // optimal
  PopulationArgs opt_pop;
  double opt_budget = 1.0, opt_t = 1.0;
  ce::OptimalOptions opt_options;
  std::string opt_json;
  CLI::App* optimal =
      app.add_subcommand("optimal", "exact optimum of a small deterministic instance");
  opt_pop.add(optimal, false);
  optimal->add_option("--budget,-M", opt_budget, "crawls per epoch (integer)")->required();
  optimal->add_option("--epoch-length,-T", opt_t, "epoch length T")->capture_default_str();
  optimal
      ->add_option("--max-states", opt_options.max_states,
                   "limit on joint states (sets the age cap)")
      ->capture_default_str();
  optimal->add_option("--json", opt_json, "write the result as JSON");

  // generate
  uint64_t gen_n = 0, gen_seed = 1;
  std::string gen_out, gen_costs = "unit";
  CLI::App* generate = app.add_subcommand("generate", "write a synthetic population as CSV");
  generate->add_option("--synthetic", gen_n, "number of sources")->required();
  generate->add_option("--seed", gen_seed, "seed")->capture_default_str();
  generate->add_option("--costs", gen_costs, "unit | lognormal")
      ->check(CLI::IsMember({"unit", "lognormal"}))
      ->capture_default_str();
  generate->add_option("--out", gen_out, "output CSV")->required();

  if (argc >= 2 && argv[1][0] != '-') {
    const std::string cmd = argv[1];
    if (cmd != "run" && cmd != "optimal" && cmd != "generate") {
      std::cerr << "crawleval: error: unknown command '" << cmd
                << "' (expected run, optimal or generate; see --help)\n";
      return ce::kExitBadInput;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? ce::kExitOk : ce::kExitBadInput;
  }

  try {
    if (run->parsed())
      return run_command(run_pop, cfg, policy_names, model, utility, start, backend, json_path,
                         trace_path, no_progress);
    if (optimal->parsed()) {
      const ce::Population pop = opt_pop.load(1);
      const ce::OptimalResult r = ce::exact_optimum(pop, opt_t, opt_budget, opt_options);
      ce::print_optimal(std::cout, pop, r);
      if (!opt_json.empty()) ce::write_json(opt_json, ce::optimal_json(pop, opt_t, opt_budget, r));
      return ce::kExitOk;
    }
    if (generate->parsed()) {
      if (gen_n == 0) throw ce::InputError("--synthetic must be at least 1");
      const ce::Population pop = ce::synthetic_population(
          gen_n, gen_seed,
          gen_costs == "lognormal" ? ce::SyntheticCosts::lognormal : ce::SyntheticCosts::unit);
      ce::write_sources_csv(pop, gen_out);
      std::cout << "wrote " << gen_n << " sources to " << gen_out << "\n";
      return ce::kExitOk;
    }
  } catch (const ce::InputError& e) {
    std::cerr << "crawleval: error: " << e.what() << "\n";
    return ce::kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "crawleval: failed: " << e.what() << "\n";
    return ce::kExitFailure;
  }
  return ce::kExitOk;
}
