// crawleval import politecrawling, crawleval fresh run|bound|generate: the freshness model's
// commands (fresh_engine.hpp).
#include "cli_fresh.hpp"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "crawleval/analysis/stats.hpp"
#include "crawleval/analysis/warm_up.hpp"
#include "crawleval/base/comm.hpp"
#include "crawleval/base/enum_names.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/engine/cuda_backend.hpp"
#include "crawleval/engine/fresh_engine.hpp"
#include "crawleval/evaluate/fresh_evaluate.hpp"
#include "crawleval/io/fresh_io.hpp"
#include "crawleval/io/io.hpp"
#include "crawleval/io/output.hpp"
#include "crawleval/io/output_file.hpp"
#include "crawleval/model/problem.hpp"
#include "crawleval/model/resources.hpp"
#include "options.hpp"

namespace crawleval::cli {

namespace {

/// What every process of a sharded run must hold the same of: the population's columns, hashed
/// (FNV-1a over their bytes), beside its size and origin.
std::string population_digest(const FreshPopulation& pop) {
  uint64_t h = 1469598103934665603ull;
  auto add = [&](const auto& v) {
    const auto* p = reinterpret_cast<const unsigned char*>(v.data());
    for (std::size_t k = 0; k < v.size() * sizeof(v[0]); ++k) h = (h ^ p[k]) * 1099511628211ull;
  };
  add(pop.id), add(pop.host), add(pop.importance), add(pop.rate), add(pop.cost);
  add(pop.complete), add(pop.constrained);
  return "sources=" + std::to_string(pop.size()) + " from id " + std::to_string(pop.first) +
         "\ndigest of the columns=" + std::to_string(h) + "\n";
}

struct FreshArgs {
  std::string population;
  uint64_t synthetic = 0, seed = 1;
  std::string slice;  ///< --slice FIRST:COUNT of the synthetic population ("": all of it)
  double budget = 0.0, budget_fraction = 0.0;
  FreshConfig cfg;
  std::string objective = "harmonic", backend = "auto", json_path, start = "steady",
              burn_in = "auto";
  WarmUpOptions warm_up;
  std::vector<std::string> policies = {
      "index",   "lambda-crawl", "lambda-crawl-approx", "binary-lambda-crawl",
      "uniform", "proportional"};
  bool no_bound = false, no_progress = false;
  double target_ci = 0.0;
  uint32_t max_replications = 1000;

  void add_population(CLI::App* app) {
    auto* pop = app->add_option("--population,-p", population,
                                "freshness population CSV (crawleval import / fresh generate)");
    auto* syn = app->add_option("--synthetic", synthetic,
                                "a synthetic population of N sources with PoliteCrawling's shape")
                    ->check(integer_in(1, kMaxGlobalId));
    pop->excludes(syn);
    app->add_option("--slice", slice,
                    "FIRST:COUNT: only sources [FIRST, FIRST+COUNT) of the --synthetic population, "
                    "with their global ids (hosts, draws, ties), the budget applying to the slice")
        ->type_name("FIRST:COUNT")
        ->check(non_empty("FIRST:COUNT", false));
    app->add_option("--seed", seed, "seed of the synthetic population and of the changes")
        ->capture_default_str()
        ->check(integer_in(0, kMaxU64));
  }
  void add_model(CLI::App* app) {
    auto* b = app->add_option("--budget,-M", budget, "crawl cost per epoch")
                  ->check(number_in(0, kHuge, true));
    auto* f = app->add_option("--budget-fraction", budget_fraction,
                              "budget as a fraction of every source's cost per epoch (the "
                              "papers' R = 0.2 N per day is 0.2)")
                  ->check(number_in(0, 1, true));
    b->excludes(f);
    app->add_option("--epoch-length,-T", cfg.epoch_length, "epoch length in the rates' unit")
        ->capture_default_str()
        ->check(number_in(0, kHuge, true));
    app->add_option("--host-cap", cfg.host_cap,
                    "politeness: crawls per epoch of a constrained host (0: no cap)")
        ->capture_default_str()
        ->check(integer_in(0, kMaxU32));
    app->add_option("--objective", objective,
                    enum_choices<Objective>(" | ") + ": what the index pursues")
        ->check(CLI::IsMember(enum_names<Objective>()))
        ->capture_default_str();
  }
  /// This process's part of the run (fresh_shard: all of it in one process). A synthetic
  /// population's part is generated alone; a CSV is read whole and cut. *digest: what every rank
  /// must hold the same of (the settings name a synthetic population; a file's columns, hashed).
  FreshPopulation load(Comm& comm, std::string* digest) const {
    if (!slice.empty() && synthetic == 0)
      throw InputError("--slice needs --synthetic N (it cuts that population)");
    if (population.empty() && synthetic == 0)
      throw InputError("give the sources: --population FILE.csv or --synthetic N");
    if (synthetic) {
      const auto [first, count] = slice.empty() ? std::pair<uint64_t, uint64_t>{0, synthetic}
                                                : parse_slice(slice, synthetic);
      const Shard part = shard_of(count, comm.rank(), comm.size());
      // One process's limit before memory (a rank's part under MPI).
      check_fresh_slice(synthetic, seed, first, count, part.count);
      require_memory(
          double(part.count) * kFreshBytesPerSource,
          "--synthetic " + std::to_string(synthetic) + (slice.empty() ? "" : " --slice " + slice) +
              (comm.size() > 1 ? " (this process's part: " + std::to_string(part.count) + ")"
                               : std::string()));
      *digest = "synthetic=" + std::to_string(synthetic) + " seed " + std::to_string(seed) +
                " sources " + std::to_string(first) + "+" + std::to_string(count) + "\n";
      FreshPopulation pop;  // (a rank of a run smaller than its chunks has no rows)
      if (part.count)
        pop = synthetic_fresh_slice(synthetic, seed, true, first + part.first, part.count,
                                    !no_progress && comm.rank() == 0);
      pop.origin = synthetic_fresh_origin(synthetic, seed, first, count);
      pop.first = first + part.first;
      return pop;
    }
    require_regular_file(population, "--population", comm.size());
    FreshPopulation pop = read_fresh_csv(population);
    *digest = population_digest(pop);
    if (comm.size() == 1) return pop;
    const Shard part = shard_of(pop.size(), comm.rank(), comm.size());
    return fresh_rows(pop, part.first, part.count);
  }
  /// The settings with the budget resolved against the run's population (a collective over the
  /// ranks for --budget-fraction: the costs' sum in one process's order).
  FreshConfig config(const FreshPopulation& pop, Comm& comm) {
    FreshConfig c = cfg;
    c.objective = enum_parse_or_throw<Objective>(objective, "--objective");
    c.seed = seed;
    if (budget > 0.0) {
      c.budget = budget;
    } else if (budget_fraction > 0.0) {
      c.budget = budget_fraction * fold_in_order(comm, pop.cost, 1, pop.size())[0];
    } else {
      throw InputError("give the budget: --budget M or --budget-fraction F");
    }
    return c;
  }
};

std::string population_line(const FreshPopulation& pop, const FreshCounts& n) {
  return pop.origin + ": " + count_of(n.sources, "source", "sources") + " (" +
         std::to_string(n.complete) + " completely observed, " + std::to_string(n.constrained) +
         " on constrained hosts)";
}

/// fresh run's checks before any work: every output can be written, the policies exist and the
/// backend can run them.
void check_fresh_run(const FreshArgs& a, Comm* world, bool root, FreshRunOptions& options) {
  if (root && !a.json_path.empty()) check_output(a.json_path, "--json");
  for (const std::string& name : a.policies)
    options.policies.push_back(enum_parse_or_throw<FreshPolicy>(name, "--policy"));
  enum_parse_or_throw<Backend>(a.backend, "--backend");
  if (world && a.backend == "reference")
    throw InputError("--backend reference runs in one process (not under mpirun)");
  for (FreshPolicy p : options.policies)  // (before the population is read)
    if (a.backend == "cuda" && !cuda::fresh_policy_refusal(p).empty())
      throw InputError(cuda::fresh_policy_refusal(p));
  if (world && a.backend == "cuda" && a.cfg.learn)
    throw InputError(
        "--learn: the learning variant runs on the CPU only (use --backend cpu or auto)");
  // (A GPU per rank: each rank's devices counted without opening a context; a rank picks its
  // device later, fresh_evaluate's use_device.)
  if (world && a.backend == "cuda" && (!cuda::compiled() || cuda::visible_device_count() == 0))
    throw InputError(cuda::unavailable_message());
}

/// fresh run's settings resolved against the population (a collective: the budget's words are
/// every rank's), with the burn-in and the backend in `options`.
FreshConfig fresh_run_config(FreshArgs& a, const FreshPopulation& pop, Comm& comm, Comm* world,
                             bool root, FreshRunOptions& options) {
  FreshConfig cfg = a.config(pop, comm);
  collectively(comm, [&] {
    cfg.progress = !a.no_progress && root;
    cfg.start = enum_parse_or_throw<FreshStart>(a.start, "--start");
    options.automatic_burn_in = a.burn_in == "auto";
    cfg.burn_in = options.automatic_burn_in ? 0 : std::stoull(a.burn_in);
    if (world && cfg.threads == 0) cfg.threads = default_threads_per_rank();
    // Under mpirun --backend cuda is a GPU per rank (fresh_keyed.hpp); auto keeps the CPU.
    options.backend = world ? (a.backend == "cuda" ? Backend::cuda : Backend::cpu)
                            : resolve_fresh_backend(a.backend, cfg, options.policies);
  });
  return cfg;
}

/// What the run does not read: the rates' intervals and histories, the file's line numbers
/// (32 of about 80 B per source; the checks that name a line are done).
void drop_unread_columns(FreshPopulation& pop) {
  for (auto* v : {&pop.rate_lo, &pop.rate_hi}) std::vector<double>().swap(*v);
  for (auto* v : {&pop.observations, &pop.changes}) std::vector<uint32_t>().swap(*v);
  std::vector<uint64_t>().swap(pop.line);
}

/// The lines above the table: the population, the budget and the caps, the replications and the
/// burn-in.
void print_fresh_run_header(std::ostream& human, const FreshPopulation& pop,
                            const FreshCounts& counts, const FreshConfig& cfg,
                            const FreshRunOptions& options) {
  human << population_line(pop, counts) << "\n"
        << "budget " << cfg.budget << " per epoch of " << cfg.epoch_length
        << (cfg.host_cap
                ? ", at most " + std::to_string(cfg.host_cap) +
                      (cfg.host_cap == 1 ? " crawl" : " crawls") + " per constrained host and epoch"
                : std::string(", no politeness caps"))
        << "; index objective " << to_string(cfg.objective)
        << (cfg.learn ? "; rates learned online (re-estimated every " +
                            (cfg.relearn == 1 ? std::string("epoch")
                                              : std::to_string(cfg.relearn) + " epochs") +
                            ")"
                      : std::string())
        << "\n"
        << cfg.replications << (cfg.replications == 1 ? " replication x " : " replications x ")
        << cfg.epochs << (cfg.epochs == 1 ? " measured epoch after " : " measured epochs after ")
        << (options.automatic_burn_in
                ? "an automatic burn-in per policy (column B: MSER-5 on a pilot, at most " +
                      std::to_string(options.warm_up.max_burn_in) + ")"
                : std::to_string(cfg.burn_in) +
                      (cfg.burn_in == 1 ? " burn-in epoch" : " burn-in epochs"))
        << " from a " << to_string(cfg.start) << " start, seed " << cfg.seed << ", backend "
        << to_string(options.backend) << "\n\n";
  human << std::left << std::setw(21) << "policy" << std::right << std::setw(11) << "fresh"
        << std::setw(20) << "95% CI" << std::setw(11) << "penalty" << std::setw(20) << "95% CI"
        << std::setw(7) << "B" << std::setw(11) << "cost/ep" << std::setw(17) << "closed-form H"
        << std::setw(12) << "gap bound" << std::setw(9) << "rel gap" << std::setw(9) << "time s\n";
}

/// A policy's row of the table, printed as soon as the policy is done.
void print_fresh_row(std::ostream& human, const FreshPolicyRun& run, const BoundResult& bound,
                     bool with_bound) {
  const BoundResult* as_reward = &bound;
  const PolicyResult& r = run.result;
  const Summary &fresh = run.freshness, &pen = run.penalty;
  const bool rates = run.closed_form.has_value();
  const bool show_gap = with_bound && as_reward && as_reward->applicable;
  const double gap = show_gap ? as_reward->bound - r.reward.mean : NAN;
  human << std::left << std::setw(21) << r.name << std::right << std::setw(11)
        << fresh_fmt(fresh.mean, 4) << std::setw(20)
        << (fresh.no_interval.empty()
                ? "[" + fresh_fmt(fresh.ci_low, 4) + ", " + fresh_fmt(fresh.ci_high, 4) + "]"
                : "n/a (below)")
        << std::setw(11) << fresh_fmt(pen.mean, 4) << std::setw(20)
        << (pen.no_interval.empty()
                ? "[" + fresh_fmt(pen.ci_low, 4) + ", " + fresh_fmt(pen.ci_high, 4) + "]"
                : "n/a (below)")
        << std::setw(7)
        << (std::to_string(r.warm_up.burn_in) + (r.warm_up.warning.empty() ? "" : "!"))
        << std::setw(11) << fresh_fmt(r.cost.mean, 1) << std::setw(17)
        << (rates ? fresh_fmt(run.closed_form->harmonic, 4) : "-") << std::setw(12)
        << (show_gap ? fresh_fmt(gap, 4) : "-") << std::setw(9)
        << (show_gap && as_reward->bound != 0.0
                ? fresh_fmt(100.0 * gap / std::fabs(as_reward->bound), 2) + "%"
                : "-")
        << std::setw(9) << fresh_fmt(r.seconds, 2) << "\n";
}

/// The lines below the table: the bound, what the columns mean, and why intervals or gaps are
/// absent or negative.
void print_fresh_run_footer(std::ostream& human, const FreshRunResults& results,
                            const FreshConfig& cfg, bool with_bound) {
  const bool binary = cfg.objective == Objective::binary;
  if (with_bound) {
    const FreshBound& b = results.bound;
    if (b.value)
      human << "bound: " << (binary ? "freshness at most " : "harmonic penalty at least ")
            << fresh_fmt(*b.value, 4) << " in the long run (Lagrangian relaxation)\n"
            << (b.note.empty() ? "" : "  " + b.note + "\n");
    else
      human << "bound: " << b.why_absent << "\n";
  }
  human << "\nfresh: importance-weighted fraction of time fresh; penalty: importance-weighted "
           "harmonic staleness H(changes missed), time-averaged, per unit of importance; the "
           "intervals and gaps below are the "
        << (binary ? "freshness's" : "penalty's") << "\n";
  std::vector<PolicyResult> summaries;
  for (const FreshPolicyRun& r : results.runs) summaries.push_back(r.result);
  print_interval_notes(human, summaries, cfg.epochs);
  // A negative gap in the objective's own sense: freshness above its bound, a penalty below its.
  if (with_bound) print_gap_notes(human, summaries, &results.as_reward, binary ? "above" : "below");
}

/// `world`: the MPI ranks (null in one process). Every rank loads its part of the population
/// (FreshArgs::load) and simulates it (fresh_rollout), the run's totals and hosts taken over the
/// ranks; rank 0 prints and writes.
int fresh_run(FreshArgs& a, Comm* world) {
  const auto started = std::chrono::steady_clock::now();
  const bool root = !world || world->rank() == 0;
  Comm& comm = world ? *world : solo_comm();
  FreshPopulation pop;
  FreshRunOptions options;
  std::string digest;
  collectively(comm, [&] {
    check_fresh_run(a, world, root, options);
    pop = a.load(comm, &digest);
  });
  if (world) {
    // Every rank read the file itself: the same path may name different files on their machines.
    agree_on(comm, digest, "the freshness population",
             "every process must read the same file (the same path on a shared file system)");
    options.comm = world;
  }
  // (Collectives from here on: every rank holds its part.)
  const FreshConfig cfg = fresh_run_config(a, pop, comm, world, root, options);
  validate_fresh_config(pop, cfg, world);  // (every rank throws the same error)
  const FreshCounts counts = fresh_counts(pop, world);
  drop_unread_columns(pop);
  options.warm_up = a.warm_up;
  options.with_bound = !a.no_bound;
  options.target_ci = a.target_ci;
  options.max_replications = a.max_replications;
  // With --json -, standard output holds the JSON alone: the table goes to stderr.
  std::ostream& human = a.json_path == "-" ? std::cerr : std::cout;
  print_fresh_run_header(human, pop, counts, cfg, options);
  FreshRunResults results;
  on_every_rank_or_abort(world, [&] {
    results =
        fresh_evaluate(pop, cfg, options, [&](const FreshPolicyRun& run, const BoundResult& b) {
          print_fresh_row(human, run, b, options.with_bound);
        });
  });
  if (!root) return kExitOk;
  print_fresh_run_footer(human, results, cfg, options.with_bound);
  if (!a.json_path.empty()) {
    const double total =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    write_json(a.json_path, fresh_run_json(pop, cfg, options, results, total));
    if (a.json_path != "-") human << "wrote " << a.json_path << "\n";
  }
  return kExitOk;
}

/// What the freshness commands parse into.
struct FreshCommands {
  FreshArgs run, bound;
  std::string import_dir, import_out, import_json, gen_out;
  uint64_t max_bad = 0, gen_n = 0, gen_seed = 1;
  bool true_rates = false, import_no_progress = false;
  CLI::App *import_cmd = nullptr, *import_pc = nullptr, *fresh = nullptr, *run_cmd = nullptr,
           *bound_cmd = nullptr, *gen_cmd = nullptr;
};

/// fresh run's options.
void add_fresh_run_options(CLI::App* run_cmd, FreshArgs& ra) {
  ra.add_population(run_cmd);
  ra.add_model(run_cmd);
  run_cmd->add_option("--policy", ra.policies, enum_choices<FreshPolicy>())
      ->delimiter(',')
      ->capture_default_str();
  run_cmd->add_option("--epochs,-H", ra.cfg.epochs, "measured epochs per replication")
      ->capture_default_str()
      ->check(integer_in(1, kMaxU32 - 1));
  run_cmd
      ->add_option("--burn-in,-B", ra.burn_in,
                   "epochs run before measuring in every replication: auto (MSER-5 on a pilot "
                   "run, per policy) or a number")
      ->capture_default_str()
      ->check(auto_or_integer(0, kMaxU32 - 1));
  run_cmd
      ->add_option("--max-burn-in", ra.warm_up.max_burn_in,
                   "cap of --burn-in auto (its pilots run up to twice this many epochs)")
      ->capture_default_str()
      ->check(integer_in(1, kMaxU32 / 2));
  run_cmd->add_option("--replications,-R", ra.cfg.replications, "independent replications")
      ->capture_default_str()
      ->check(integer_in(1, kMaxU32));
  run_cmd
      ->add_option("--target-ci", ra.target_ci,
                   "add replications until the objective's 95% half-width is below this fraction "
                   "of its mean")
      ->check(number_in(0, 1, false, true));
  run_cmd->add_option("--max-replications", ra.max_replications, "cap for --target-ci")
      ->capture_default_str()
      ->check(integer_in(1, kMaxU32));
  run_cmd
      ->add_option("--epsilon", ra.cfg.epsilon,
                   "binary-lambda-crawl's floor: epsilon R / (the sources' total cost), a fraction "
                   "of the uniform rate")
      ->capture_default_str()
      ->check(number_in(0, 1));
  run_cmd
      ->add_option("--start", ra.start,
                   "steady: ages spread as in the long run (the bound's periods); fresh: "
                   "every copy fetched at epoch 0")
      ->check(CLI::IsMember(enum_names<FreshStart>()))
      ->capture_default_str();
  run_cmd->add_flag("--learn", ra.cfg.learn,
                    "learning variant: policies see rates estimated online from the crawls "
                    "(the population's rates are the simulated truth)");
  run_cmd->add_option("--relearn", ra.cfg.relearn, "with --learn: re-estimate every K epochs")
      ->capture_default_str()
      ->check(integer_in(1, kMaxU32));
  run_cmd
      ->add_option("--prior", ra.cfg.prior,
                   "with --learn: length of the imaginary changed and unchanged intervals")
      ->capture_default_str()
      ->check(number_in(0, kHuge, true));
  run_cmd
      ->add_option("--nutch-start", ra.cfg.nutch_start,
                   "nutch-adaptive: every URL's first re-crawl interval, in epochs (>= 1)")
      ->capture_default_str()
      ->check(number_in(1, kHuge));
  run_cmd
      ->add_option("--nutch-max", ra.cfg.nutch_max,
                   "nutch-adaptive: the longest re-crawl interval, in epochs (>= --nutch-start)")
      ->capture_default_str()
      ->check(number_in(1, kHuge));
  run_cmd->add_option("--threads", ra.cfg.threads, "CPU threads (0: all)")
      ->capture_default_str()
      ->check(integer_in(0, max_threads()));
  run_cmd
      ->add_option("--backend", ra.backend,
                   "auto (the GPU if present, else cpu) | cpu | reference | cuda")
      ->capture_default_str();
  run_cmd->add_option("--json", ra.json_path, "write results as JSON");
  run_cmd->add_flag("--no-bound", ra.no_bound, "do not compute the Lagrangian bound");
  run_cmd->add_flag("--no-progress", ra.no_progress, "no progress lines on stderr");
}

/// import politecrawling.
int import_command(const FreshCommands& c) {
  check_output(c.import_out, "--out");
  if (!c.import_json.empty()) check_output(c.import_json, "--json");
  ImportOptions o;
  o.max_bad_rows = c.max_bad;
  if (!c.import_no_progress && isatty(2))
    o.progress = [](const std::string& m) { std::cerr << "\r  " << m << "        " << std::flush; };
  o.warn = [](const std::string& m) { std::cerr << "crawleval: warning: " << m << "\n"; };
  ImportReport rep;
  set_activity("importing " + printable(c.import_dir, 256));
  const FreshPopulation pop = import_politecrawling(c.import_dir, o, &rep);
  if (o.progress) std::cerr << "\r" << std::string(72, ' ') << "\r";
  set_activity("writing " + printable(c.import_out, 256));
  write_fresh_csv(pop, c.import_out);
  std::cout << "imported " << count_of(pop.size(), "URL", "URLs") << " (" << rep.complete
            << " completely observed) on " << count_of(rep.hosts, "host", "hosts") << " ("
            << rep.constrained_hosts << " constrained) to " << c.import_out << "\n";
  if (rep.without_importance || rep.without_history)
    std::cout << "dropped " << count_of(rep.without_importance, "URL", "URLs")
              << " without an importance and " << rep.without_history << " without a history\n";
  if (rep.bad_rows)
    std::cout << "skipped " << count_of(rep.bad_rows, "bad row", "bad rows") << " (listed above)\n";
  if (!c.import_json.empty())
    write_json(c.import_json, {{"tool", "crawleval"},
                               {"command", "import politecrawling"},
                               {"directory", c.import_dir},
                               {"out", c.import_out},
                               {"urls_read", rep.urls},
                               {"urls_written", pop.size()},
                               {"hosts", rep.hosts},
                               {"constrained_hosts", rep.constrained_hosts},
                               {"histories", rep.histories},
                               {"complete", rep.complete},
                               {"bad_rows", rep.bad_rows},
                               {"dropped_without_importance", rep.without_importance},
                               {"dropped_without_history", rep.without_history}});
  return kExitOk;
}

/// fresh bound: under mpirun every rank holds its part and solves its share (fresh_bound); rank 0
/// prints.
int fresh_bound_command(FreshArgs& bound, Comm* world) {
  Comm& comm = world ? *world : solo_comm();
  std::string digest;
  FreshPopulation pop;
  collectively(comm, [&] { pop = bound.load(comm, &digest); });
  if (world)
    agree_on(comm, digest, "the freshness population",
             "every process must read the same file (the same path on a shared file system)");
  FreshConfig cfg = bound.config(pop, comm);
  if (world && cfg.threads == 0) cfg.threads = default_threads_per_rank();
  validate_fresh_config(pop, cfg, world);  // (every rank throws the same error)
  FreshBound b;
  FreshCounts counts;
  on_every_rank_or_abort(world, [&] {
    b = fresh_bound(pop, cfg, world);
    counts = fresh_counts(pop, world);
  });
  if (comm.rank() != 0) return kExitOk;
  std::cout << population_line(pop, counts) << "\n";
  if (b.value)
    std::cout << (cfg.objective == Objective::binary ? "freshness at most "
                                                     : "harmonic penalty at least ")
              << fresh_fmt(*b.value, 6) << " (budget " << cfg.budget << ", multiplier "
              << b.multiplier << ")\n"
              << (b.note.empty() ? "" : b.note + "\n");
  else
    std::cout << "no bound: " << b.why_absent << "\n";
  return kExitOk;
}

/// fresh generate.
int fresh_generate_command(const FreshCommands& c) {
  check_output(c.gen_out, "--out");
  require_memory(double(c.gen_n) * kFreshBytesPerSource, "--synthetic " + std::to_string(c.gen_n));
  const FreshPopulation pop =
      synthetic_fresh_slice(c.gen_n, c.gen_seed, !c.true_rates, 0, c.gen_n, true);
  write_fresh_csv(pop, c.gen_out);
  std::cout << "wrote " << count_of(pop.size(), "source", "sources") << " to " << c.gen_out << "\n";
  return kExitOk;
}

}  // namespace

std::function<int(Comm*)> add_fresh_commands(CLI::App& app) {
  auto s = std::make_shared<FreshCommands>();

  s->import_cmd = app.add_subcommand("import", "import a public crawl dataset");
  s->import_cmd->require_subcommand(1);
  s->import_pc = s->import_cmd->add_subcommand(
      "politecrawling",
      "the PoliteCrawling dataset (Kolobov et al. 2019) as a freshness population");
  s->import_pc->add_option("dir", s->import_dir, "the dataset's directory (its five .txt files)")
      ->required();
  s->import_pc->add_option("--out", s->import_out, "output: the population CSV")->required();
  s->import_pc
      ->add_option("--max-bad-rows", s->max_bad,
                   "skip and report up to this many malformed rows (default: stop at "
                   "the first)")
      ->capture_default_str()
      ->check(integer_in(0, kMaxU64));
  s->import_pc->add_option("--json", s->import_json, "write the import's report as JSON");
  s->import_pc->add_flag("--no-progress", s->import_no_progress, "no progress lines on stderr");

  s->fresh = app.add_subcommand(
      "fresh", "the freshness model: change-rate schedulers, harmonic penalty, politeness");
  s->fresh->require_subcommand(1);
  s->run_cmd = s->fresh->add_subcommand("run", "simulate freshness policies");
  add_fresh_run_options(s->run_cmd, s->run);

  s->bound_cmd = s->fresh->add_subcommand("bound", "the Lagrangian bound of the freshness model");
  s->bound.add_population(s->bound_cmd);
  s->bound.add_model(s->bound_cmd);
  s->bound_cmd->add_option("--threads", s->bound.cfg.threads, "CPU threads (0: all)")
      ->capture_default_str()
      ->check(integer_in(0, max_threads()));

  s->gen_cmd = s->fresh->add_subcommand(
      "generate", "write a synthetic freshness population with PoliteCrawling's shape");
  s->gen_cmd->add_option("--synthetic", s->gen_n, "number of sources")
      ->required()
      ->check(integer_in(1, kMaxU32 - 1));
  s->gen_cmd->add_option("--seed", s->gen_seed, "seed")
      ->capture_default_str()
      ->check(integer_in(0, kMaxU64));
  s->gen_cmd->add_flag("--true-rates", s->true_rates,
                       "write the true change rates instead of estimates from simulated "
                       "14-week histories");
  s->gen_cmd->add_option("--out", s->gen_out, "output CSV")->required();

  return [s](Comm* world) -> int {
    if (s->import_pc->parsed()) return import_command(*s);
    if (s->run_cmd->parsed()) return fresh_run(s->run, world);
    if (s->bound_cmd->parsed()) return fresh_bound_command(s->bound, world);
    if (s->gen_cmd->parsed()) return fresh_generate_command(*s);
    return -1;
  };
}

}  // namespace crawleval::cli
