// crawleval._core: the Python bindings (nanobind) of the engine. The public API is the Python
// package around it (python/crawleval/__init__.py), which checks and converts its arguments
// (dtypes, shapes, names) and turns the JSON these functions return into result objects.
//
// Rules kept here:
//  * The engine runs without the GIL. Python is called back (user policies, progress) only from the
//    thread that started the run, with the GIL taken for the call.
//  * Errors: InputError -> crawleval.InputError (a ValueError) with the CLI's message; a run
//  stopped
//    by Ctrl-C -> KeyboardInterrupt; an exception raised by a user's callback propagates unchanged.
//  * Results are the CLI's JSON (output.hpp), so the two cannot drift apart.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "crawleval/bound.hpp"
#include "crawleval/columnar.hpp"
#include "crawleval/cuda_backend.hpp"
#include "crawleval/driver.hpp"
#include "crawleval/error.hpp"
#include "crawleval/function_policies.hpp"
#include "crawleval/io.hpp"
#include "crawleval/model.hpp"
#include "crawleval/monitor.hpp"
#include "crawleval/optimal.hpp"
#include "crawleval/output.hpp"
#include "crawleval/resources.hpp"
#include "crawleval/stochastic_index.hpp"
#include "crawleval/syncbandit.hpp"
#include "crawleval/version.hpp"

namespace nb = nanobind;
namespace ce = crawleval;
namespace sb = crawleval::sync;
using namespace nb::literals;

namespace {

template <class T>
using In = nb::ndarray<const T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
template <class T>
using Out = nb::ndarray<nb::numpy, T, nb::ndim<1>>;

/// A new numpy array that owns a copy of `v` (the vector moves into a capsule).
template <class T>
Out<T> to_numpy(std::vector<T>&& v) {
  auto* owned = new std::vector<T>(std::move(v));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return Out<T>(owned->data(), {owned->size()}, owner);
}

/// A read-only numpy view of a column of `self` (which it keeps alive).
template <class T>
nb::ndarray<nb::numpy, const T, nb::ndim<1>> view(const std::vector<T>& v, nb::handle self) {
  return nb::ndarray<nb::numpy, const T, nb::ndim<1>>(v.data(), {v.size()}, self);
}

template <class T>
const T* data_or_null(const std::optional<In<T>>& a, std::size_t n, const char* name) {
  if (!a) return nullptr;
  if (a->shape(0) != n)
    throw ce::InputError(std::string("column '") + name + "' has " + std::to_string(a->shape(0)) +
                         " rows, 'lambda' has " + std::to_string(n));
  return a->data();
}

template <class T, class Parse>
T parse_or_throw(const std::string& text, Parse parse, const char* arg, const char* choices) {
  const auto v = parse(text);
  if (!v) throw ce::InputError(std::string(arg) + " '" + text + "' is not one of: " + choices);
  return *v;
}

/// Progress and Ctrl-C for the duration of one call: installed as the engines' RunMonitor
/// (monitor.hpp). A pending KeyboardInterrupt or an exception raised by the progress callback is
/// kept and re-raised once the engine has stopped.
class PythonMonitor : public ce::RunMonitor {
 public:
  explicit PythonMonitor(nb::object callback) : callback_(std::move(callback)) {
    previous_ = ce::set_run_monitor(this);
  }
  ~PythonMonitor() override { ce::set_run_monitor(previous_); }

  bool update(const std::string& label, uint64_t done, uint64_t total) override {
    nb::gil_scoped_acquire gil;
    return poll(&label, done, total);
  }
  bool keep_going() override {
    nb::gil_scoped_acquire gil;
    return poll();
  }
  /// With the GIL held: signals (and the progress callback when given a label); false to stop.
  bool poll(const std::string* label = nullptr, uint64_t done = 0, uint64_t total = 0) {
    if (pending_) return false;
    try {
      if (PyErr_CheckSignals() != 0) throw nb::python_error();
      if (label && !callback_.is_none()) callback_(*label, done, total);
    } catch (nb::python_error& e) {
      pending_ = std::make_unique<nb::python_error>(std::move(e));
      return false;
    }
    return true;
  }
  /// With the GIL held: raises what stopped the run, if anything did.
  void raise_pending() {
    if (pending_) {
      nb::python_error e = std::move(*pending_);
      pending_.reset();
      throw e;
    }
  }

 private:
  nb::object callback_;
  ce::RunMonitor* previous_ = nullptr;
  std::unique_ptr<nb::python_error> pending_;
};

/// Runs `body` without the GIL under a PythonMonitor; translates a stop into what caused it.
template <class F>
auto monitored(nb::object progress, F&& body) -> decltype(body(std::declval<PythonMonitor&>())) {
  PythonMonitor monitor(std::move(progress));
  try {
    nb::gil_scoped_release release;
    return body(monitor);
  } catch (const ce::Interrupted&) {
    monitor.raise_pending();
    throw;  // no cause kept: KeyboardInterrupt (the translator below)
  }
}

ce::RunConfig make_config(const ce::Population& pop, double budget, const std::string& model,
                          const std::string& observe, const std::optional<std::string>& start,
                          const std::string& utility, uint64_t epochs, uint64_t burn_in,
                          uint32_t replications, uint64_t seed, double epoch_length, int threads) {
  ce::RunConfig c;
  c.budget = budget;
  c.epochs = epochs;
  c.burn_in = burn_in;
  c.replications = replications;
  c.seed = seed;
  c.epoch_length = epoch_length;
  c.threads = threads;
  c.model = parse_or_throw<ce::Model>(model, ce::parse_model, "model", "deterministic, stochastic");
  c.observe = parse_or_throw<ce::Observe>(observe, ce::parse_observe, "observe", "full, belief");
  ce::set_utility(c, utility, "utility");
  if (start)
    c.start =
        parse_or_throw<ce::Start>(*start, ce::parse_start, "start", "empty, fresh, full, given");
  else
    c.start = pop.x0.empty() ? ce::Start::empty : ce::Start::given;
  return c;
}

/// One entry of evaluate()'s policy list: a built-in name, or (name, score function).
struct PolicySpec {
  std::optional<ce::Policy> builtin;
  std::string name;
  nb::object fn;
  bool paper = false;  ///< one of the papers' policies run as a score function (paper_policy)
};

/// The papers' policies that run through the function engine (function_policies.hpp,
/// stochastic_index.hpp), by name.
bool paper_policy(const std::string& name) {
  return name == "whittle_numerical" || name == "whittle_expiry_paper" ||
         name == "adaptive_whittle";
}

std::vector<PolicySpec> parse_policies(const nb::list& policies) {
  std::vector<PolicySpec> out;
  for (nb::handle h : policies) {
    PolicySpec s;
    if (nb::isinstance<nb::str>(h)) {
      s.name = nb::cast<std::string>(h);
      if (paper_policy(s.name))
        s.paper = true;
      else
        s.builtin = parse_or_throw<ce::Policy>(
            s.name, ce::parse_policy, "policy",
            "whittle, greedy, round_robin, random, static, whittle_numerical, "
            "whittle_expiry_paper, adaptive_whittle");
    } else {
      auto t = nb::cast<std::pair<std::string, nb::object>>(h);
      s.name = t.first;
      s.fn = t.second;
    }
    out.push_back(std::move(s));
  }
  if (out.empty()) throw ce::InputError("policies needs at least one policy");
  return out;
}

/// A user's score function as the engine's ScoreFn: `fn(state, age, replication, epoch)` gets
/// fresh numpy copies of the arrays (a policy may keep them) and returns float64 scores of the
/// right length (the Python layer converts and checks them).
ce::ScoreFn score_function(const nb::object& fn, PythonMonitor& monitor) {
  return [&fn, &monitor](const ce::ScoreRequest& q) {
    nb::gil_scoped_acquire gil;
    if (!monitor.poll()) throw ce::Interrupted();
    std::vector<double> state(q.state, q.state + q.n), age(q.age, q.age + q.n);
    nb::object result =
        fn(to_numpy(std::move(state)), to_numpy(std::move(age)), q.replication, q.epoch);
    const auto scores = nb::cast<In<double>>(result, false);
    if (scores.shape(0) != q.n)
      throw ce::InputError("a score function returned " + std::to_string(scores.shape(0)) +
                           " scores for " + std::to_string(q.n) + " sources");
    std::memcpy(q.scores, scores.data(), q.n * sizeof(double));
  };
}

std::string evaluate_json(const ce::Population& pop, double budget, const nb::list& policy_list,
                          const std::string& model, const std::string& observe,
                          const std::optional<std::string>& start, const std::string& utility,
                          uint64_t epochs, uint64_t burn_in, bool burn_in_auto,
                          uint64_t max_burn_in, uint32_t replications, double target_ci,
                          uint32_t max_replications, const std::string& backend, uint64_t seed,
                          double epoch_length, int threads, bool with_bound, nb::object progress) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<PolicySpec> specs = parse_policies(policy_list);
  const ce::Backend requested = parse_or_throw<ce::Backend>(backend, ce::parse_backend, "backend",
                                                            "auto, cpu, reference, cuda");
  if (!(target_ci >= 0 && target_ci < 1))  // NaN too
    throw ce::InputError("target_ci must be a relative half-width in [0, 1), e.g. 0.001");
  CE_EXPECTS(max_replications >= 1, "max_replications must be at least 1");
  const ce::RunConfig cfg = make_config(pop, budget, model, observe, start, utility, epochs,
                                        burn_in, replications, seed, epoch_length, threads);
  const ce::Backend resolved = ce::resolve_backend(requested);
  ce::EvaluateOptions eval;
  eval.target_ci = target_ci;
  eval.max_replications = max_replications;
  eval.fallback_to_cpu = requested == ce::Backend::automatic;
  eval.warm_up.automatic = burn_in_auto;
  eval.warm_up.max_burn_in = max_burn_in;
  CE_EXPECTS(max_burn_in >= 1, "max_burn_in must be at least 1");
  return monitored(progress, [&](PythonMonitor& monitor) {
    ce::Problem problem = ce::make_problem(pop, cfg);
    for (const PolicySpec& s : specs)
      if (s.builtin == ce::Policy::static_rate) {
        ce::prepare_static_policy(problem);
        break;
      }
    std::vector<ce::PolicyResult> results;
    for (const PolicySpec& s : specs) {
      if (s.builtin) {
        results.push_back(ce::evaluate(problem, *s.builtin, resolved, nullptr, eval));
      } else if (s.paper && s.name == "whittle_numerical") {
        const ce::StochasticIndex index = ce::compute_stochastic_index(problem);
        results.push_back(ce::evaluate_function(problem, s.name,
                                                ce::stochastic_index_policy(problem, index), eval));
      } else if (s.paper && s.name == "whittle_expiry_paper") {
        results.push_back(
            ce::evaluate_function(problem, s.name, ce::expiry_paper_index_policy(problem), eval));
      } else if (s.paper) {  // adaptive_whittle: it sees true states where sources reveal them
        const ce::Problem engine = ce::function_engine_problem(problem);
        results.push_back(
            ce::evaluate_function(engine, s.name, ce::adaptive_whittle_policy(problem), eval));
      } else
        results.push_back(
            ce::evaluate_function(problem, s.name, score_function(s.fn, monitor), eval));
    }
    ce::BoundResult bound;
    if (with_bound) bound = ce::compute_bound(problem, resolved);
    const double total =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    nlohmann::json j =
        ce::results_json(problem, results, resolved, with_bound ? &bound : nullptr, total, eval);
    j["processes"] = 1;
    return j.dump();
  });
}

std::string bound_json(const ce::Population& pop, double budget, const std::string& model,
                       const std::string& observe, const std::optional<std::string>& start,
                       const std::string& utility, double epoch_length,
                       const std::string& backend) {
  const ce::Backend requested = parse_or_throw<ce::Backend>(backend, ce::parse_backend, "backend",
                                                            "auto, cpu, reference, cuda");
  const ce::RunConfig cfg =
      make_config(pop, budget, model, observe, start, utility, 1, 0, 1, 1, epoch_length, 0);
  const ce::Backend resolved = ce::resolve_backend(requested);
  return monitored(nb::none(), [&](PythonMonitor&) {
    const ce::Problem problem = ce::make_problem(pop, cfg);
    const ce::BoundResult r = ce::compute_bound(problem, resolved);
    nlohmann::json j = ce::bound_json(r);
    j["tool"] = "crawleval", j["command"] = "bound", j["backend"] = ce::to_string(resolved);
    j["sources"] = problem.global_size(), j["budget"] = budget;
    j["processes"] = 1;
    ce::add_context(j, ce::to_string(resolved),
                    resolved == ce::Backend::cuda ? ce::cuda::device_description() : "");
    return j.dump();
  });
}

std::string optimal_json(const ce::Population& pop, double budget, double epoch_length,
                         uint64_t max_states, double tolerance, int threads) {
  ce::OptimalOptions o;
  o.max_states = max_states;
  o.tolerance = tolerance;
  o.threads = threads;
  return monitored(nb::none(), [&](PythonMonitor& monitor) {
    // Ctrl-C between value iterations: the solver has no stop of its own, so a stop throws from
    // its callback (on the calling thread, outside its parallel loops).
    o.on_iteration = [&](uint64_t, double, double) {
      nb::gil_scoped_acquire gil;
      if (!monitor.poll()) throw ce::Interrupted();
    };
    const ce::OptimalResult r = ce::exact_optimum(pop, epoch_length, budget, o);
    return ce::optimal_json(pop, epoch_length, budget, r).dump();
  });
}

Out<double> whittle_index(const In<double>& x, const In<double>& lambda, const In<double>& xi,
                          const In<double>& mu, const In<double>& cost, double epoch_length) {
  const std::size_t n = x.shape(0);
  for (const auto* a : {&lambda, &xi, &mu, &cost})
    if (a->shape(0) != n) throw ce::InputError("whittle_index: arrays of different lengths");
  CE_EXPECTS(std::isfinite(epoch_length) && epoch_length > 0,
             "T (epoch_length) must be a finite number > 0");
  std::vector<double> out(n);
  const double *px = x.data(), *pl = lambda.data(), *pxi = xi.data(), *pm = mu.data(),
               *pc = cost.data();
  {
    nb::gil_scoped_release release;
    auto bad = [](std::size_t i, const char* what) {
      return ce::InputError("whittle_index: element " + std::to_string(i) + ": " + what);
    };
    for (std::size_t i = 0; i < n; ++i) {
      if (!(std::isfinite(pl[i]) && pl[i] >= 0))
        throw bad(i, "lambda must be a finite number >= 0");
      if (!(std::isfinite(pxi[i]) && pxi[i] >= 0)) throw bad(i, "xi must be a finite number >= 0");
      if (!(std::isfinite(pm[i]) && pm[i] > 0)) throw bad(i, "mu must be a finite number > 0");
      if (!(std::isfinite(pc[i]) && pc[i] > 0)) throw bad(i, "cost must be a finite number > 0");
      if (!(std::isfinite(px[i]) && px[i] >= 0)) throw bad(i, "x must be a finite number >= 0");
      out[i] =
          ce::whittle_index(px[i], ce::derive_params(pl[i], pxi[i], pm[i], pc[i], epoch_length, 0));
    }
  }
  return to_numpy(std::move(out));
}

sb::Family parse_family(const std::string& s) {
  if (s == "polynomial") return sb::Family::polynomial;
  if (s == "poisson") return sb::Family::poisson;
  throw ce::InputError("family '" + s + "' is not one of: polynomial, poisson");
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "crawleval's engine (use the crawleval package, not this module)";
  m.attr("__version__") = ce::version();  // CMakeLists.txt's project(VERSION), as the CLI says

  static nb::exception<ce::InputError> input_error(m, "InputError", PyExc_ValueError);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const ce::Interrupted&) {
      PyErr_SetNone(PyExc_KeyboardInterrupt);
    } catch (const ce::InputError&) {
      throw;  // the InputError translator above
    } catch (const ce::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });

  nb::class_<ce::Population>(m, "Population")
      .def_static(
          "from_columns",
          [](const In<double>& lambda, const In<double>& xi, const In<double>& mu,
             const std::optional<In<double>>& cost, const std::optional<In<uint64_t>>& id,
             const std::optional<In<double>>& x0, const std::optional<In<uint32_t>>& expiry,
             const std::string& origin) {
            const std::size_t n = lambda.shape(0);
            const double* x = xi.shape(0) == n ? xi.data() : nullptr;
            const double* m_ = mu.shape(0) == n ? mu.data() : nullptr;
            if (!x || !m_)
              throw ce::InputError(std::string("column '") + (x ? "mu" : "xi") + "' has " +
                                   std::to_string((x ? mu : xi).shape(0)) + " rows, 'lambda' has " +
                                   std::to_string(n));
            const double* c = data_or_null(cost, n, "cost");
            const uint64_t* i = data_or_null(id, n, "id");
            const double* s = data_or_null(x0, n, "x0");
            const uint32_t* e = data_or_null(expiry, n, "expiry");
            nb::gil_scoped_release release;
            return ce::population_from_columns(n, lambda.data(), x, m_, c, i, s, e, origin);
          },
          "lambda_"_a, "xi"_a, "mu"_a, "cost"_a.none(), "id"_a.none(), "x0"_a.none(),
          "expiry"_a.none(), "origin"_a)
      .def_static(
          "synthetic",
          [](uint64_t n, uint64_t seed, const std::string& costs) {
            CE_EXPECTS(n >= 1 && n <= 4294967294ull, "n must lie in [1, 4294967294]");
            if (costs != "unit" && costs != "lognormal")
              throw ce::InputError("costs '" + costs + "' is not one of: unit, lognormal");
            nb::gil_scoped_release release;
            return ce::synthetic_population(
                n, seed,
                costs == "unit" ? ce::SyntheticCosts::unit : ce::SyntheticCosts::lognormal);
          },
          "n"_a, "seed"_a = 1, "costs"_a = "unit")
      .def_static("paper_example", &ce::paper_example)
      .def_static(
          "read",
          [](const std::string& path) {
            // Ctrl-C stops a long read (KeyboardInterrupt); the sources are checked as the CLI
            // checks them, whatever the format.
            return monitored(nb::none(), [&](PythonMonitor&) {
              return ce::read_population(path, ce::kPopulationBytesPerSource);
            });
          },
          "path"_a)
      .def(
          "write",
          [](const ce::Population& pop, const std::string& path) {
            nb::gil_scoped_release release;
            const std::string ext = ".cpop";
            if (path.size() >= ext.size() &&
                path.compare(path.size() - ext.size(), ext.size(), ext) == 0)
              ce::write_columnar(pop, path);
            else
              ce::write_sources_csv(pop, path);
          },
          "path"_a)
      .def("__len__", &ce::Population::size)
      .def_prop_ro("origin", [](const ce::Population& p) { return p.origin; })
      .def_prop_ro("unit_costs", &ce::Population::unit_costs)
      .def_prop_ro("total_cost", &ce::Population::total_cost)
      .def_prop_ro(
          "lambda_",
          [](nb::handle self) { return view(nb::cast<ce::Population&>(self).lambda, self); })
      .def_prop_ro("xi",
                   [](nb::handle self) { return view(nb::cast<ce::Population&>(self).xi, self); })
      .def_prop_ro("mu",
                   [](nb::handle self) { return view(nb::cast<ce::Population&>(self).mu, self); })
      .def_prop_ro("cost",
                   [](nb::handle self) { return view(nb::cast<ce::Population&>(self).cost, self); })
      .def_prop_ro("id",
                   [](nb::handle self) { return view(nb::cast<ce::Population&>(self).id, self); })
      .def_prop_ro("x0",
                   [](nb::handle self) -> nb::object {
                     const auto& p = nb::cast<ce::Population&>(self);
                     if (p.x0.empty()) return nb::none();
                     return nb::cast(view(p.x0, self));
                   })
      .def_prop_ro("expiry", [](nb::handle self) -> nb::object {
        const auto& p = nb::cast<ce::Population&>(self);
        if (p.expiry.empty()) return nb::none();
        return nb::cast(view(p.expiry, self));
      });

  m.def("evaluate", &evaluate_json, "population"_a, "budget"_a, "policies"_a, "model"_a,
        "observe"_a, "start"_a.none(), "utility"_a, "epochs"_a, "burn_in"_a, "burn_in_auto"_a,
        "max_burn_in"_a, "replications"_a, "target_ci"_a, "max_replications"_a, "backend"_a,
        "seed"_a, "epoch_length"_a, "threads"_a, "bound"_a, "progress"_a.none());
  m.def("bound", &bound_json, "population"_a, "budget"_a, "model"_a, "observe"_a, "start"_a.none(),
        "utility"_a, "epoch_length"_a, "backend"_a);
  m.def("optimal", &optimal_json, "population"_a, "budget"_a, "epoch_length"_a, "max_states"_a,
        "tolerance"_a, "threads"_a);
  m.def(
      "source_params",
      [](const ce::Population& pop, double epoch_length) {
        CE_EXPECTS(std::isfinite(epoch_length) && epoch_length > 0,
                   "epoch_length must be a finite number > 0");
        const std::size_t n = pop.size();
        std::vector<double> alpha(n), u(n), u_star(n), inv_cost(n);
        for (std::size_t i = 0; i < n; ++i) {
          const ce::SourceParams p =
              ce::derive_params(pop.lambda[i], pop.xi[i], pop.mu[i], pop.cost[i], epoch_length, 0);
          alpha[i] = p.alpha, u[i] = ce::drift(p), u_star[i] = p.u_star, inv_cost[i] = p.inv_cost;
        }
        nb::dict d;
        d["alpha"] = to_numpy(std::move(alpha));
        d["u"] = to_numpy(std::move(u));
        d["u_star"] = to_numpy(std::move(u_star));
        d["inv_cost"] = to_numpy(std::move(inv_cost));
        return d;
      },
      "population"_a, "epoch_length"_a);
  m.def("whittle_index", &whittle_index, "x"_a, "lambda_"_a, "xi"_a, "mu"_a, "cost"_a,
        "epoch_length"_a);
  m.def("resolve_backend", [](const std::string& b) {
    return std::string(ce::to_string(ce::resolve_backend(parse_or_throw<ce::Backend>(
        b, ce::parse_backend, "backend", "auto, cpu, reference, cuda"))));
  });

  // The sync bandit (syncbandit.hpp): instances, Problem 1's optimum and the learners.
  nb::class_<sb::Instance>(m, "SyncInstance")
      .def_static(
          "generate",
          [](const std::string& family, std::size_t arms, uint64_t seed) {
            CE_EXPECTS(arms >= 1, "arms must be at least 1");
            return sb::generate_instance(parse_family(family), arms, seed);
          },
          "family"_a, "arms"_a, "seed"_a = 0)
      .def_static(
          "read",
          [](const std::string& path, const std::optional<std::string>& family) {
            // The family is read from the columns; a given one must match them.
            return sb::read_instance_csv(
                path, family ? std::optional(parse_family(*family)) : std::nullopt);
          },
          "path"_a, "family"_a = nb::none())
      .def("__len__", &sb::Instance::arms)
      .def_prop_ro("family",
                   [](const sb::Instance& i) { return std::string(sb::to_string(i.family)); })
      .def_rw("budget", &sb::Instance::budget)
      .def_rw("r_min", &sb::Instance::r_min)
      .def_rw("r_max", &sb::Instance::r_max);
  m.def(
      "sync_optimum",
      [](const sb::Instance& inst, double epsilon) {
        CE_EXPECTS(epsilon >= 0 && epsilon < 1, "epsilon must lie in [0, 1)");  // NaN too
        sb::validate(inst);
        std::vector<double> r;
        const double j = monitored(nb::none(), [&](PythonMonitor&) {
          return sb::optimal_cost(
              inst,
              sb::Simplex{inst.r_min, inst.r_max / (1 + epsilon), inst.budget / (1 + epsilon)}, &r);
        });
        return std::make_pair(j, to_numpy(std::move(r)));
      },
      "instance"_a, "epsilon"_a = 0.0);
  m.def(
      "sync_learn",
      [](const sb::Instance& inst, const std::string& algorithm, double epsilon,
         std::optional<double> eta, std::optional<double> cycle, uint32_t rounds, uint64_t seed,
         uint32_t run) {
        sb::Algorithm alg;
        if (algorithm == "mirrorsync")
          alg = sb::Algorithm::mirrorsync;
        else if (algorithm == "async-mirrorsync")
          alg = sb::Algorithm::async_mirrorsync;
        else if (algorithm == "async-psgd")
          alg = sb::Algorithm::async_psgd;
        else
          throw ce::InputError("algorithm '" + algorithm +
                               "' is not one of: mirrorsync, async-mirrorsync, async-psgd");
        sb::LearnConfig cfg = sb::tuned_learn_config(alg, inst.family);
        cfg.epsilon = epsilon, cfg.rounds = rounds;
        if (eta) cfg.eta = *eta;
        if (cycle) cfg.cycle = *cycle;
        cfg.seed = seed;
        sb::validate(cfg);
        sb::validate(inst);
        // Ctrl-C between rounds: KeyboardInterrupt.
        std::vector<double> curve =
            monitored(nb::none(), [&](PythonMonitor&) { return sb::learn(inst, cfg, run); });
        return to_numpy(std::move(curve));
      },
      "instance"_a, "algorithm"_a, "epsilon"_a, "eta"_a.none(), "cycle"_a.none(), "rounds"_a,
      "seed"_a, "run"_a);
}
