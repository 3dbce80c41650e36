// crawleval index: the numerical Whittle index of the stochastic model per source class.
#include "cli_index.hpp"

#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "crawleval/analysis/stochastic_index.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/io/io.hpp"
#include "crawleval/io/output.hpp"
#include "crawleval/io/output_file.hpp"
#include "crawleval/model/resources.hpp"
#include "options.hpp"

namespace crawleval::cli {

namespace {

struct IndexArgs {
  std::string sources, utility = "exponential", out, json;
  bool paper = false;
  double epoch_length = 1.0;
  std::size_t grid = 800;
};

/// At most this many sources in --out (one row per source and lattice state).
constexpr std::size_t kMaxCurveSources = 1000;

int run_index(const IndexArgs& a) {
  if (!a.out.empty()) check_output(a.out, "--out");
  if (!a.json.empty()) check_output(a.json, "--json");
  if (int(!a.sources.empty()) + int(a.paper) != 1)
    throw InputError("give exactly one of --sources FILE, --paper-example");
  const Population pop =
      a.paper ? paper_example() : read_population(a.sources, kPopulationBytesPerSource);
  if (!a.out.empty() && pop.size() > kMaxCurveSources)
    throw InputError("--out writes one row per source and lattice state: at most " +
                     std::to_string(kMaxCurveSources) + " sources (this population has " +
                     std::to_string(pop.size()) + ")");
  RunConfig cfg;
  cfg.model = Model::stochastic;
  cfg.epoch_length = a.epoch_length;
  cfg.budget = pop.total_cost();
  cfg.epochs = 1;
  set_utility(cfg, a.utility);
  const Problem pr = make_problem(pop, cfg);
  StochasticIndexOptions o;
  o.grid = a.grid;
  set_activity("computing the numerical Whittle index");
  const StochasticIndex idx = compute_stochastic_index(pr, o);
  std::cout << pop.origin << ": " << pop.size() << " sources, " << idx.tables.size()
            << " class(es) of (lambda T, mu T), " << utility_setting(cfg)
            << " utilities, lattice of " << a.grid << " states, " << idx.seconds << " s\n";
  std::cout << std::setw(10) << "source" << std::setw(14) << "u" << std::setw(16) << "index at u"
            << std::setw(16) << "Theorem 1" << std::setw(16) << "index at u*" << std::setw(16)
            << "Theorem 1"
            << "  indexable\n";
  nlohmann::json sources = nlohmann::json::array();
  for (std::size_t i = 0; i < pr.size(); ++i) {
    const SourceParams p = pr.params().at(i);
    const double u = drift(p);
    const double nu = idx.index(i, u, pr), nus = idx.index(i, p.u_star, pr);
    const double tu = whittle_index(u, p), tus = whittle_index(p.u_star, p);
    const bool ok =
        idx.class_of[i] == StochasticIndex::kNoClass || idx.tables[idx.class_of[i]].indexable;
    std::cout << std::setw(10) << pop.id_of(i) << std::setw(14) << u << std::setw(16) << nu
              << std::setw(16) << tu << std::setw(16) << nus << std::setw(16) << tus << "  "
              << (ok ? "yes" : "NO: " + idx.tables[idx.class_of[i]].not_indexable) << "\n";
    sources.push_back({{"id", pop.id_of(i)},
                       {"u", u},
                       {"index_at_u", nu},
                       {"theorem1_at_u", tu},
                       {"index_at_u_star", nus},
                       {"theorem1_at_u_star", tus},
                       {"indexable", ok}});
  }
  if (!a.out.empty()) {
    set_activity("writing " + printable(a.out, 256));
    OutputFile f(a.out, "--out");
    std::ostream& os = f.stream();
    os << std::setprecision(17) << "source,x,index,theorem1\n";
    for (std::size_t i = 0; i < pr.size(); ++i) {
      if (idx.class_of[i] == StochasticIndex::kNoClass) continue;
      const SourceParams p = pr.params().at(i);
      const IndexTable& t = idx.tables[idx.class_of[i]];
      for (std::size_t m = 0; m < t.index.size(); ++m) {
        const double x = double(m) * t.h * p.xi;
        os << pop.id_of(i) << ',' << x << ',' << idx.index(i, x, pr) << ',' << whittle_index(x, p)
           << '\n';
      }
    }
    f.commit();
    std::cout << "wrote " << a.out << "\n";
  }
  if (!a.json.empty()) {
    nlohmann::json j = {{"tool", "crawleval"},
                        {"command", "index"},
                        {"origin", pop.origin},
                        {"utility", utility_setting(cfg)},
                        {"epoch_length", a.epoch_length},
                        {"grid", a.grid},
                        {"classes", idx.tables.size()},
                        {"indexable", idx.indexable()},
                        {"seconds", idx.seconds},
                        {"sources", sources}};
    write_json(a.json, j);
  }
  return idx.indexable() ? kExitOk : kExitBadInput;
}

}  // namespace

std::function<int()> add_index_command(CLI::App& app) {
  auto args = std::make_shared<IndexArgs>();
  CLI::App* cmd = app.add_subcommand(
      "index",
      "the stochastic model's Whittle index, computed numerically per class of sources, beside "
      "Theorem 1's (exit 2 when a class is not indexable)");
  cmd->add_option("--sources", args->sources, "CSV of sources: header with lambda,xi,mu[,cost,id]");
  cmd->add_flag("--paper-example", args->paper, "the papers' 4-source example (Table 1)");
  cmd->add_option("--utility", args->utility,
                  "the law of an item's utility: deterministic | exponential | lognormal:SIGMA | "
                  "pareto:A | gamma:K | empirical:FILE.csv")
      ->capture_default_str();
  cmd->add_option("--epoch-length,-T", args->epoch_length, "epoch length T")
      ->capture_default_str()
      ->check(number_in(0, kHuge, true));
  cmd->add_option("--grid", args->grid, "lattice states per class (the solve is O(G^3))")
      ->capture_default_str()
      ->check(integer_in(8, 4000));
  cmd->add_option("--out", args->out,
                  "write source,x,index,theorem1 at every lattice state (at most 1000 sources)");
  cmd->add_option("--json", args->json, "write the summary as JSON");
  return [cmd, args]() -> int {
    if (!cmd->parsed()) return -1;
    return run_index(*args);
  };
}

}  // namespace crawleval::cli
