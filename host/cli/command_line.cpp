// The command line of crawleval: every command's options, their validation, and the commands.
//
//   crawleval run      --paper-example | --sources FILE.csv | --synthetic N  --budget M  [...]
//   crawleval bound    --paper-example | --sources FILE.csv | --synthetic N  --budget M  [...]
//   crawleval optimal  --paper-example | --sources FILE.csv  --budget M
//   crawleval generate --synthetic N --seed S --out FILE.csv|FILE.cpop
//   crawleval convert  --sources FILE.csv|FILE.cpop | --paper-example  --out FILE.cpop|FILE.csv
//   crawleval learn mirrorsync|async-mirrorsync|async-psgd|lspe [...]
//   crawleval syncbandit optimum|generate [...]
//   crawleval import politecrawling DIR --out POP.csv
//   crawleval fresh run|bound|generate [...]            (the freshness model)
//   crawleval index    --paper-example | --sources FILE.csv  [--utility L] [--grid G]
//   (stochastic_index.hpp)
//
// Exit codes: 0 success, 2 bad input (message names the file, line and field), 1 other failures.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>

#include "cli_fresh.hpp"
#include "cli_index.hpp"
#include "cli_learn.hpp"
#include "cli_plot.hpp"
#include "command_line.hpp"
#include "crawleval/analysis/bound.hpp"
#include "crawleval/analysis/optimal.hpp"
#include "crawleval/base/comm.hpp"
#include "crawleval/base/enum_names.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/base/version.hpp"
#include "crawleval/engine/cuda_backend.hpp"
#include "crawleval/engine/sharded.hpp"
#include "crawleval/evaluate/driver.hpp"
#include "crawleval/evaluate/policy_registry.hpp"
#include "crawleval/io/columnar.hpp"
#include "crawleval/io/io.hpp"
#include "crawleval/io/output.hpp"
#include "crawleval/io/output_file.hpp"
#include "crawleval/learn/syncbandit.hpp"
#include "crawleval/model/population.hpp"
#include "crawleval/model/resources.hpp"
#include "options.hpp"

namespace ce = crawleval;

namespace {

using ce::cli::integer_in;
using ce::cli::kHuge;
using ce::cli::kMaxU32;
using ce::cli::kMaxU64;
using ce::cli::non_empty;
using ce::cli::number_in;
using ce::cli::parse_slice;

using ce::enum_choices;
using ce::enum_names;
using ce::enum_parse_or_throw;

/// Where the sources come from, and the settings every command that simulates shares.
struct ModelArgs {
  std::string sources;
  bool paper = false;
  uint64_t synthetic = 0;
  std::string synthetic_costs = "unit";
  std::string slice;  ///< --slice FIRST:COUNT of the synthetic population ("": all of it)
  bool strict_columns = false;
  ce::RunConfig cfg;
  std::string model = "deterministic", utility = "exponential", observe = "full", start;

  void add_population(CLI::App* app, bool allow_synthetic) {
    app->add_option("--sources", sources,
                    "sources: a CSV whose header names lambda,xi,mu[,cost,id,x0,expiry], or a "
                    ".cpop file");
    app->add_flag("--paper-example", paper, "the papers' 4-source example (Table 1)");
    app->add_flag("--strict-columns", strict_columns,
                  "refuse a --sources CSV with columns other than lambda, xi, mu, cost, id, x0, "
                  "expiry (by default they are ignored, with a note on stderr)");
    if (allow_synthetic) {
      app->add_option("--synthetic", synthetic, "a synthetic population of N sources (see --seed)")
          ->check(integer_in(1, ce::kMaxGlobalId));
      app->add_option("--slice", slice,
                      "FIRST:COUNT: evaluate only sources [FIRST, FIRST+COUNT) of the --synthetic "
                      "population, with their global ids (draws, ties, round robin), the budget "
                      "applying to the slice; each MPI process generates its part")
          ->type_name("FIRST:COUNT")
          ->check(non_empty("FIRST:COUNT", false));
      app->add_option("--synthetic-costs", synthetic_costs, enum_choices<ce::SyntheticCosts>(" | "))
          ->check(CLI::IsMember(enum_names<ce::SyntheticCosts>()));
    }
  }
  void add_model(CLI::App* app) {
    app->add_option("--budget,-M", cfg.budget, "crawl budget per epoch (sum of costs)")
        ->required()
        ->check(number_in(0, kHuge, true));
    app->add_option("--model", model, enum_choices<ce::Model>(" | "))->capture_default_str();
    app->add_option("--observe", observe,
                    enum_choices<ce::Observe>(" | ") + " (belief: see the state only when crawled)")
        ->capture_default_str();
    app->add_option("--epoch-length,-T", cfg.epoch_length, "epoch length T")
        ->capture_default_str()
        ->check(number_in(0, kHuge, true));
    app->add_option("--seed", cfg.seed, "seed of the synthetic population and of every random draw")
        ->capture_default_str()
        ->check(integer_in(0, kMaxU64));
  }

  /// bytes_per_source: what the command will need per source (resources.hpp), checked against
  /// the available memory before anything large is allocated.
  /// The evaluated range [first, first + count) of the --synthetic population (all of it
  /// without --slice); InputError naming --slice.
  std::pair<uint64_t, uint64_t> synthetic_range() const {
    if (slice.empty()) return {0, synthetic};
    if (synthetic == 0)
      throw ce::InputError("--slice needs --synthetic N (it cuts that population)");
    return parse_slice(slice, synthetic);
  }
  /// The synthetic population's label: its size and seed, and the slice when there is one.
  std::string synthetic_label() const {
    return "--synthetic " + std::to_string(synthetic) + (slice.empty() ? "" : " --slice " + slice);
  }
  ce::SyntheticCosts costs() const {
    return enum_parse_or_throw<ce::SyntheticCosts>(synthetic_costs, "--synthetic-costs");
  }

  ce::Population load(double bytes_per_source) const {
    const int given = int(!sources.empty()) + int(paper) + int(synthetic > 0);
    if (given != 1)
      throw ce::InputError("give exactly one of --sources FILE, --paper-example, --synthetic N");
    const auto [first, count] = synthetic_range();
    ce::set_activity("loading the sources");
    if (paper) return ce::paper_example();
    if (synthetic > 0) {
      if (count > ce::kMaxLocalSources)
        throw ce::InputError(ce::local_limit_error(synthetic_label(), count));
      ce::require_memory(double(count) * bytes_per_source, synthetic_label());
      ce::Population pop = ce::synthetic_slice(synthetic, cfg.seed, costs(), first, count);
      pop.first_id = first;
      if (!slice.empty()) pop.origin += " slice " + slice;
      return pop;
    }
    ce::SourcesCsvOptions csv;
    csv.strict_columns = strict_columns;
    return ce::read_population(sources, bytes_per_source, csv);
  }
  /// This process's shard of the population when `world` shards the run: a synthetic population
  /// is generated where it lives; a file or the paper example is read by rank 0 (the caller then
  /// scatters it: *whole holds it on rank 0). Local work only, no collective: the caller agrees
  /// on failures.
  /// `columnar`: rank 0 found --sources to be a .cpop file (every rank follows rank 0's view of
  /// it).
  /// `digest`: of the .cpop's header and its values at every process's slice bounds (the
  /// processes compare them: the same relative path may name different files on their machines).
  ce::Population load_shard(ce::Comm& world, double bytes_per_source, bool columnar,
                            ce::Shard* shard, std::unique_ptr<ce::Population>* whole,
                            std::string* digest) const {
    if (columnar && !paper && synthetic == 0) {
      synthetic_range();  // refuses --slice, as one process does
      // Each process reads its own slice of the file.
      const ce::ColumnarHeader h = ce::read_columnar_header(sources);
      *shard = ce::shard_of(h.n, world.rank(), world.size());
      std::vector<uint64_t> bounds;
      for (int r = 0; r < world.size(); ++r)
        bounds.push_back(ce::shard_of(h.n, r, world.size()).first);
      bounds.push_back(h.n - 1);
      *digest = "sources=" + std::to_string(h.n) + "\nbytes=" + std::to_string(h.file_bytes) +
                "\ndigest of the header and the slice bounds=" +
                std::to_string(ce::columnar_digest(sources, bounds)) + "\n";
      ce::require_memory(double(shard->count) * bytes_per_source,
                         "this process's " + std::to_string(shard->count) + " sources from " +
                             ce::printable(sources, 256));
      return ce::read_columnar(sources, shard->first, shard->count);
    }
    if (synthetic > 0 && sources.empty() && !paper) {
      // Every process generates its own part of the evaluated range, and nothing else.
      const auto [first, count] = synthetic_range();
      *shard = ce::shard_of(count, world.rank(), world.size());
      if (shard->count > ce::kMaxLocalSources)
        throw ce::InputError(ce::local_limit_error(synthetic_label(), shard->count));
      ce::set_activity("generating the synthetic sources");
      ce::require_memory(
          double(shard->count) * bytes_per_source,
          synthetic_label() + " (this process's " + std::to_string(shard->count) + " sources)");
      ce::Population pop =
          ce::synthetic_slice(synthetic, cfg.seed, costs(), first + shard->first, shard->count);
      pop.first_id = first;
      if (!slice.empty()) pop.origin += " slice " + slice;
      return pop;
    }
    if (world.rank() == 0) *whole = std::make_unique<ce::Population>(load(bytes_per_source));
    return {};
  }
  /// Parses the string settings into cfg (after load, for the start's default).
  ce::RunConfig config(const ce::Population& pop) const { return config(!pop.x0.empty()); }
  ce::RunConfig config(bool has_x0) const {
    ce::RunConfig c = cfg;
    c.model = enum_parse_or_throw<ce::Model>(model, "--model");
    ce::set_utility(c, utility);
    c.observe = enum_parse_or_throw<ce::Observe>(observe, "--observe");
    if (start.empty())
      c.start = has_x0 ? ce::Start::given : ce::Start::empty;
    else
      c.start = enum_parse_or_throw<ce::Start>(start, "--start");
    return c;
  }
};

struct RunArgs {
  ModelArgs m;
  // Not random by default: a baseline no scheduler is compared with for long, and the slowest on
  // the CPU (a Philox draw per source and epoch, 2-3x greedy's pass: 25 s of a 42-s run at 1e6).
  std::vector<std::string> policies = {"whittle", "greedy", "round_robin"};
  std::string backend = "auto", json_path, trace_path, burn_in = "auto";
  bool no_progress = false, no_bound = false, force_trace = false;
  ce::EvaluateOptions eval;
  std::size_t index_grid = 800;  ///< whittle_numerical's lattice (stochastic_index.hpp)
};

/// crawleval bound's settings.
struct BoundArgs {
  ModelArgs m;
  std::string backend = "auto", json_path;
};

/// crawleval optimal's settings.
struct OptimalArgs {
  ModelArgs m;
  ce::OptimalOptions options;
  std::string json_path;
  bool no_progress = false;
};

/// crawleval generate's settings.
struct GenerateArgs {
  uint64_t n = 0, seed = 1;
  std::string out, costs = "unit", slice;
};

/// crawleval convert's settings.
struct ConvertArgs {
  ModelArgs m;
  std::string out;
};

/// --policy's help: every policy of the registry, one per line.
std::string policy_help() {
  std::string help = "the policies to evaluate, comma-separated:";
  for (const ce::RegisteredPolicy& p : ce::policy_registry())
    help += std::string("\n  ") + p.name + ": " + p.description;
  return help;
}

/// The backend of a run sharded over MPI ranks: every rank runs the CPU backend on its shard, or
/// with --backend cuda a GPU (a GPU per rank: keyed_rollout.hpp; its device run is pending, so
/// auto keeps the CPU).
ce::Backend sharded_backend(ce::Backend requested) {
  if (requested == ce::Backend::cuda) {
    if (!ce::cuda::compiled()) throw ce::InputError(ce::cuda::unavailable_message());
    return ce::Backend::cuda;
  }
  if (requested == ce::Backend::reference)
    throw ce::InputError("--backend reference runs in one process (not under mpirun)");
  return ce::Backend::cpu;
}

/// The population and the problem, in one process or sharded over `world`'s ranks (every step
/// that can fail on some ranks only is agreed on before the next collective).
struct Loaded {
  ce::Population pop;  // this process's sources
  ce::Problem problem;
};

/// `compact`: whether the run's engines need only the compact columns (ColumnSet::engine), given
/// this process's sources and the whole population's size; the population then also drops its
/// implied columns (unit costs, consecutive ids).
using CompactFn = std::function<bool(const ce::Population&, const ce::RunConfig&, uint64_t)>;

std::unique_ptr<Loaded> load_problem(const ModelArgs& m, ce::Comm* world, double bytes_per_source,
                                     const std::function<void()>& checks,
                                     const std::function<void(ce::RunConfig&)>& adjust,
                                     const CompactFn& compact = nullptr) {
  auto out = std::make_unique<Loaded>();
  if (!world) {
    checks();
    out->pop = m.load(bytes_per_source);
    ce::RunConfig cfg = m.config(out->pop);
    adjust(cfg);
    const bool lean = compact && compact(out->pop, cfg, out->pop.size());
    out->problem =
        ce::make_problem(out->pop, cfg, lean ? ce::ColumnSet::engine : ce::ColumnSet::all);
    if (lean) out->pop.drop_implied_columns(out->problem.unit_costs);
    return out;
  }
  ce::Shard shard;
  std::unique_ptr<ce::Population> whole;
  // Rank 0 says whether --sources is a .cpop file that every rank reads its slice of (a rank that
  // cannot open it then says so).
  const bool columnar = world->sum(uint64_t(world->rank() == 0 && !m.sources.empty() &&
                                            ce::is_columnar_file(m.sources))) > 0;
  std::string digest;
  ce::collectively(*world, [&] {
    checks();
    out->pop = m.load_shard(*world, bytes_per_source, columnar, &shard, &whole, &digest);
  });
  if (columnar)
    ce::agree_on(*world, digest, "the --sources file",
                 "every process must read the same file (the same path on a shared file system)");
  // Rank 0 says whether it read the population for everyone (a CSV or the paper example).
  if (world->sum(uint64_t(world->rank() == 0 && whole != nullptr)) > 0) {
    ce::set_activity("sending the sources to every process");
    ce::on_every_rank_or_abort(
        world, [&] { out->pop = ce::scatter_population(*world, whole.get(), &shard); });
    whole.reset();
  }
  uint64_t has_x0 = !out->pop.x0.empty();
  world->sum(&has_x0, 1);
  ce::RunConfig cfg;
  ce::collectively(*world, [&] {
    if (m.utility.rfind("empirical:", 0) == 0)  // every rank reads the table
      ce::require_regular_file(m.utility.substr(10), "--utility empirical:", world->size());
    cfg = m.config(has_x0 > 0);
    adjust(cfg);
    if (cfg.threads == 0) cfg.threads = ce::default_threads_per_rank();
  });
  // Every rank decides alike: the settings agree, and a shard's expiries are checked globally.
  uint64_t expiry = 0;
  for (uint32_t e : out->pop.expiry) expiry += uint64_t(e > 0);
  const bool lean =
      compact && world->sum(expiry) == 0 && compact(out->pop, cfg, shard.total);  // on every rank
  out->problem = ce::make_sharded_problem(out->pop, cfg, shard, *world,
                                          lean ? ce::ColumnSet::engine : ce::ColumnSet::all);
  if (lean) out->pop.drop_implied_columns(out->problem.unit_costs);
  return out;
}

/// What a command's memory check before reading counts on: whether the run will hold the compact
/// columns (compact_columns_apply decides after loading, on the same settings; a file's expiries
/// are not known before it is read, but a .cpop header's are), and the population's bytes per
/// source as read and as kept once its implied columns are dropped.
struct ExpectedColumns {
  bool compact = false;
  double read = 0.0, kept = 0.0;
};

ExpectedColumns expected_columns(const ModelArgs& m, const std::string& backend,
                                 const std::vector<std::string>& policies) {
  ExpectedColumns e;
  e.read = m.synthetic > 0 ? ce::kSyntheticPopulationBytes : ce::kFilePopulationBytes;
  // A file that cannot be read is reported by the loader: here it only means no compact columns.
  bool lean_file = false;
  if (!m.sources.empty()) {
    try {
      if (ce::is_columnar_file(m.sources)) {
        const ce::ColumnarHeader h = ce::read_columnar_header(m.sources);
        // With an x0 column the default start is the given one (every column held).
        lean_file = !h.expiry && (!h.x0 || m.start == "empty" || m.start == "fresh");
      }
    } catch (const std::exception&) {
      lean_file = false;
    }
  }
  bool large = lean_file;  // a file's size is not known yet
  try {
    large = large || (m.synthetic > 0 && m.synthetic_range().second > ce::kCpuSmallN);
  } catch (const ce::InputError&) {  // a bad --slice is reported by the loader
  }
  e.compact =
      large && m.model != "stochastic" && m.observe == "full" &&
      (m.start.empty() || m.start == "empty" || m.start == "fresh") &&
      (backend == "cpu" ||
       (backend == "auto" && ce::resolve_backend(ce::Backend::automatic) != ce::Backend::cuda));
  // The policies that need no prepared per-source data and run on the engines (an unknown name is
  // refused after this estimate).
  for (const std::string& name : policies) {
    const ce::RegisteredPolicy* p = ce::find_policy(name);
    e.compact = e.compact && (!p || (p->builtin && p->needs == ce::PolicyNeeds::nothing));
  }
  // lambda, xi, mu (and the costs); a file's costs and ids may be kept (not known yet).
  e.kept = lean_file ? 40 : 24 + (m.synthetic_costs == "unit" ? 0 : 8);
  if (lean_file) e.read = 40 + 8;  // lambda, xi, mu, cost, id, perhaps x0, as read
  return e;
}

/// The compact columns' decision after loading (load_problem's CompactFn) for these built-in
/// policies and no function policy, on the CPU backend (the CUDA backend uploads every column), for
/// the wide engine's populations (the small engine and the reference expand them; memory matters
/// only for large populations).
CompactFn compact_decision(ce::Comm* world, const ce::Backend& requested,
                           const std::vector<ce::Policy>& policies,
                           const std::vector<std::string>& functions) {
  return [world, &requested, &policies, &functions](const ce::Population& pop,
                                                    const ce::RunConfig& cfg, uint64_t total) {
    const ce::Backend b = world ? sharded_backend(requested) : ce::resolve_backend(requested);
    return b == ce::Backend::cpu && total > ce::kCpuSmallN &&
           ce::compact_columns_apply(pop, cfg, policies, !functions.empty());
  };
}

/// What run's --policy and --backend name, once checked.
struct RunPolicies {
  std::vector<const ce::RegisteredPolicy*> chosen;  // in the order given, each once
  std::vector<ce::Policy> policies;                 // the built-in ones among them
  std::vector<std::string> functions;               // the score-function ones
  ce::Backend requested = ce::Backend::automatic;
};

/// run's checks before any work (load_problem calls them where the ranks agree on failures):
/// every output can be written, and the policies, the backend and the outputs go together.
void check_run(const RunArgs& a, ce::Comm* world, bool root, RunPolicies& out) {
  if (root && !a.json_path.empty()) ce::check_output(a.json_path, "--json");
  if (root && !a.trace_path.empty()) ce::check_output(a.trace_path, "--trace");
  for (const std::string& name : a.policies) {
    const ce::RegisteredPolicy& p = ce::registered_policy(name, "--policy");
    if (std::find(out.chosen.begin(), out.chosen.end(), &p) != out.chosen.end()) continue;
    out.chosen.push_back(&p);
    if (p.builtin)
      out.policies.push_back(*p.builtin);
    else
      out.functions.push_back(p.name);
  }
  if (out.chosen.empty()) throw ce::InputError("--policy needs at least one policy");
  if (!out.functions.empty() && !a.trace_path.empty())
    throw ce::InputError("--trace covers the built-in policies (not " + out.functions[0] + ")");
  out.requested = enum_parse_or_throw<ce::Backend>(a.backend, "--backend");
  if (!out.functions.empty() && out.requested == ce::Backend::reference)
    throw ce::InputError("--policy " + out.functions[0] +
                         " is a score function: no reference computes it (--backend reference "
                         "cannot run it); use --backend cpu, cuda or auto");
  // (Each rank its own devices, counted without opening a context: a rank picks its device
  // later, use_device.)
  if (world && sharded_backend(out.requested) == ce::Backend::cuda &&
      ce::cuda::visible_device_count() == 0)
    throw ce::InputError(ce::cuda::unavailable_message());
  if (world && !a.trace_path.empty())
    throw ce::InputError("--trace runs in one process (not under mpirun)");
  if (!(a.eval.target_ci >= 0 && a.eval.target_ci < 1))
    throw ce::InputError("--target-ci must be a relative half-width in [0, 1), e.g. 0.001");
  if (a.json_path == "-" && a.trace_path == "-")
    throw ce::InputError("--json - and --trace - both ask for standard output; give one a file");
}

/// The engines' bytes per source for run's policies.
double run_engine_bytes(const RunArgs& a, ce::Comm* world) {
  const bool deterministic = a.m.model != "stochastic";
  // (The budget's share of the sources, where both are known before reading them.)
  const double share = a.m.synthetic > 0 ? a.m.cfg.budget / double(a.m.synthetic) : 1.0;
  // (A GPU per rank: its host copies of the columns, where the CPU engine's state is smaller.)
  return world && a.backend == "cuda"
             ? std::max(ce::kKeyedHostBytesPerSource,
                        ce::engine_bytes_per_source(a.policies, deterministic, share))
             : ce::engine_bytes_per_source(a.policies, deterministic, share);
}

/// run's bytes per source for the memory check before reading: a file may hold expiries then
/// (their columns counted); print_run_memory counts the columns the problem holds.
double run_bytes_before_read(const RunArgs& a, double engine) {
  const bool deterministic = a.m.model != "stochastic";
  const ExpectedColumns expected = expected_columns(a.m, a.backend, a.policies);
  return expected.compact
             ? std::max(expected.read + ce::kCompactProblemBytes,
                        ce::run_bytes_per_source(expected.kept, ce::kCompactProblemBytes, engine))
             : ce::run_bytes_per_source(
                   expected.read, ce::problem_bytes_per_source(deterministic, a.m.synthetic == 0),
                   engine);
}

/// The run's memory estimate on stderr, on the columns the problem holds.
void print_run_memory(const RunArgs& a, ce::Comm* world, const Loaded& loaded, double engine) {
  const ce::Problem& problem = loaded.problem;
  const bool deterministic = a.m.model != "stochastic";
  const double columns =
      problem.params().compact()
          ? ce::kCompactProblemBytes
          : ce::problem_bytes_per_source(
                deterministic, problem.params().has_expiry_columns() && problem.size() > 0);
  const double population = problem.params().compact() ? ce::population_bytes_per_source(loaded.pop)
                            : a.m.synthetic > 0        ? ce::kSyntheticPopulationBytes
                                                       : ce::kFilePopulationBytes;
  const double bytes_per_source = ce::run_bytes_per_source(population, columns, engine);
  std::cerr << "crawleval: memory: "
            << (world && world->size() > 1
                    ? "process 0 of " + std::to_string(world->size()) + " (of " +
                          std::to_string(problem.global_size()) + " sources in all): "
                    : std::string())
            << ce::memory_estimate_line(ce::run_memory_bytes(problem.size(), bytes_per_source,
                                                             population, columns, !a.no_bound),
                                        bytes_per_source, problem.size())
            << "\n";
}

/// Sources dearer than the budget are never crawled, and the walk stops at the first of them in
/// an epoch's order: a population whose best-ranked source costs more than M crawls nothing. The
/// rule, not an error; said so that a reward of 0 is not a surprise.
void note_dear_sources(const ce::Problem& problem, ce::Comm* world, bool root) {
  uint64_t dear = 0;
  const double limit = ce::budget_limit(problem.config.budget);
  for (std::size_t i = 0; i < problem.size(); ++i)
    dear += uint64_t(problem.population->cost_of(i) > limit);
  if (world) dear = world->sum(dear);
  if (root && dear > 0)
    std::cerr << "crawleval: note: " << dear << " of the " << problem.global_size()
              << " sources cost more than --budget " << ce::shown_number(problem.config.budget)
              << ": they are never crawled, and an epoch crawls only the sources ranked before "
                 "the first of them (the budget walk stops there)\n";
}

/// --trace only where the population is small and the file not huge (unless --force-trace).
void check_trace_size(const RunArgs& a, const ce::Problem& problem, std::size_t policies) {
  if (!a.trace_path.empty() && problem.size() > 10000)
    throw ce::InputError("--trace is for small populations (at most 10000 sources); this one has " +
                         std::to_string(problem.size()));
  if (a.trace_path.empty() || a.force_trace) return;
  // One line per policy, epoch and source, about 80 bytes each.
  constexpr double kTraceLimit = 2.0 * double(1ull << 30);
  const double bytes =
      80.0 * double(policies) * double(problem.total_epochs()) * double(problem.size());
  if (bytes > kTraceLimit) {
    char msg[200];
    std::snprintf(msg, sizeof msg,
                  "--trace would write about %.1f GiB (%zu policies x %llu epochs x %zu "
                  "sources); add --force-trace to write it anyway",
                  bytes / double(1ull << 30), policies, (unsigned long long)problem.total_epochs(),
                  problem.size());
    throw ce::InputError(msg);
  }
}

/// What run computed: each policy's result, the bound (unless --no-bound), the policies' notes.
struct RunResults {
  std::vector<ce::PolicyResult> results;
  ce::BoundResult bound;
  ce::PolicyNotes notes;
};

/// run's outputs on rank 0: the table (stderr when an output goes to standard output), the
/// JSON and the trace. `t0`: when the command started (the JSON's time).
void report_run(const RunArgs& a, ce::Comm* world, const ce::Problem& problem,
                const ce::PolicyRunOptions& run, const RunResults& r,
                const std::vector<ce::Policy>& policies, std::chrono::steady_clock::time_point t0) {
  const ce::EvaluateOptions& eval = run.eval;
  // With an output on standard output, stdout holds that output alone: the table goes to stderr.
  std::ostream& human = a.json_path == "-" || a.trace_path == "-" ? std::cerr : std::cout;
  ce::print_results_table(human, problem, r.results, a.no_bound ? nullptr : &r.bound, eval);
  if (const auto& n = r.notes.numerical_index)
    human << "whittle_numerical: the stochastic model's Whittle index on a lattice of " << n->grid
          << " states, " << n->classes << " class(es) of (lambda T, mu T), computed in "
          << n->seconds << " s; indexable\n";
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!a.json_path.empty()) {
    ce::set_activity("writing the results JSON");
    nlohmann::json j = ce::results_json(problem, r.results, run.backend,
                                        a.no_bound ? nullptr : &r.bound, total, eval);
    j["processes"] = world ? world->size() : 1;
    ce::add_policy_notes(j, r.notes);
    ce::write_json(a.json_path, j);
    if (a.json_path != "-") human << "wrote " << a.json_path << "\n";
  }
  if (!a.trace_path.empty()) {
    ce::set_activity("writing the trace");
    // Every epoch of the longest burn-in the policies used, then the measured ones.
    ce::Problem traced = problem;
    for (const ce::PolicyResult& p : r.results)
      traced.config.burn_in = std::max(traced.config.burn_in, p.warm_up.burn_in);
    ce::write_trace(a.trace_path, traced, policies);
    if (a.trace_path != "-")
      human << "wrote " << a.trace_path << " (replication 0, reference backend)\n";
  }
}

/// crawleval run: the checks, the population and the problem (sharded under mpirun), every
/// policy's evaluation and the bound, then rank 0's outputs.
int run_command(const RunArgs& a, ce::Comm* world) {
  const auto t0 = std::chrono::steady_clock::now();
  const bool root = !world || world->rank() == 0;
  RunPolicies chosen;
  const double engine = run_engine_bytes(a, world);
  const std::unique_ptr<Loaded> loaded = load_problem(
      a.m, world, run_bytes_before_read(a, engine), [&] { check_run(a, world, root, chosen); },
      [&](ce::RunConfig& cfg) { cfg.progress = !a.no_progress && root; },
      compact_decision(world, chosen.requested, chosen.policies, chosen.functions));
  ce::Problem& problem = loaded->problem;
  if (root && !a.no_progress) print_run_memory(a, world, *loaded, engine);
  note_dear_sources(problem, world, root);
  const ce::Backend backend =
      world ? sharded_backend(chosen.requested) : ce::resolve_backend(chosen.requested);
  check_trace_size(a, problem, chosen.policies.size());
  ce::PolicyRunOptions run;
  run.backend = backend;
  run.eval = a.eval;
  run.eval.fallback_to_cpu = chosen.requested == ce::Backend::automatic;
  run.index_grid = a.index_grid;
  run.comm = world;
  RunResults r;
  // Under MPI a failure from here on may leave the other ranks waiting at a collective: it ends
  // every rank (after saying why).
  ce::on_every_rank_or_abort(world, [&] {
    ce::prepare_policies(problem, chosen.chosen, run);
    for (const ce::RegisteredPolicy* p : chosen.chosen)
      r.results.push_back(ce::evaluate_policy(problem, *p, run, &r.notes));
    ce::set_activity("computing the Lagrangian bound");
    if (!a.no_bound)
      r.bound = world ? ce::sharded_bound(problem, *world) : ce::compute_bound(problem, backend);
  });
  if (!root) return ce::kExitOk;
  report_run(a, world, problem, run, r, chosen.policies, t0);
  return ce::kExitOk;
}

/// The parsed settings, one line per option of the parsed command ("run --epochs=5"), for the
/// processes of a sharded run to compare (ce::agree_on). Options that change no number are left
/// out: where the results go (only rank 0 writes) and the threads per process.
std::string settings_facts(const CLI::App& app) {
  std::string out;
  std::function<void(const CLI::App*, const std::string&)> walk = [&](const CLI::App* a,
                                                                      const std::string& path) {
    for (const CLI::Option* o : a->get_options()) {
      const std::string name = o->get_name();
      if (name == "--help" || name == "--version" || name == "--json" || name == "--no-progress" ||
          name == "--threads")
        continue;
      std::string value;
      for (const std::string& r : o->results()) value += (value.empty() ? "" : ",") + r;
      out += path + name + (value.empty() ? "" : " " + value) + "\n";
    }
    for (const CLI::App* sub : a->get_subcommands()) walk(sub, path + sub->get_name() + " ");
  };
  std::string command;
  for (const CLI::App* a = &app; !a->get_subcommands().empty(); a = a->get_subcommands()[0])
    command += (command.empty() ? "" : " ") + a->get_subcommands()[0]->get_name();
  out = "the command " + command + "\n";
  walk(&app, "");
  return out;
}

}  // namespace

namespace crawleval::cli {

namespace {

/// The app's leaf commands and their options (parser_options()).
void list_options(const CLI::App& app, const std::string& path,
                  std::map<std::string, std::vector<std::string>>& out) {
  const auto subs = app.get_subcommands([](const CLI::App*) { return true; });
  if (!subs.empty()) {
    for (const CLI::App* sub : subs)
      list_options(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), out);
    return;
  }
  std::vector<std::string>& names = out[path];
  for (const CLI::Option* o : app.get_options()) {
    if (o == app.get_help_ptr()) continue;
    std::string joined;
    for (const std::string& l : o->get_lnames()) joined += (joined.empty() ? "--" : ",--") + l;
    for (const std::string& c : o->get_snames()) joined += (joined.empty() ? "-" : ",-") + c;
    names.push_back(joined.empty() ? o->get_name() : joined);
  }
}

/// Where parser_options() wants command_line to list the options (null: run).
std::map<std::string, std::vector<std::string>>* g_list_options = nullptr;

/// crawleval run's options.
void add_run_options(CLI::App* run, RunArgs& ra) {
  ra.m.add_population(run, true);
  ra.m.add_model(run);
  run->add_option("--epochs,-H", ra.m.cfg.epochs, "measured epochs per replication")
      ->capture_default_str()
      ->check(integer_in(1, kMaxU32));
  run->add_option("--burn-in,-B", ra.burn_in,
                  "epochs run before measuring in every replication: auto (MSER-5 on a pilot "
                  "run, per policy) or a number")
      ->capture_default_str()
      ->check(ce::cli::auto_or_integer(0, kMaxU32 - 1));
  run->add_option("--max-burn-in", ra.eval.warm_up.max_burn_in,
                  "cap of --burn-in auto (its pilots run up to twice this many epochs)")
      ->capture_default_str()
      ->check(integer_in(1, kMaxU32 / 2));
  run->add_option("--replications,-R", ra.m.cfg.replications, "independent replications")
      ->capture_default_str()
      ->check(integer_in(1, kMaxU32));
  run->add_option("--utility", ra.m.utility,
                  "stochastic model: the law of an item's utility, mean xi: deterministic | "
                  "exponential | lognormal:SIGMA | pareto:A | gamma:K | empirical:FILE.csv "
                  "(columns value,probability)")
      ->capture_default_str();
  run->add_option("--start", ra.m.start,
                  "initial states: " + enum_choices<ce::Start>(" | ") +
                      " (default: given when the CSV has x0, else empty)");
  run->add_option("--policy", ra.policies, policy_help())->delimiter(',')->capture_default_str();
  run->add_option("--backend", ra.backend, enum_choices<ce::Backend>(" | "))->capture_default_str();
  run->add_option("--threads", ra.m.cfg.threads, "CPU threads (0: all)")
      ->capture_default_str()
      ->check(integer_in(0, ce::cli::max_threads()));
  run->add_option("--target-ci", ra.eval.target_ci,
                  "add replications until the 95% half-width is below this fraction of the mean")
      ->check(number_in(0, 1, false, true));
  run->add_option("--max-replications", ra.eval.max_replications, "cap for --target-ci")
      ->capture_default_str()
      ->check(integer_in(1, kMaxU32));
  run->add_option("--index-grid", ra.index_grid,
                  "whittle_numerical: lattice states per class (the solve is O(G^3))")
      ->capture_default_str()
      ->check(integer_in(8, 4000));
  run->add_option("--json", ra.json_path, "write results as JSON");
  run->add_option("--trace", ra.trace_path, "write per-epoch states and actions as CSV (small N)");
  run->add_flag("--no-bound", ra.no_bound, "do not compute the Lagrangian upper bound");
  run->add_flag("--no-progress", ra.no_progress, "no progress lines on stderr");
  run->add_flag("--force-trace", ra.force_trace, "write a --trace estimated above 2 GiB");
}

/// The second word of a command group (learn, syncbandit, import, fresh) named: false (after the
/// message) when it names none of the group's commands, instead of CLI11's "a subcommand is
/// required".
bool known_command_group_word(int argc, char** argv) {
  const std::string cmd = argv[1];
  if (!((cmd == "learn" || cmd == "syncbandit" || cmd == "import" || cmd == "fresh") && argc >= 3 &&
        argv[2][0] != '-'))
    return true;
  const std::string sub = argv[2];
  const bool known = cmd == "learn"    ? (ce::enum_parse<ce::sync::Algorithm>(sub).has_value() ||
                                       sub == "lspe" || sub == "adaptive-whittle")
                     : cmd == "import" ? sub == "politecrawling"
                     : cmd == "fresh"  ? (sub == "run" || sub == "bound" || sub == "generate")
                                       : (sub == "optimum" || sub == "generate");
  if (known) return true;
  std::cerr << "crawleval: error: unknown " << cmd << " command '" << sub << "' (expected "
            << (cmd == "learn"
                    ? ce::enum_choices<ce::sync::Algorithm>() + ", lspe or adaptive-whittle"
                : cmd == "import" ? "politecrawling"
                : cmd == "fresh"  ? "run, bound or generate"
                                  : "optimum or generate")
            << ")\n";
  return false;
}

/// crawleval bound.
int bound_command(const BoundArgs& a, ce::Comm* world) {
  const bool root = !world || world->rank() == 0;
  ce::Backend requested = ce::Backend::automatic;
  auto checks = [&] {
    if (root && !a.json_path.empty()) ce::check_output(a.json_path, "--json");
    requested = enum_parse_or_throw<ce::Backend>(a.backend, "--backend");
    if (world && requested == ce::Backend::cuda)
      throw ce::InputError(
          "--backend cuda under mpirun: the bound runs on every process's CPU (use --backend auto "
          "or cpu)");
    if (world) sharded_backend(requested);
  };
  // The bound alone on the compact columns where a run would hold them: it then derives a
  // source's constants at each of its passes (about 1.6x the time) in a third of the memory.
  const ExpectedColumns expected = expected_columns(a.m, a.backend, {});
  const double before_read =
      expected.compact
          ? std::max(expected.read + ce::kCompactProblemBytes,
                     expected.kept + ce::kCompactProblemBytes + ce::kBoundWorkBytesPerSource)
          : ce::kBoundBytesPerSource;
  const std::vector<ce::Policy> none;
  const std::vector<std::string> no_functions;
  const std::unique_ptr<Loaded> loaded = load_problem(
      a.m, world, before_read, checks, [](ce::RunConfig& cfg) { cfg.epochs = 1; },
      compact_decision(world, requested, none, no_functions));
  const ce::Problem& problem = loaded->problem;
  const ce::Backend b = world ? sharded_backend(requested) : ce::resolve_backend(requested);
  ce::BoundResult r;
  ce::set_activity("computing the Lagrangian bound");  // (an interrupt named the loading)
  ce::on_every_rank_or_abort(world, [&] {
    r = world ? ce::sharded_bound(problem, *world) : ce::compute_bound(problem, b);
  });
  if (!root) return ce::kExitOk;
  ce::print_bound(a.json_path == "-" ? std::cerr : std::cout, problem, r);
  if (!a.json_path.empty()) {
    nlohmann::json j = ce::bound_json(r);
    j["tool"] = "crawleval", j["command"] = "bound", j["backend"] = ce::to_string(b);
    j["sources"] = problem.global_size(), j["budget"] = problem.config.budget;
    j["processes"] = world ? world->size() : 1;
    ce::add_context(j, ce::to_string(b),
                    b == ce::Backend::cuda ? ce::cuda::device_description() : "");
    ce::write_json(a.json_path, j);
  }
  return ce::kExitOk;
}

/// crawleval optimal: the exact optimum, with the size of the solve and its progress on stderr
/// (it can take minutes).
int optimal_command(const OptimalArgs& a) {
  ce::OptimalOptions options = a.options;
  if (!a.json_path.empty()) ce::check_output(a.json_path, "--json");
  const ce::Population pop = a.m.load(ce::kPopulationBytesPerSource);
  // The size of the solve, then its progress (stderr): it can take minutes.
  const auto started = std::chrono::steady_clock::now();
  auto last = started;
  const bool tty = isatty(2) && !a.no_progress;
  // The larger programmes' sizes and first iterations (small ones take milliseconds).
  auto programme = started;
  bool large = false;
  options.on_start = [&](uint64_t states, uint32_t cap, std::size_t actions) {
    programme = std::chrono::steady_clock::now();
    large = states >= 100000;
    if (a.no_progress) return;
    std::cerr << "exact optimum: a capped programme over " << states
              << " joint states (largest age cap " << cap << "), " << actions << " actions each\n";
  };
  options.on_iteration = [&](uint64_t it, double lo, double hi) {
    const auto now = std::chrono::steady_clock::now();
    const double secs = std::chrono::duration<double>(now - started).count();
    if (it == 1 && large && !a.no_progress)
      std::cerr << "  its first iteration took "
                << std::chrono::duration<double>(now - programme).count()
                << " s (usually a few dozen; at most " << options.max_iterations << ")\n";
    if (tty && now - last > std::chrono::milliseconds(500)) {
      last = now;
      std::cerr << "\r  iteration " << it << ": gain in [" << lo << ", " << hi << "], " << secs
                << " s   " << std::flush;
    }
  };
  ce::set_activity("computing the exact optimum");  // (an interrupt named the loading)
  const ce::OptimalResult r = ce::exact_optimum(pop, a.m.cfg.epoch_length, a.m.cfg.budget, options);
  if (tty) std::cerr << "\r" << std::string(72, ' ') << "\r";
  ce::print_optimal(a.json_path == "-" ? std::cerr : std::cout, pop, r);
  if (!a.json_path.empty())
    ce::write_json(a.json_path, ce::optimal_json(pop, a.m.cfg.epoch_length, a.m.cfg.budget, r));
  return ce::kExitOk;
}

/// crawleval generate.
int generate_command(const GenerateArgs& a) {
  if (a.n == 0) throw ce::InputError("--synthetic must be at least 1");
  const auto [first, count] =
      a.slice.empty() ? std::make_pair(uint64_t(0), a.n) : parse_slice(a.slice, a.n);
  if (count > ce::kMaxLocalSources)
    throw ce::InputError(ce::local_limit_error("--synthetic " + std::to_string(a.n), count));
  ce::check_output(a.out, "--out");
  ce::require_memory(double(count) * ce::kPopulationBytesPerSource,
                     "--synthetic " + std::to_string(a.n));
  ce::Population pop = ce::synthetic_slice(
      a.n, a.seed, enum_parse_or_throw<ce::SyntheticCosts>(a.costs, "--costs"), first, count);
  pop.first_id = first;  // a .cpop keeps it (version 2); a CSV cannot (write_population)
  ce::write_population(pop, a.out);
  std::cout << "wrote " << ce::cli::count_of(count, "source", "sources") << " to " << a.out << "\n";
  return ce::kExitOk;
}

/// crawleval convert.
int convert_command(const ConvertArgs& a) {
  ce::check_output(a.out, "--out");
  const ce::Population pop = a.m.load(ce::kPopulationBytesPerSource);
  ce::validate_sources(pop, ce::RunConfig{});
  ce::set_activity("writing " + ce::printable(a.out, 256));
  ce::write_population(pop, a.out);
  std::cout << "wrote " << ce::cli::count_of(pop.size(), "source", "sources") << " to " << a.out
            << "\n";
  return ce::kExitOk;
}

/// crawleval bound's options.
void add_bound_options(CLI::App* bound, BoundArgs& ba) {
  ba.m.add_population(bound, true);
  ba.m.add_model(bound);
  bound->add_option("--backend", ba.backend, enum_choices<ce::Backend>(" | "))
      ->capture_default_str();
  bound->add_option("--json", ba.json_path, "write the result as JSON");
}

/// crawleval optimal's options.
void add_optimal_options(CLI::App* optimal, OptimalArgs& oa) {
  oa.m.add_population(optimal, false);
  optimal->add_option("--budget,-M", oa.m.cfg.budget, "crawls per epoch (integer)")
      ->required()
      ->check(number_in(0, kHuge, true));
  optimal->add_option("--epoch-length,-T", oa.m.cfg.epoch_length, "epoch length T")
      ->capture_default_str()
      ->check(number_in(0, kHuge, true));
  optimal
      ->add_option("--max-states", oa.options.max_states,
                   "limit on joint states (the age caps grow until the optimum's bracket closes "
                   "or the caps' joint states would exceed it)")
      ->capture_default_str()
      ->check(integer_in(1, kMaxU64));
  optimal
      ->add_option("--max-work", oa.options.max_work,
                   "limit on state-action evaluations over every solve (past it the result is "
                   "the bracket reached; about 2-4 minutes on 2 cores at the default)")
      ->capture_default_str()
      ->check(number_in(0, kHuge, true));
  optimal->add_option("--json", oa.json_path, "write the result as JSON");
  optimal->add_flag("--no-progress", oa.no_progress, "no progress line on stderr");
}

/// crawleval generate's options.
void add_generate_options(CLI::App* generate, GenerateArgs& ga) {
  generate->add_option("--synthetic", ga.n, "number of sources")
      ->required()
      ->check(integer_in(1, ce::kMaxGlobalId));
  generate
      ->add_option("--slice", ga.slice,
                   "FIRST:COUNT: write only sources [FIRST, FIRST+COUNT) (a .cpop keeps FIRST "
                   "as its first_id: runs on it draw as the slice of the whole population)")
      ->check(non_empty("FIRST:COUNT"));
  generate->add_option("--seed", ga.seed, "seed")
      ->capture_default_str()
      ->check(integer_in(0, kMaxU64));
  generate->add_option("--costs", ga.costs, enum_choices<ce::SyntheticCosts>(" | "))
      ->check(CLI::IsMember(enum_names<ce::SyntheticCosts>()))
      ->capture_default_str();
  generate->add_option("--out", ga.out, "output: FILE.csv, or FILE.cpop (binary columnar)")
      ->required();
}

/// crawleval convert's options.
void add_convert_options(CLI::App* convert, ConvertArgs& ca) {
  ca.m.add_population(convert, false);
  convert->add_option("--out", ca.out, "output: FILE.cpop (binary columnar) or FILE.csv")
      ->required();
}

/// Every command's settings as parsed, the subcommands that hold them, and the runs of the
/// commands registered in the other files (each returns -1 when its command was not given).
struct Commands {
  RunArgs run;
  BoundArgs bound;
  OptimalArgs optimal;
  GenerateArgs generate;
  ConvertArgs convert;
  CLI::App *run_cmd = nullptr, *bound_cmd = nullptr, *optimal_cmd = nullptr,
           *generate_cmd = nullptr, *convert_cmd = nullptr;
  std::function<int()> learning, plotting, index;
  std::function<int(ce::Comm*)> freshness;
};

/// Every command on `app`, in the order of the help's list.
void add_commands(CLI::App& app, Commands& c) {
  c.run_cmd = app.add_subcommand("run", "simulate policies and report mean reward per epoch");
  add_run_options(c.run_cmd, c.run);
  c.bound_cmd = app.add_subcommand("bound", "Lagrangian upper bound on the optimal reward");
  add_bound_options(c.bound_cmd, c.bound);
  c.optimal_cmd = app.add_subcommand("optimal", "exact optimum of a small deterministic instance");
  add_optimal_options(c.optimal_cmd, c.optimal);
  c.generate_cmd = app.add_subcommand(
      "generate", "write a synthetic population as CSV, or as the binary columnar format (.cpop)");
  add_generate_options(c.generate_cmd, c.generate);
  c.convert_cmd = app.add_subcommand(
      "convert", "write a population as CSV or as the binary columnar format (.cpop)");
  add_convert_options(c.convert_cmd, c.convert);
  c.learning = ce::cli::add_learning_commands(app);
  c.freshness = ce::cli::add_fresh_commands(app);
  c.plotting = ce::cli::add_plot_command(app);
  c.index = ce::cli::add_index_command(app);
}

/// The processes when mpirun started this one and the build has MPI (null otherwise): run and
/// bound shard over them; only rank 0 prints and writes files.
ce::Comm* start_world() {
  ce::Comm* world = ce::mpi_world();
  if (world && world->rank() != 0) {
    std::cout.setstate(std::ios::failbit);
    std::cerr.setstate(std::ios::failbit);
  }
  if (!world && ce::launched_by_mpi() && !ce::mpi_compiled())
    std::cerr << "crawleval: note: started by an MPI launcher, but this build has no MPI "
                 "(CRAWLEVAL_ENABLE_MPI=OFF): every process runs the whole evaluation\n";
  return world;
}

/// The command that argv names (and a command group's second word) exists: false (after the
/// message) when it does not, instead of CLI11's messages.
bool known_command(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return true;
  const std::string cmd = argv[1];
  if (cmd != "run" && cmd != "bound" && cmd != "optimal" && cmd != "generate" && cmd != "convert" &&
      cmd != "learn" && cmd != "syncbandit" && cmd != "import" && cmd != "fresh" && cmd != "plot" &&
      cmd != "index" && cmd != "relaxed") {
    std::cerr << "crawleval: error: unknown command '" << cmd
              << "' (expected run, bound, optimal, generate, convert, learn, relaxed, syncbandit, "
                 "import, fresh, index or plot; see --help)\n";
    return false;
  }
  return known_command_group_word(argc, argv);
}

/// Parses argv into `app`'s settings: the exit code when that ends the program (--help,
/// --version, a command line that does not parse), nothing when the command is to run.
std::optional<int> parse(CLI::App& app, int argc, char** argv, ce::Comm* world) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    // Under mpirun the other processes wait at the first collective (below): join it with this
    // error as the settings, so that they stop too when their command lines parsed.
    if (world && world->size() > 1 && code != 0) {
      try {
        ce::agree_on(*world, std::string("a command line that does not parse: ") + e.what(),
                     "the settings", "start every process with the same command line");
      } catch (const ce::InputError&) {
      }
    }
    return code == 0 ? ce::kExitOk : ce::kExitBadInput;
  }
  return std::nullopt;
}

/// Runs the parsed command; its exit code.
int run_parsed(const CLI::App& app, const Commands& c, ce::Comm* world) {
  // Before any other collective: processes started with different settings (an MPMD launch, a
  // wrapper script) would run different collectives and wait for each other forever.
  if (world && world->size() > 1)
    ce::agree_on(*world, settings_facts(app), "the settings",
                 "start every process with the same command line");
  const bool fresh_sharded =
      app.got_subcommand("fresh") && (app.get_subcommand("fresh")->got_subcommand("run") ||
                                      app.get_subcommand("fresh")->got_subcommand("bound"));
  if (world && world->size() > 1 && !c.run_cmd->parsed() && !c.bound_cmd->parsed() &&
      !fresh_sharded)
    throw ce::InputError(
        "only run, bound, fresh run and fresh bound shard over MPI processes; run this command "
        "alone");
  if (const int rc = c.learning(); rc >= 0) return rc;
  if (const int rc = c.freshness(world); rc >= 0) return rc;
  if (const int rc = c.plotting(); rc >= 0) return rc;
  if (const int rc = c.index(); rc >= 0) return rc;
  if (c.run_cmd->parsed()) return run_command(c.run, world);
  if (c.bound_cmd->parsed()) return bound_command(c.bound, world);
  if (c.optimal_cmd->parsed()) return optimal_command(c.optimal);
  if (c.generate_cmd->parsed()) return generate_command(c.generate);
  if (c.convert_cmd->parsed()) return convert_command(c.convert);
  return ce::kExitOk;
}

/// run_parsed, its errors said on stderr with their exit codes.
int run_reporting_errors(const CLI::App& app, const Commands& c, ce::Comm* world) {
  try {
    return run_parsed(app, c, world);
  } catch (const ce::InputError& e) {
    std::cerr << "crawleval: error: " << e.what() << "\n";
    return ce::kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::cerr << "crawleval: failed: out of memory (the estimate before the run was too low; "
                 "try a smaller population)\n";
    return ce::kExitFailure;
  } catch (const std::exception& e) {
    std::cerr << "crawleval: failed: " << e.what() << "\n";
    return ce::kExitFailure;
  }
}

}  // namespace

int command_line(int argc, char** argv, bool parse_only) {
  CLI::App app{
      "crawleval: evaluate crawl-scheduling policies (Whittle index and baselines) on the "
      "ephemeral-content crawling model"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("crawleval ") + ce::version() + " (" +
                                        ce::git_commit() + ", " + ce::build_type() + ")");
  Commands c;
  add_commands(app, c);
  if (g_list_options) {
    list_options(app, "", *g_list_options);
    return ce::kExitOk;
  }
  ce::Comm* world = parse_only ? nullptr : start_world();
  if (!known_command(argc, argv)) return ce::kExitBadInput;
  if (const std::optional<int> rc = parse(app, argc, argv, world)) return *rc;
  if (parse_only) return ce::kExitOk;
  c.run.eval.warm_up.automatic = c.run.burn_in == "auto";
  if (!c.run.eval.warm_up.automatic) c.run.m.cfg.burn_in = std::stoull(c.run.burn_in);
  return run_reporting_errors(app, c, world);
}

std::map<std::string, std::vector<std::string>> parser_options() {
  std::map<std::string, std::vector<std::string>> out;
  char name[] = "crawleval";
  char* argv[] = {name, nullptr};
  g_list_options = &out;
  command_line(1, argv, true);
  g_list_options = nullptr;
  return out;
}

}  // namespace crawleval::cli
