// crawleval._core: the Python bindings (nanobind) of the engine. The public API is the Python
// package around it (python/crawleval/__init__.py), which checks and converts its arguments
// (dtypes, shapes, names) and wraps what these functions return in result objects.
//
// Rules kept here:
//  * The engine runs without the GIL. Python is called back (user policies, progress) only from the
//    thread that started the run, with the GIL taken for the call.
//  * Errors: InputError -> crawleval.InputError (a ValueError) with the CLI's message; a run
//  stopped
//    by Ctrl-C -> KeyboardInterrupt; an exception raised by a user's callback propagates unchanged.
//  * Results have the fields of the CLI's JSON (output.hpp), built by the same functions so the two
//    cannot drift apart, handed to Python as objects (no JSON text parsed back), with the arrays
//    (per replication, per epoch) as numpy arrays.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "crawleval/analysis/bound.hpp"
#include "crawleval/analysis/optimal.hpp"
#include "crawleval/base/enum_names.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/base/monitor.hpp"
#include "crawleval/base/version.hpp"
#include "crawleval/engine/cuda_backend.hpp"
#include "crawleval/evaluate/driver.hpp"
#include "crawleval/evaluate/fresh_evaluate.hpp"
#include "crawleval/evaluate/policy_registry.hpp"
#include "crawleval/io/column_names.hpp"
#include "crawleval/io/columnar.hpp"
#include "crawleval/io/fresh_io.hpp"
#include "crawleval/io/io.hpp"
#include "crawleval/io/learn_output.hpp"
#include "crawleval/io/output.hpp"
#include "crawleval/io/syncbandit_io.hpp"
#include "crawleval/learn/syncbandit.hpp"
#include "crawleval/model/change_rate.hpp"
#include "crawleval/model/model.hpp"
#include "crawleval/model/resources.hpp"

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

/// A new numpy array that owns `v` and cannot be written from Python: its base refuses writable
/// buffers, so `a.flags.writeable = True` raises. `*data` (when given) is where C++ may still
/// write it.
template <class T>
nb::ndarray<nb::numpy, const T, nb::ndim<1>> to_numpy_read_only(std::vector<T>&& v,
                                                                T** data = nullptr) {
  auto* owned = new std::vector<T>(std::move(v));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  if (data) *data = owned->data();
  return nb::ndarray<nb::numpy, const T, nb::ndim<1>>(owned->data(), {owned->size()}, owner);
}

/// A read-only numpy view of a column of `self` (which it keeps alive).
template <class T>
nb::ndarray<nb::numpy, const T, nb::ndim<1>> view(const std::vector<T>& v, nb::handle self) {
  return nb::ndarray<nb::numpy, const T, nb::ndim<1>>(v.data(), {v.size()}, self);
}

/// A JSON value as Python objects (dict, list, float, int, str, bool, None): the CLI's JSON fields
/// without a text round trip.
nb::object to_python(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
      return nb::none();
    case nlohmann::json::value_t::boolean:
      return nb::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return nb::int_(j.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return nb::int_(j.get<uint64_t>());
    case nlohmann::json::value_t::number_float:
      return nb::float_(j.get<double>());
    case nlohmann::json::value_t::string:
      return nb::str(j.get_ref<const std::string&>().c_str());
    case nlohmann::json::value_t::array: {
      nb::list l;
      for (const auto& e : j) l.append(to_python(e));
      return l;
    }
    case nlohmann::json::value_t::object: {
      nb::dict d;
      for (auto it = j.begin(); it != j.end(); ++it) d[it.key().c_str()] = to_python(it.value());
      return d;
    }
    case nlohmann::json::value_t::binary:
      break;
  }
  throw ce::Error("internal: a binary JSON value");
}

/// A new 2-D numpy array (rows x cols, row-major) that owns `v`.
nb::ndarray<nb::numpy, double, nb::ndim<2>> to_numpy_2d(std::vector<double>&& v, std::size_t rows,
                                                        std::size_t cols) {
  auto* owned = new std::vector<double>(std::move(v));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  return nb::ndarray<nb::numpy, double, nb::ndim<2>>(owned->data(), {rows, cols}, owner);
}

constexpr const char* kRecordOutOfMemory =
    "record=True ran out of memory keeping every epoch of every replication: record fewer "
    "replications or epochs, or run with record=False";

/// record=True: every epoch's reward and crawl cost (burn-in included) of the measured call's
/// replications, from the engines' epoch observer (rollout.hpp). The reward is the sum of the
/// crawled states as the observer sees it: the engine's own epoch sum within rounding (the engine
/// sums in chunks).
///
/// The observer runs inside the engines' OpenMP regions, where an exception would end the
/// process: a failed allocation is kept (`failure`), the run is stopped through the monitor
/// (PythonMonitor::fail) and the exception raised after it (MemoryError).
struct Recorder {
  std::vector<std::vector<double>> reward, cost;  ///< per replication, per epoch
  const ce::Population* pop = nullptr;
  std::function<void(std::exception_ptr, const char*)> fail;
  bool failed = false;

  void reset() {
    std::vector<std::vector<double>>().swap(reward);
    std::vector<std::vector<double>>().swap(cost);
  }
  ce::EpochObserver observer() {
    return [this](const ce::EpochView& v) noexcept {
      if (failed) return;  // until the run stops
      try {
        record(v);
      } catch (...) {
        failed = true;
        reset();
        if (fail) fail(std::current_exception(), kRecordOutOfMemory);
      }
    };
  }
  void record(const ce::EpochView& v) {
    double spent = 0.0;
    if (pop->unit_costs())
      spent = double(v.selected->size());
    else
      for (uint32_t i : *v.selected) spent += pop->cost[i];
    if (reward.size() <= v.replication)
      reward.resize(v.replication + 1), cost.resize(v.replication + 1);
    auto& rr = reward[v.replication];
    auto& cr = cost[v.replication];
    if (rr.size() <= v.epoch) rr.resize(v.epoch + 1, NAN), cr.resize(v.epoch + 1, NAN);
    rr[v.epoch] = v.reward;
    cr[v.epoch] = spent;
  }
  nb::dict arrays(uint64_t burn_in) {
    std::size_t cols = 0;
    for (const auto& row : reward) cols = std::max(cols, row.size());
    const std::size_t rows = reward.size();
    std::vector<double> rw(rows * cols, NAN), cw(rows * cols, NAN);
    for (std::size_t r = 0; r < rows; ++r) {
      std::copy(reward[r].begin(), reward[r].end(), rw.begin() + r * cols);
      std::copy(cost[r].begin(), cost[r].end(), cw.begin() + r * cols);
    }
    reset();
    nb::dict d;
    d["burn_in"] = burn_in;
    d["reward"] = to_numpy_2d(std::move(rw), rows, cols);
    d["cost"] = to_numpy_2d(std::move(cw), rows, cols);
    return d;
  }
};

template <class T>
const T* data_or_null(const std::optional<In<T>>& a, std::size_t n, const char* name) {
  if (!a) return nullptr;
  if (a->shape(0) != n)
    throw ce::InputError(std::string("column '") + name + "' has " + std::to_string(a->shape(0)) +
                         " rows, 'lambda' has " + std::to_string(n));
  return a->data();
}

using ce::enum_parse_or_throw;

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
    if (failed_) return false;
    nb::gil_scoped_acquire gil;
    return poll(&label, done, total);
  }
  bool keep_going() override {
    if (failed_) return false;
    nb::gil_scoped_acquire gil;
    return poll();
  }
  /// From any thread, without the GIL: stops the run at its next poll; raise_pending raises `e`
  /// (a std::bad_alloc as MemoryError saying `what`).
  void fail(std::exception_ptr e, const char* what) noexcept {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    if (!failure_) failure_ = std::move(e), failure_what_ = what;
    failed_ = true;
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
    if (failed_) {
      std::exception_ptr e;
      const char* what = nullptr;
      {
        std::lock_guard<std::mutex> lock(failure_mutex_);
        std::swap(e, failure_), std::swap(what, failure_what_);
      }
      failed_ = false;
      try {
        if (e) std::rethrow_exception(e);
      } catch (const std::bad_alloc&) {
        PyErr_SetString(PyExc_MemoryError, what ? what : "out of memory");
        throw nb::python_error();
      }
    }
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
  std::atomic<bool> failed_{false};
  std::mutex failure_mutex_;
  std::exception_ptr failure_;
  const char* failure_what_ = nullptr;
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
  } catch (...) {
    monitor.raise_pending();  // a failure kept by the monitor comes first
    throw;
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
  c.model = enum_parse_or_throw<ce::Model>(model, "model");
  c.observe = enum_parse_or_throw<ce::Observe>(observe, "observe");
  ce::set_utility(c, utility, "utility");
  if (start)
    c.start = enum_parse_or_throw<ce::Start>(*start, "start");
  else
    c.start = pop.x0.empty() ? ce::Start::empty : ce::Start::given;
  return c;
}

/// One entry of evaluate()'s policy list: a name of the registry (policy_registry.hpp), or
/// (name, score function).
struct PolicySpec {
  const ce::RegisteredPolicy* registered = nullptr;
  std::string name;
  nb::object fn;
};

std::vector<PolicySpec> parse_policies(const nb::list& policies) {
  std::vector<PolicySpec> out;
  for (nb::handle h : policies) {
    PolicySpec s;
    if (nb::isinstance<nb::str>(h)) {
      s.name = nb::cast<std::string>(h);
      s.registered = &ce::registered_policy(s.name, "policy");
    } else {
      auto t = nb::cast<std::pair<std::string, nb::object>>(h);
      s.name = t.first;
      s.fn = t.second;
    }
    // (The name would be cut there in every message and in the JSON's text.)
    if (s.name.find('\0') != std::string::npos)
      throw ce::InputError("policy '" + ce::printable(s.name) +
                           "': a policy's name cannot contain a NUL character");
    out.push_back(std::move(s));
  }
  if (out.empty()) throw ce::InputError("policies needs at least one policy");
  return out;
}

/// A user's score function and what it is handed: the observed state and the age live in numpy
/// arrays that Python owns (function_rollout writes them in place: ScoreBuffers), read-only for
/// Python (to_numpy_read_only: no flag makes them writable, so a policy cannot change the
/// engine's state), so a policy that keeps them keeps valid memory; the float64 scores it returns
/// are read in place (ScoreRequest::borrowed) and kept alive until the next call.
struct PythonPolicy {
  nb::object fn, state, age, collected, last;
  /// A device policy's last scores as imported (the DLPack import's owner: a producer's deleter
  /// may free the memory, so it lives until the next call, with `last`).
  nb::ndarray<nb::ro> last_scores;
  ce::ScoreBuffers buffers;

  PythonPolicy(nb::object f, std::size_t n) : fn(std::move(f)) {
    state = nb::cast(to_numpy_read_only(std::vector<double>(n), &buffers.state));
    age = nb::cast(to_numpy_read_only(std::vector<double>(n), &buffers.age));
    collected = nb::cast(to_numpy_read_only(std::vector<double>(n), &buffers.collected));
  }
};

ce::ScoreFn score_function(PythonPolicy& policy, PythonMonitor& monitor) {
  return [&policy, &monitor](const ce::ScoreRequest& q) {
    nb::gil_scoped_acquire gil;
    if (!monitor.poll()) throw ce::Interrupted();
    nb::object result =
        policy.fn(policy.state, policy.age, policy.collected, q.replication, q.epoch);
    // The Python layer returns float64 and contiguous (converting only what is not).
    const auto scores = nb::cast<In<double>>(result, false);
    if (scores.shape(0) != q.n)
      throw ce::InputError("a score function returned " + std::to_string(scores.shape(0)) +
                           " scores for " + std::to_string(q.n) + " sources");
    if (q.borrowed) {
      *q.borrowed = scores.data();
      policy.last = std::move(result);
    } else {
      std::memcpy(q.scores, scores.data(), q.n * sizeof(double));
    }
  };
}

// ---- DLPack exchange with a score function: device arrays in, device scores out -------------
//
// Shared by the CUDA engine's score functions (kDLCUDA) and _dlpack_exchange, through which the
// tests run the same two functions on CPU arrays (kDLCPU).

constexpr int kDLCPU = nb::device::cpu::value, kDLCUDA = nb::device::cuda::value;

std::string device_name(int device_type, int device_id) {
  return device_type == kDLCPU    ? std::string("the CPU")
         : device_type == kDLCUDA ? "CUDA device " + std::to_string(device_id)
                                  : "DLPack device type " + std::to_string(device_type);
}

/// n doubles at p on (device_type, device_id) as an array object of the DLPack protocol
/// (__dlpack__, __dlpack_device__: nanobind's array-API ndarray), writable, owning nothing (its
/// owner is None, so that nanobind exports it without a copy): valid while the memory is, during
/// the call it is handed to.
template <class T>
nb::object dlpack_view(T* p, std::size_t n, int device_type, int device_id) {
  const std::size_t shape[1] = {n};
  return nb::cast(nb::ndarray<nb::array_api, T, nb::ndim<1>>(
      p, 1, shape, nb::none(), nullptr, nb::dtype<T>(), device_type, device_id));
}

/// A score function's result imported as n float64 scores on (device_type, device_id), read in
/// place: any object the DLPack protocol exports (or, on the CPU, the buffer protocol), contiguous,
/// read-only ones (JAX's) too. The scores stay valid while the returned ndarray lives (the import
/// owns them: a producer may free them in its deleter). Anything else is an InputError naming the
/// policy, what it returned and what was expected.
nb::ndarray<nb::ro> dlpack_scores(const std::string& name, const nb::handle& result, std::size_t n,
                                  int device_type, int device_id) {
  const std::string want = "a contiguous float64 array of shape (" + std::to_string(n) + ",) on " +
                           device_name(device_type, device_id);
  nb::ndarray<nb::ro> any;
  if (!nb::try_cast(result, any, false))
    throw ce::InputError("policy '" + name + "' returned a " +
                         nb::cast<std::string>(nb::type_name(result.type())) + "; expected " +
                         want + " (any array of the DLPack protocol)");
  std::string got;
  if (any.device_type() != device_type || (device_type != kDLCPU && any.device_id() != device_id))
    got = "an array on " + device_name(any.device_type(), any.device_id());
  else if (any.ndim() != 1 || any.shape(0) != n)
    got = "an array of " + std::to_string(any.ndim()) + " dimension(s) and " +
          std::to_string(any.size()) + " entries";
  else if (any.dtype() != nb::dtype<double>())
    got = "an array whose dtype is not float64";
  else if (n > 1 && any.stride(0) != 1)
    got = "a strided (non-contiguous) array";
  if (!got.empty())
    throw ce::InputError("policy '" + name + "' returned " + got + "; expected " + want);
  return any;
}

/// A user's policy on the GPU (cuda::function_rollout): the engine's arrays handed over as DLPack
/// views of device memory (the Python layer turns them into the array module's arrays), the
/// scores read in place from the device array the function returns, kept alive until its next
/// call.
ce::cuda::DeviceScoreFn device_score_function(PythonPolicy& policy, PythonMonitor& monitor,
                                              const std::string& name) {
  return [&policy, &monitor, name](const ce::cuda::DeviceScoreRequest& q) {
    nb::gil_scoped_acquire gil;
    if (!monitor.poll()) throw ce::Interrupted();
    nb::object state = dlpack_view(const_cast<double*>(q.state), q.n, kDLCUDA, q.device);
    nb::object age = dlpack_view(const_cast<double*>(q.age), q.n, kDLCUDA, q.device);
    nb::object collected = dlpack_view(const_cast<double*>(q.collected), q.n, kDLCUDA, q.device);
    nb::object result = policy.fn(state, age, collected, q.replication, q.epoch);
    policy.last_scores = dlpack_scores(name, result, q.n, kDLCUDA, q.device);
    *q.borrowed = static_cast<const double*>(policy.last_scores.data());
    policy.last = std::move(result);
  };
}

/// The test hook of the exchange on CPU arrays: `values` handed to fn as a DLPack view on
/// (device_type, 0), its result read as dlpack_scores reads a device policy's, returned as a copy.
nb::ndarray<nb::numpy, double, nb::ndim<1>> dlpack_exchange(nb::object fn, In<double> values,
                                                            int device_type) {
  std::vector<double> in(values.data(), values.data() + values.shape(0));
  nb::object result = fn(dlpack_view(in.data(), in.size(), device_type, 0));
  const nb::ndarray<nb::ro> imported = dlpack_scores("test", result, in.size(), device_type, 0);
  const double* scores = static_cast<const double*>(imported.data());
  return to_numpy(std::vector<double>(scores, scores + in.size()));
}

/// A freshness score function's last result on the GPU and its import, kept until its next call
/// (owned outside the engine, which runs without the GIL).
struct DeviceFreshResult {
  nb::object result;
  nb::ndarray<nb::ro> scores;
};

/// A freshness score function on the GPU (fresh.py's device adapter): the ages and changes as
/// DLPack views of the engine's device copies, the scores read in place.
ce::cuda::DeviceFreshScoreFn device_fresh_function(nb::object* fn, DeviceFreshResult* held,
                                                   PythonMonitor& monitor,
                                                   const std::string& name) {
  return [fn, held, &monitor, name](const ce::cuda::DeviceFreshScoreRequest& q) {
    nb::gil_scoped_acquire gil;
    if (!monitor.poll()) throw ce::Interrupted();
    nb::object age = dlpack_view(const_cast<uint32_t*>(q.age), q.n, kDLCUDA, q.device);
    nb::object changes = dlpack_view(const_cast<uint32_t*>(q.changes), q.n, kDLCUDA, q.device);
    nb::object result = (*fn)(age, changes, q.replication, q.epoch);
    held->scores = dlpack_scores(name, result, q.n, kDLCUDA, q.device);
    *q.borrowed = static_cast<const double*>(held->scores.data());
    held->result = std::move(result);
  };
}

/// A user's policy on the function engine, its arrays those Python holds (PythonPolicy).
ce::PolicyResult evaluate_python_policy(const ce::Problem& problem, const std::string& name,
                                        PythonPolicy& policy, PythonMonitor& monitor,
                                        const ce::EvaluateOptions& eval, Recorder* rec) {
  const ce::EpochObserver observer = rec ? rec->observer() : ce::EpochObserver();
  return ce::evaluate_function(problem, name, score_function(policy, monitor), eval, nullptr,
                               rec ? &observer : nullptr, &policy.buffers);
}

nb::dict evaluate_objects(const ce::Population& pop, double budget, const nb::list& policy_list,
                          const std::string& model, const std::string& observe,
                          const std::optional<std::string>& start, const std::string& utility,
                          uint64_t epochs, uint64_t burn_in, bool burn_in_auto,
                          uint64_t max_burn_in, uint32_t replications, double target_ci,
                          uint32_t max_replications, const std::string& backend, uint64_t seed,
                          double epoch_length, int threads, bool with_bound, nb::object progress,
                          bool record, std::size_t index_grid) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<PolicySpec> specs = parse_policies(policy_list);
  const ce::Backend requested = enum_parse_or_throw<ce::Backend>(backend, "backend");
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
  std::vector<Recorder> recorders(record ? specs.size() : 0);
  for (Recorder& r : recorders) r.pop = &pop;
  if (record) {
    // Each policy's reward and cost per epoch of every replication first run, held twice at the
    // end (the rows, then the arrays): at least this much, more with an automatic burn-in.
    const double bytes = double(specs.size()) * double(replications) *
                         (double(epochs) + (burn_in_auto ? 0.0 : double(burn_in))) * 2 * 8 * 2;
    ce::require_memory(bytes, "record=True (every epoch of " + std::to_string(replications) +
                                  " replications of " + std::to_string(specs.size()) +
                                  (specs.size() == 1 ? " policy)" : " policies)"));
  }
  std::vector<std::unique_ptr<PythonPolicy>> user(specs.size());
  for (std::size_t k = 0; k < specs.size(); ++k)
    if (!specs[k].registered) user[k] = std::make_unique<PythonPolicy>(specs[k].fn, pop.size());
  std::vector<ce::PolicyResult> results;
  // The compact columns where every policy is built in and reads no other (problem.hpp): 72
  // bytes per source less; the population is the caller's and keeps its columns.
  std::vector<ce::Policy> builtins;
  std::vector<const ce::RegisteredPolicy*> registered;
  bool functions = false;
  for (const PolicySpec& s : specs) {
    if (s.registered) registered.push_back(s.registered);
    if (s.registered && s.registered->builtin)
      builtins.push_back(*s.registered->builtin);
    else
      functions = true;
  }
  const bool compact = resolved == ce::Backend::cpu && pop.size() > ce::kCpuSmallN &&
                       ce::compact_columns_apply(pop, cfg, builtins, functions);
  nlohmann::json j = monitored(progress, [&](PythonMonitor& monitor) {
    for (Recorder& r : recorders)
      r.fail = [&monitor](std::exception_ptr e, const char* what) {
        monitor.fail(std::move(e), what);
      };
    ce::Problem problem =
        ce::make_problem(pop, cfg, compact ? ce::ColumnSet::engine : ce::ColumnSet::all);
    ce::PolicyRunOptions run;
    run.backend = resolved;
    run.eval = eval;
    run.index_grid = index_grid;
    ce::PolicyNotes notes;
    ce::prepare_policies(problem, registered, run);
    for (std::size_t k = 0; k < specs.size(); ++k) {
      const PolicySpec& s = specs[k];
      Recorder* rec = record ? &recorders[k] : nullptr;
      const ce::EpochObserver observer = rec ? rec->observer() : ce::EpochObserver();
      run.observer = rec ? &observer : nullptr;
      if (s.registered)
        results.push_back(ce::evaluate_policy(problem, *s.registered, run, &notes));
      else if (requested == ce::Backend::cuda)  // the Python layer handed a device adapter
        results.push_back(ce::evaluate_device_function(
            problem, s.name, device_score_function(*user[k], monitor, s.name), eval, run.observer));
      else
        results.push_back(evaluate_python_policy(problem, s.name, *user[k], monitor, eval, rec));
    }
    ce::BoundResult bound;
    if (with_bound) bound = ce::compute_bound(problem, resolved);
    const double total =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    nlohmann::json out =
        ce::results_json(problem, results, resolved, with_bound ? &bound : nullptr, total, eval);
    out["processes"] = 1;
    ce::add_policy_notes(out, notes);
    return out;
  });
  // The CLI's fields as objects; every replication's reward as an array (the JSON omits more than
  // 100000), and record=True's per-epoch arrays.
  nb::dict d = nb::cast<nb::dict>(to_python(j));
  nb::list policies = nb::cast<nb::list>(d["policies"]);
  for (std::size_t k = 0; k < results.size(); ++k) {
    nb::dict p = nb::cast<nb::dict>(policies[k]);
    std::vector<double> reps = results[k].replication_reward;
    p["replication_rewards"] = to_numpy(std::move(reps));
    if (record) {
      try {
        p["record"] = recorders[k].arrays(results[k].warm_up.burn_in);
      } catch (const std::bad_alloc&) {
        for (Recorder& r : recorders) r.reset();
        PyErr_SetString(PyExc_MemoryError, kRecordOutOfMemory);
        throw nb::python_error();
      }
    }
  }
  return d;
}

nb::object bound_objects(const ce::Population& pop, double budget, const std::string& model,
                         const std::string& observe, const std::optional<std::string>& start,
                         const std::string& utility, double epoch_length,
                         const std::string& backend) {
  const ce::Backend requested = enum_parse_or_throw<ce::Backend>(backend, "backend");
  const ce::RunConfig cfg =
      make_config(pop, budget, model, observe, start, utility, 1, 0, 1, 1, epoch_length, 0);
  const ce::Backend resolved = ce::resolve_backend(requested);
  return to_python(monitored(nb::none(), [&](PythonMonitor&) {
    const ce::Problem problem = ce::make_problem(pop, cfg);
    const ce::BoundResult r = ce::compute_bound(problem, resolved);
    nlohmann::json j = ce::bound_json(r);
    j["tool"] = "crawleval", j["command"] = "bound", j["backend"] = ce::to_string(resolved);
    j["sources"] = problem.global_size(), j["budget"] = budget;
    j["processes"] = 1;
    ce::add_context(j, ce::to_string(resolved),
                    resolved == ce::Backend::cuda ? ce::cuda::device_description() : "");
    return j;
  }));
}

nb::object optimal_objects(const ce::Population& pop, double budget, double epoch_length,
                           uint64_t max_states, double tolerance, int threads, double max_work) {
  ce::OptimalOptions o;
  o.max_work = max_work;
  o.max_states = max_states;
  o.tolerance = tolerance;
  o.threads = threads;
  return to_python(monitored(nb::none(), [&](PythonMonitor& monitor) {
    // Ctrl-C between value iterations: the solver has no stop of its own, so a stop throws from
    // its callback (on the calling thread, outside its parallel loops).
    o.on_iteration = [&](uint64_t, double, double) {
      nb::gil_scoped_acquire gil;
      if (!monitor.poll()) throw ce::Interrupted();
    };
    const ce::OptimalResult r = ce::exact_optimum(pop, epoch_length, budget, o);
    return ce::optimal_json(pop, epoch_length, budget, r);
  }));
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
  return enum_parse_or_throw<sb::Family>(s, "family");
}

/// A learner's settings as `crawleval learn ALGORITHM` makes them: the public code's tuned eta and
/// cycle for the algorithm and the instance's family unless given.
sb::LearnConfig learn_config(const sb::Instance& inst, const std::string& algorithm, double epsilon,
                             std::optional<double> eta, std::optional<double> cycle,
                             uint32_t rounds, uint64_t seed, const std::string& gradient,
                             const std::string& local_budget, const std::string& reschedule) {
  const sb::Algorithm alg = enum_parse_or_throw<sb::Algorithm>(algorithm, "algorithm");
  sb::LearnConfig cfg = sb::tuned_learn_config(alg, inst.family);
  cfg.algorithm = alg;
  cfg.epsilon = epsilon, cfg.rounds = rounds;
  if (eta) cfg.eta = *eta;
  if (cycle) cfg.cycle = *cycle;
  cfg.seed = seed;
  // The pseudo-code's rules where crawleval departs from it (LearnConfig).
  cfg.gradient = enum_parse_or_throw<sb::Gradient>(gradient, "gradient");
  cfg.local_budget = enum_parse_or_throw<sb::Rule>(local_budget, "local_budget");
  cfg.reschedule = enum_parse_or_throw<sb::Rule>(reschedule, "reschedule");
  sb::validate(cfg);
  sb::validate(inst);
  return cfg;
}

// ---- the freshness model (fresh_engine.hpp, fresh_evaluate.hpp)
// ----------------------------------

template <class T>
void fill_column(std::vector<T>& out, const std::optional<In<T>>& a, std::size_t n,
                 const char* name) {
  if (!a) return;
  if (a->shape(0) != n)
    throw ce::InputError(std::string("column '") + name + "' has " + std::to_string(a->shape(0)) +
                         " rows, 'rate' has " + std::to_string(n));
  out.assign(a->data(), a->data() + n);
}

ce::Objective parse_objective_or_throw(const std::string& s) {
  return enum_parse_or_throw<ce::Objective>(s, "objective");
}

ce::FreshPolicy parse_fresh_policy_or_throw(const std::string& s) {
  return enum_parse_or_throw<ce::FreshPolicy>(s, "policy");
}

/// The settings of `crawleval fresh run|bound` (FreshArgs in host/cli/cli_fresh.cpp): the budget
/// given, or as a fraction of every source's cost per epoch.
ce::FreshConfig fresh_config(const ce::FreshPopulation& pop, std::optional<double> budget,
                             std::optional<double> budget_fraction, double epoch_length,
                             uint32_t host_cap, const std::string& objective, uint64_t seed) {
  ce::FreshConfig c;
  c.objective = parse_objective_or_throw(objective);
  c.epoch_length = epoch_length;
  c.host_cap = host_cap;
  c.seed = seed;
  if (budget && budget_fraction) throw ce::InputError("give budget= or budget_fraction=, not both");
  if (budget) {
    CE_EXPECTS(std::isfinite(*budget) && *budget > 0, "budget= must be a finite number > 0");
    c.budget = *budget;
  } else if (budget_fraction) {
    CE_EXPECTS(*budget_fraction > 0 && *budget_fraction <= 1,
               "budget_fraction= must lie in (0, 1]");
    double total = 0.0;
    for (double x : pop.cost) total += x;
    c.budget = *budget_fraction * total;
  } else {
    throw ce::InputError("give the budget: budget=M or budget_fraction=F");
  }
  CE_EXPECTS(std::isfinite(epoch_length) && epoch_length > 0,
             "epoch_length= must be a finite number > 0");
  return c;
}

/// The LSPE(0) learner and the relaxed problem's policies: the fields of `crawleval learn lspe
/// --json` and `crawleval relaxed --json` (learn_output.hpp), with their traces and curves as
/// numpy arrays.
void bind_learners(nb::module_& m) {
  m.def(
      "lspe_learn",
      [](const ce::Population& pop, uint32_t steps, double kappa, double gamma, double start,
         const std::string& operating, uint32_t top, const std::string& critic,
         uint32_t replications, uint64_t seed, bool trace) {
        ce::LspeConfig cfg;
        cfg.steps = steps, cfg.kappa = kappa, cfg.gamma = gamma, cfg.start = start;
        cfg.top = top, cfg.replications = replications, cfg.seed = seed, cfg.trace = trace;
        if (operating == "top")
          cfg.operating = ce::LspeOperating::top;
        else if (operating != "randomised")
          throw ce::InputError("operating '" + operating + "' is not one of: randomised, top");
        if (critic == "paper")
          cfg.critic = ce::LspeCritic::paper;
        else if (critic != "crawled")
          throw ce::InputError("critic '" + critic + "' is not one of: crawled, paper");
        ce::LspeExperiment ex;
        const nlohmann::json j =
            monitored(nb::none(), [&](PythonMonitor&) { return ce::lspe_report(pop, cfg, &ex); });
        nb::dict d = nb::cast<nb::dict>(to_python(j));
        if (trace) {
          ce::LspeRun& r0 = ex.runs[0];
          std::vector<double> crawled(r0.trace_crawled.begin(), r0.trace_crawled.end());
          nb::dict t;
          t["state"] = to_numpy(std::move(r0.trace_state));
          t["learned"] = to_numpy(std::move(r0.trace_learned));
          t["exact"] = to_numpy(std::move(r0.trace_exact));
          t["crawled"] = to_numpy(std::move(crawled));
          d["trace"] = t;
        }
        return d;
      },
      "population"_a, "steps"_a, "kappa"_a, "gamma"_a, "start"_a, "operating"_a, "top"_a,
      "critic"_a, "replications"_a, "seed"_a, "trace"_a);
  m.def(
      "relaxed_policy",
      [](const ce::Population& pop, double budget, uint64_t epochs, uint64_t burn_in,
         uint32_t replications, uint64_t seed, bool dual, double step, double lambda0,
         uint64_t every) {
        ce::RunConfig cfg;
        cfg.budget = budget, cfg.epochs = epochs, cfg.burn_in = burn_in;
        cfg.replications = replications, cfg.seed = seed;
        ce::DualDescentConfig dc;
        dc.step = step, dc.lambda0 = lambda0, dc.every = every;
        ce::DualDescentRun dd;
        const nlohmann::json j = monitored(nb::none(), [&](PythonMonitor&) {
          return ce::relaxed_report(pop, cfg, dual ? &dc : nullptr, &dd);
        });
        nb::dict d = nb::cast<nb::dict>(to_python(j));
        if (dual) {
          nb::dict c;
          c["epoch"] = to_numpy(std::move(dd.epoch));
          c["lambda"] = to_numpy(std::move(dd.lambda));
          c["lambda_average"] = to_numpy(std::move(dd.lambda_average));
          c["spend_average"] = to_numpy(std::move(dd.spend_average));
          c["reward_average"] = to_numpy(std::move(dd.reward_average));
          d["curve"] = c;
        }
        return d;
      },
      "population"_a, "budget"_a, "epochs"_a, "burn_in"_a, "replications"_a, "seed"_a, "dual"_a,
      "step"_a, "lambda0"_a, "every"_a);
}

nb::dict rate_estimate_dict(const ce::RateEstimate& e) {
  nb::dict d;
  d["rate"] = e.rate, d["rate_lo"] = e.lo, d["rate_hi"] = e.hi;
  d["observations"] = e.observations, d["changes"] = e.changes;
  d["observed_time"] = e.observed_time;
  return d;
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "crawleval's engine (use the crawleval package, not this module)";
  bind_learners(m);
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
             const std::string& origin, const std::optional<In<uint8_t>>& observe) {
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
            const uint8_t* o = data_or_null(observe, n, "observe");
            nb::gil_scoped_release release;
            return ce::population_from_columns(n, lambda.data(), x, m_, c, i, s, e, origin, o);
          },
          "lambda_"_a, "xi"_a, "mu"_a, "cost"_a.none(), "id"_a.none(), "x0"_a.none(),
          "expiry"_a.none(), "origin"_a, "observe"_a.none() = nb::none())
      .def_static(
          "synthetic",
          [](uint64_t n, uint64_t seed, const std::string& costs) {
            CE_EXPECTS(n >= 1 && n <= 4294967294ull, "n must lie in [1, 4294967294]");
            const auto law = enum_parse_or_throw<ce::SyntheticCosts>(costs, "costs");
            nb::gil_scoped_release release;
            return ce::synthetic_population(n, seed, law);
          },
          "n"_a, "seed"_a = 1, "costs"_a = "unit")
      .def_static("paper_example", &ce::paper_example)
      .def_static(
          "read",
          [](const std::string& path, bool strict_columns) {
            // Ctrl-C stops a long read (KeyboardInterrupt); the sources are checked as the CLI
            // checks them, whatever the format. The CLI's notes (ignored columns) come back for
            // the package to warn with.
            std::vector<std::string> notes;
            ce::SourcesCsvOptions csv;
            csv.strict_columns = strict_columns;
            csv.note = [&](const std::string& n) { notes.push_back(n); };
            ce::Population pop = monitored(nb::none(), [&](PythonMonitor&) {
              return ce::read_population(path, ce::kPopulationBytesPerSource, csv);
            });
            return std::make_pair(std::move(pop), notes);
          },
          "path"_a, "strict_columns"_a = false)
      .def(
          "write",
          [](const ce::Population& pop, const std::string& path) {
            nb::gil_scoped_release release;
            ce::write_population(pop, path);  // the CLI's rules (a slice only as .cpop)
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
      .def_prop_ro("expiry",
                   [](nb::handle self) -> nb::object {
                     const auto& p = nb::cast<ce::Population&>(self);
                     if (p.expiry.empty()) return nb::none();
                     return nb::cast(view(p.expiry, self));
                   })
      .def_prop_ro("observe",
                   [](nb::handle self) -> nb::object {
                     const auto& p = nb::cast<ce::Population&>(self);
                     if (p.observe.empty()) return nb::none();
                     return nb::cast(view(p.observe, self));
                   })
      .def_prop_ro("first_id", [](const ce::Population& p) { return p.first_id; });

  // The column rule of every reader (column_names.hpp) for a table's column names: `names` as
  // UTF-8 bytes (None: a label that is not a string, unrelated), `shown` as messages quote them.
  // Returns {name: position} of the model's columns present and the note naming the ignored
  // ones ("" when none); InputError as a CSV's header gives it.
  m.def(
      "match_columns",
      [](const std::string& model, const std::vector<std::optional<nb::bytes>>& names,
         const std::vector<std::string>& shown, const std::string& origin) {
        const ce::ColumnSchema& schema =
            model == "fresh" ? ce::fresh_columns() : ce::sources_columns();
        CE_EXPECTS(names.size() == shown.size(), "internal: match_columns");
        std::vector<std::string> text;
        std::vector<std::string_view> header;
        std::vector<std::size_t> at;  // header entry -> names entry
        text.reserve(names.size());
        for (std::size_t k = 0; k < names.size(); ++k)
          if (names[k]) {
            text.emplace_back(names[k]->c_str(), names[k]->size());
            at.push_back(k);
          }
        for (const std::string& s : text) header.push_back(s);
        std::string help = "(the columns must be named ";
        for (int c : schema.required) help += std::string(schema.names[std::size_t(c)]) + ", ";
        help.replace(help.size() - 2, 2, " and optionally ");
        bool first = true;
        for (std::size_t c = 0; c < schema.names.size(); ++c)
          if (std::find(schema.required.begin(), schema.required.end(), int(c)) ==
              schema.required.end())
            help += std::string(first ? "" : ", ") + schema.names[c], first = false;
        help += shown.empty() ? ", in any case; it has no columns" : ", in any case; it has: ";
        for (std::size_t k = 0; k < shown.size() && k < 8; ++k)
          help += (k ? ", " : "") +
                  (names[k] ? ce::printable(std::string_view(names[k]->c_str(), names[k]->size()))
                            : ce::printable(shown[k]));
        if (shown.size() > 8) help += " and " + std::to_string(shown.size() - 8) + " more";
        help += ")";
        std::vector<std::string> named;
        std::vector<int> position =
            ce::match_columns(header, schema, ce::printable(origin, 256), false, &named, &help);
        for (int& p : position)
          if (p >= 0) p = int(at[std::size_t(p)]);
        // The ignored names in column order: the unrelated strings and the other labels.
        std::vector<std::string> ignored;
        std::size_t next = 0;
        for (std::size_t k = 0; k < names.size(); ++k) {
          if (!names[k]) {
            ignored.push_back(shown[k]);
            continue;
          }
          if (std::find(position.begin(), position.end(), int(k)) != position.end()) continue;
          ignored.push_back(named[next++]);
        }
        nb::dict found;
        for (std::size_t c = 0; c < schema.names.size(); ++c)
          if (position[c] >= 0) found[schema.names[c]] = position[c];
        return std::make_pair(found, ce::ignored_columns_note(origin, ignored, schema, ""));
      },
      "model"_a, "names"_a, "shown"_a, "origin"_a);

  m.def("_dlpack_exchange", &dlpack_exchange, "fn"_a, "values"_a, "device_type"_a);
  m.def("evaluate", &evaluate_objects, "population"_a, "budget"_a, "policies"_a, "model"_a,
        "observe"_a, "start"_a.none(), "utility"_a, "epochs"_a, "burn_in"_a, "burn_in_auto"_a,
        "max_burn_in"_a, "replications"_a, "target_ci"_a, "max_replications"_a, "backend"_a,
        "seed"_a, "epoch_length"_a, "threads"_a, "bound"_a, "progress"_a.none(), "record"_a,
        "index_grid"_a);
  // The policies evaluate() takes by name (policy_registry.hpp): (name, built in, description).
  m.def("policies", [] {
    std::vector<std::tuple<std::string, bool, std::string>> out;
    for (const ce::RegisteredPolicy& p : ce::policy_registry())
      out.emplace_back(p.name, !p.score_function(), p.description);
    return out;
  });
  // The freshness schedulers' names (EnumNames<FreshPolicy>, as `crawleval fresh run --policy`).
  m.def("fresh_policies", [] { return ce::enum_names<ce::FreshPolicy>(); });
  // The index policy's scores (freshness.hpp: fresh_score's index branch), bit for bit the
  // engines', for a score function that computes them (fresh.index_scores).
  m.def(
      "fresh_index_scores",
      [](In<double> rate, In<double> importance, In<double> cost, In<uint8_t> complete,
         In<uint32_t> age, In<uint32_t> changes, const std::string& objective,
         double epoch_length) {
        const std::size_t n = rate.shape(0);
        for (std::size_t k : {importance.shape(0), cost.shape(0), complete.shape(0), age.shape(0),
                              changes.shape(0)})
          if (k != n)
            throw ce::InputError("fresh.index_scores: the arrays must have one entry per source (" +
                                 std::to_string(n) + "), got " + std::to_string(k));
        const ce::Objective o = enum_parse_or_throw<ce::Objective>(objective, "objective");
        std::vector<double> out(n);
        for (std::size_t i = 0; i < n; ++i) {
          const ce::FreshParams p =
              ce::derive_fresh_params(rate(i), importance(i), cost(i), epoch_length);
          out[i] = complete(i) ? ce::fresh_index_co(o, changes(i), p)
                               : ce::fresh_index_io(o, double(age(i)), p);
        }
        return to_numpy(std::move(out));
      },
      "rate"_a, "importance"_a, "cost"_a, "complete"_a, "age"_a, "changes"_a, "objective"_a,
      "epoch_length"_a);
  m.def("bound", &bound_objects, "population"_a, "budget"_a, "model"_a, "observe"_a,
        "start"_a.none(), "utility"_a, "epoch_length"_a, "backend"_a);
  m.def("optimal", &optimal_objects, "population"_a, "budget"_a, "epoch_length"_a, "max_states"_a,
        "tolerance"_a, "threads"_a, "max_work"_a);
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
        // Read-only for good: a user policy reads them (PolicyParams).
        nb::dict d;
        d["alpha"] = to_numpy_read_only(std::move(alpha));
        d["u"] = to_numpy_read_only(std::move(u));
        d["u_star"] = to_numpy_read_only(std::move(u_star));
        d["inv_cost"] = to_numpy_read_only(std::move(inv_cost));
        return d;
      },
      "population"_a, "epoch_length"_a);
  m.def("whittle_index", &whittle_index, "x"_a, "lambda_"_a, "xi"_a, "mu"_a, "cost"_a,
        "epoch_length"_a);
  m.def("resolve_backend", [](const std::string& b) {
    return std::string(
        ce::to_string(ce::resolve_backend(enum_parse_or_throw<ce::Backend>(b, "backend"))));
  });

  // The sync bandit (syncbandit.hpp): instances, Problem 1's optimum and the learners.
  nb::class_<sb::Instance>(m, "SyncInstance",
                           "A sync-bandit instance (MirrorSync paper): per-arm cost parameters "
                           "and Problem 1's budget and rate limits (settable)")
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
      .def_rw("r_max", &sb::Instance::r_max)
      .def_rw("noise", &sb::Instance::noise);
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
         uint32_t run, const std::string& gradient, const std::string& local_budget,
         const std::string& reschedule) {
        const sb::LearnConfig cfg = learn_config(inst, algorithm, epsilon, eta, cycle, rounds, seed,
                                                 gradient, local_budget, reschedule);
        // Ctrl-C between rounds: KeyboardInterrupt.
        std::vector<double> curve =
            monitored(nb::none(), [&](PythonMonitor&) { return sb::learn(inst, cfg, run); });
        return to_numpy(std::move(curve));
      },
      "instance"_a, "algorithm"_a, "epsilon"_a, "eta"_a.none(), "cycle"_a.none(), "rounds"_a,
      "seed"_a, "run"_a, "gradient"_a, "local_budget"_a, "reschedule"_a);
  m.def(
      "sync_experiment",
      [](const sb::Instance& inst, const std::string& algorithm, double epsilon,
         std::optional<double> eta, std::optional<double> cycle, uint32_t rounds, uint64_t seed,
         uint32_t runs, const std::string& gradient, const std::string& local_budget,
         const std::string& reschedule) {
        CE_EXPECTS(runs >= 1, "runs must be at least 1");
        const sb::LearnConfig cfg = learn_config(inst, algorithm, epsilon, eta, cycle, rounds, seed,
                                                 gradient, local_budget, reschedule);
        // `crawleval learn ALGORITHM --instance FILE --runs R`: every run on the same instance.
        const sb::Experiment e = monitored(nb::none(), [&](PythonMonitor&) {
          return sb::run_experiment([&](uint32_t) { return inst; }, cfg, runs);
        });
        nb::dict d;
        auto put = [&](const char* name, const std::vector<double>& v) {
          std::vector<double> copy = v;
          d[name] = to_numpy(std::move(copy));
        };
        put("round", e.rounds), put("mean_j", e.mean), put("ci95_low", e.ci_low),
            put("ci95_high", e.ci_high), put("regret_mean", e.regret_mean),
            put("regret_ci95_low", e.regret_ci_low), put("regret_ci95_high", e.regret_ci_high),
            put("in_policy_regret_mean", e.in_policy_mean),
            put("in_policy_ci95_low", e.in_policy_ci_low),
            put("in_policy_ci95_high", e.in_policy_ci_high);
        d["j_star"] = e.optimum;
        d["j_star_epsilon"] = e.optimum_epsilon;
        d["exploration_gap"] = e.exploration_gap;
        d["runs"] = e.runs;
        d["epsilon"] = cfg.epsilon;
        d["learning_rate"] = cfg.eta;
        d["cycle"] = cfg.cycle;
        d["rounds"] = cfg.rounds;
        d["regret_exponent"] = e.regret_exponent;
        d["gradient"] = sb::to_string(cfg.gradient);
        d["local_budget"] = sb::to_string(cfg.local_budget);
        d["reschedule"] = sb::to_string(cfg.reschedule);
        return d;
      },
      "instance"_a, "algorithm"_a, "epsilon"_a, "eta"_a.none(), "cycle"_a.none(), "rounds"_a,
      "seed"_a, "runs"_a, "gradient"_a, "local_budget"_a, "reschedule"_a);

  // The freshness model: populations, crawl schedulers' rates, the bound, the simulation.
  nb::class_<ce::FreshPopulation>(m, "FreshPopulation")
      .def_static(
          "from_columns",
          [](const In<double>& importance, const In<double>& rate,
             const std::optional<In<uint64_t>>& id, const std::optional<In<uint64_t>>& host,
             const std::optional<In<double>>& cost, const std::optional<In<uint8_t>>& complete,
             const std::optional<In<uint8_t>>& constrained,
             const std::optional<In<double>>& rate_lo, const std::optional<In<double>>& rate_hi,
             const std::optional<In<uint32_t>>& observations,
             const std::optional<In<uint32_t>>& changes, const std::string& origin) {
            const std::size_t n = rate.shape(0);
            if (importance.shape(0) != n)
              throw ce::InputError("column 'importance' has " +
                                   std::to_string(importance.shape(0)) + " rows, 'rate' has " +
                                   std::to_string(n));
            ce::FreshPopulation pop;
            pop.origin = origin;
            pop.resize(n);
            pop.importance.assign(importance.data(), importance.data() + n);
            pop.rate.assign(rate.data(), rate.data() + n);
            for (std::size_t i = 0; i < n; ++i) pop.id[i] = i;
            fill_column(pop.id, id, n, "id");
            pop.host = pop.id;  // as the CSV: a host of its own unless given
            fill_column(pop.host, host, n, "host");
            fill_column(pop.cost, cost, n, "cost");
            fill_column(pop.complete, complete, n, "complete");
            fill_column(pop.constrained, constrained, n, "constrained");
            fill_column(pop.rate_lo, rate_lo, n, "rate_lo");
            fill_column(pop.rate_hi, rate_hi, n, "rate_hi");
            fill_column(pop.observations, observations, n, "observations");
            fill_column(pop.changes, changes, n, "changes");
            nb::gil_scoped_release release;
            ce::validate_fresh(pop);
            ce::sort_fresh_by_id(pop);
            return pop;
          },
          "importance"_a, "rate"_a, "id"_a.none(), "host"_a.none(), "cost"_a.none(),
          "complete"_a.none(), "constrained"_a.none(), "rate_lo"_a.none(), "rate_hi"_a.none(),
          "observations"_a.none(), "changes"_a.none(), "origin"_a)
      .def_static(
          "read",
          [](const std::string& path) {
            nb::gil_scoped_release release;
            return ce::read_fresh_csv(path);
          },
          "path"_a)
      .def_static(
          "synthetic",
          [](uint64_t n, uint64_t seed, bool estimate) {
            CE_EXPECTS(n >= 1 && n <= 4294967294ull, "n= must lie in [1, 4294967294]");
            nb::gil_scoped_release release;
            return ce::synthetic_fresh_population(n, seed, estimate);
          },
          "n"_a, "seed"_a, "estimate"_a)
      .def_static(
          "synthetic_slice",
          [](uint64_t n, uint64_t seed, bool estimate, uint64_t first, uint64_t count) {
            ce::check_fresh_slice(n, seed, first, count);
            nb::gil_scoped_release release;
            return ce::synthetic_fresh_slice(n, seed, estimate, first, count);
          },
          "n"_a, "seed"_a, "estimate"_a, "first"_a, "count"_a)
      .def_static(
          "import_politecrawling",
          [](const std::string& dir, uint64_t max_bad_rows) {
            ce::ImportOptions o;
            o.max_bad_rows = max_bad_rows;
            std::vector<std::string> skipped;
            o.warn = [&](const std::string& msg) { skipped.push_back(msg); };
            ce::ImportReport rep;
            ce::FreshPopulation pop = monitored(nb::none(), [&](PythonMonitor&) {
              return ce::import_politecrawling(dir, o, &rep);
            });
            nb::dict d;
            d["urls_read"] = rep.urls, d["urls_written"] = pop.size(), d["hosts"] = rep.hosts;
            d["constrained_hosts"] = rep.constrained_hosts, d["histories"] = rep.histories;
            d["complete"] = rep.complete, d["bad_rows"] = rep.bad_rows;
            d["dropped_without_importance"] = rep.without_importance;
            d["dropped_without_history"] = rep.without_history;
            d["skipped"] = skipped;
            return std::make_pair(std::move(pop), d);
          },
          "dir"_a, "max_bad_rows"_a)
      .def(
          "write",
          [](const ce::FreshPopulation& pop, const std::string& path) {
            nb::gil_scoped_release release;
            ce::write_fresh_csv(pop, path);
          },
          "path"_a)
      .def("__len__", &ce::FreshPopulation::size)
      .def_prop_ro("origin", [](const ce::FreshPopulation& p) { return p.origin; })
      .def_prop_ro("first", [](const ce::FreshPopulation& p) { return p.first; })
      .def_prop_ro("columns", [](nb::handle self) {
        const auto& p = nb::cast<ce::FreshPopulation&>(self);
        nb::dict d;
        d["id"] = view(p.id, self), d["host"] = view(p.host, self);
        d["importance"] = view(p.importance, self), d["rate"] = view(p.rate, self);
        d["rate_lo"] = view(p.rate_lo, self), d["rate_hi"] = view(p.rate_hi, self);
        d["cost"] = view(p.cost, self), d["complete"] = view(p.complete, self);
        d["constrained"] = view(p.constrained, self);
        d["observations"] = view(p.observations, self), d["changes"] = view(p.changes, self);
        return d;
      });

  m.def(
      "fresh_evaluate",
      [](const ce::FreshPopulation& pop, std::optional<double> budget,
         std::optional<double> budget_fraction, const nb::list& policies, uint64_t epochs,
         uint64_t burn_in, bool burn_in_auto, uint64_t max_burn_in, uint32_t replications,
         double epsilon, const std::string& start, bool learn, uint32_t relearn, double prior,
         int threads, const std::string& backend, uint64_t seed, double epoch_length,
         uint32_t host_cap, const std::string& objective, bool with_bound, double nutch_start,
         double nutch_max, double target_ci, uint32_t max_replications, nb::object progress) {
        const auto t0 = std::chrono::steady_clock::now();
        ce::FreshRunOptions options;
        if (!(target_ci >= 0 && target_ci < 1))  // NaN too
          throw ce::InputError("target_ci must be a relative half-width in [0, 1), e.g. 0.001");
        CE_EXPECTS(max_replications >= 1, "max_replications= must be at least 1");
        options.target_ci = target_ci;
        options.max_replications = max_replications;
        // Names of the built-in policies, and (name, adapter) pairs of score functions
        // (fresh.py's adapter: (age, changes, replication, epoch) -> float64 scores).
        std::vector<nb::object> functions;
        for (nb::handle h : policies) {
          if (nb::isinstance<nb::str>(h)) {
            options.policies.push_back(parse_fresh_policy_or_throw(nb::cast<std::string>(h)));
            continue;
          }
          auto t = nb::cast<std::pair<std::string, nb::object>>(h);
          functions.push_back(t.second);
          ce::FreshUserPolicy u;
          u.name = t.first;
          u.position = options.policies.size() + options.functions.size();
          u.sees_estimates = true;  // (fresh.py hands them over as params.rate under learn)
          options.functions.push_back(std::move(u));
        }
        if (options.policies.empty() && options.functions.empty())
          throw ce::InputError("policies= needs at least one policy");
        ce::FreshConfig cfg =
            fresh_config(pop, budget, budget_fraction, epoch_length, host_cap, objective, seed);
        CE_EXPECTS(epochs >= 1 && epochs <= 4294967294ull, "epochs= must lie in [1, 4294967294]");
        CE_EXPECTS(replications >= 1, "replications= must be at least 1");
        CE_EXPECTS(epsilon >= 0 && epsilon <= 1, "epsilon= must lie in [0, 1]");
        CE_EXPECTS(relearn >= 1, "relearn= must be at least 1");
        CE_EXPECTS(prior > 0 && std::isfinite(prior), "prior= must be a finite number > 0");
        CE_EXPECTS(max_burn_in >= 1 && max_burn_in <= 2147483647ull,
                   "max_burn_in= must lie in [1, 2147483647]");
        const ce::FreshStart fresh_start = enum_parse_or_throw<ce::FreshStart>(start, "start");
        cfg.epochs = epochs, cfg.replications = replications, cfg.epsilon = epsilon;
        cfg.learn = learn, cfg.relearn = relearn, cfg.prior = prior, cfg.threads = threads;
        cfg.nutch_start = nutch_start, cfg.nutch_max = nutch_max;
        cfg.start = fresh_start;
        cfg.burn_in = burn_in_auto ? 0 : burn_in;
        cfg.progress = !progress.is_none();
        ce::validate_fresh_config(pop, cfg);
        // (auto: score functions run on the CPU; a named GPU backend is refused with the reason.)
        options.backend = !functions.empty() && backend == "auto"
                              ? ce::Backend::cpu
                              : ce::resolve_fresh_backend(backend, cfg, options.policies);
        options.automatic_burn_in = burn_in_auto;
        options.warm_up.automatic = burn_in_auto;
        options.warm_up.max_burn_in = max_burn_in;
        options.with_bound = with_bound;
        std::vector<std::vector<double>> rewards, freshness, penalty, cost;
        // (fresh.py hands device adapters for backend "cuda"; their last results live here.)
        std::vector<DeviceFreshResult> held(functions.size());
        nlohmann::json j = monitored(progress, [&](PythonMonitor& monitor) {
          // (The engine copies these functions without the GIL: they hold the Python objects
          // by address, which `functions` keeps alive, never by reference count.)
          for (std::size_t k = 0; k < functions.size(); ++k)
            options.functions[k].make = [f = &functions[k], &monitor]() -> ce::FreshScoreFn {
              return [f, &monitor](const ce::FreshScoreRequest& q) {
                nb::gil_scoped_acquire gil;
                if (!monitor.poll()) throw ce::Interrupted();
                // Copies the policy may keep (the engine's arrays change every epoch).
                nb::object age =
                    nb::cast(to_numpy_read_only(std::vector<uint32_t>(q.age, q.age + q.n)));
                nb::object changes =
                    nb::cast(to_numpy_read_only(std::vector<uint32_t>(q.changes, q.changes + q.n)));
                // The learning variant's estimated rates (fresh.py: params.rate), else None.
                nb::object rate =
                    q.rate ? nb::cast(to_numpy_read_only(std::vector<double>(q.rate, q.rate + q.n)))
                           : nb::none();
                nb::object result = (*f)(age, changes, q.replication, q.epoch, rate);
                const auto scores = nb::cast<In<double>>(result, false);
                if (scores.shape(0) != q.n)
                  throw ce::InputError("a score function returned " +
                                       std::to_string(scores.shape(0)) + " scores for " +
                                       std::to_string(q.n) + " sources");
                std::memcpy(q.scores, scores.data(), q.n * sizeof(double));
              };
            };
          if (options.backend == ce::Backend::cuda)
            for (std::size_t k = 0; k < functions.size(); ++k)
              options.functions[k].make_device = [f = &functions[k], h = &held[k], &monitor,
                                                  name = options.functions[k].name]() {
                return device_fresh_function(f, h, monitor, name);
              };
          const ce::FreshRunResults results = ce::fresh_evaluate(pop, cfg, options);
          for (const ce::FreshPolicyRun& r : results.runs)
            rewards.push_back(r.result.replication_reward),
                freshness.push_back(r.replication_freshness),
                penalty.push_back(r.replication_penalty), cost.push_back(r.replication_cost);
          const double total =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          return ce::fresh_run_json(pop, cfg, options, results, total);
        });
        nb::dict d = nb::cast<nb::dict>(to_python(j));
        nb::list list = nb::cast<nb::list>(d["policies"]);
        for (std::size_t k = 0; k < freshness.size(); ++k) {
          nb::dict p = nb::cast<nb::dict>(list[k]);
          p["replication_rewards"] = to_numpy(std::move(rewards[k]));
          p["replication_freshness"] = to_numpy(std::move(freshness[k]));
          p["replication_penalty"] = to_numpy(std::move(penalty[k]));
          p["replication_cost"] = to_numpy(std::move(cost[k]));
        }
        return d;
      },
      "population"_a, "budget"_a.none(), "budget_fraction"_a.none(), "policies"_a, "epochs"_a,
      "burn_in"_a, "burn_in_auto"_a, "max_burn_in"_a, "replications"_a, "epsilon"_a, "start"_a,
      "learn"_a, "relearn"_a, "prior"_a, "threads"_a, "backend"_a, "seed"_a, "epoch_length"_a,
      "host_cap"_a, "objective"_a, "bound"_a, "nutch_start"_a, "nutch_max"_a, "target_ci"_a,
      "max_replications"_a, "progress"_a.none());

  m.def(
      "fresh_bound",
      [](const ce::FreshPopulation& pop, std::optional<double> budget,
         std::optional<double> budget_fraction, double epoch_length, uint32_t host_cap,
         const std::string& objective) {
        const ce::FreshConfig cfg =
            fresh_config(pop, budget, budget_fraction, epoch_length, host_cap, objective, 1);
        ce::FreshBound b = monitored(nb::none(), [&](PythonMonitor&) {
          ce::validate_fresh_config(pop, cfg);
          return ce::fresh_bound(pop, cfg);
        });
        nb::dict d;
        d["objective"] = std::string(ce::to_string(cfg.objective));
        d["budget"] = cfg.budget;
        d["value"] = b.value ? nb::cast(*b.value) : nb::none();
        d["multiplier"] = b.multiplier;
        d["note"] = b.note;
        d["why_absent"] = b.why_absent;
        d["period"] = to_numpy(std::move(b.period));
        return d;
      },
      "population"_a, "budget"_a.none(), "budget_fraction"_a.none(), "epoch_length"_a, "host_cap"_a,
      "objective"_a);

  m.def(
      "fresh_rates",
      [](const ce::FreshPopulation& pop, const std::string& policy, double budget,
         double epoch_length, double epsilon) {
        const ce::FreshPolicy p = parse_fresh_policy_or_throw(policy);
        if (!ce::rate_based(p))
          throw ce::InputError("policy '" + policy +
                               "' has no crawl rates (the rate-based policies: lambda-crawl, "
                               "lambda-crawl-approx, binary-lambda-crawl, uniform, proportional)");
        ce::FreshConfig cfg =
            fresh_config(pop, budget, std::nullopt, epoch_length, 0, "harmonic", 1);
        CE_EXPECTS(epsilon >= 0 && epsilon <= 1, "epsilon= must lie in [0, 1]");
        cfg.epsilon = epsilon;
        ce::FreshRates r;
        ce::RateCosts costs;
        {
          nb::gil_scoped_release release;
          r = ce::fresh_rates(pop, cfg, p);
          costs = ce::rate_costs(pop, r, p);
        }
        nb::dict d;
        d["multiplier"] = r.multiplier;
        d["harmonic_penalty"] = costs.harmonic;
        d["binary_staleness"] = costs.binary;
        d["rho"] = to_numpy(std::move(r.rho));
        d["p"] = to_numpy(std::move(r.p));
        return d;
      },
      "population"_a, "policy"_a, "budget"_a, "epoch_length"_a, "epsilon"_a);

  m.def(
      "estimate_change_rate",
      [](const In<double>& interval, const In<uint8_t>& changed) {
        CE_EXPECTS(interval.shape(0) == changed.shape(0),
                   "intervals= and changed= have different lengths");
        for (std::size_t i = 0; i < interval.shape(0); ++i)
          if (!(interval.data()[i] > 0 && std::isfinite(interval.data()[i])))
            throw ce::InputError("intervals=: element " + std::to_string(i) +
                                 " must be a finite number > 0");
        const ce::RateEstimate e =
            ce::estimate_incomplete(interval.data(), changed.data(), interval.shape(0));
        // As the importer refuses such a history.
        if (interval.shape(0) > 0 && !ce::has_finite_rate(e))
          throw ce::InputError(std::string("intervals=, changed=: the history ") +
                               ce::kNoFiniteRate);
        return rate_estimate_dict(e);
      },
      "intervals"_a, "changed"_a);
  m.def(
      "estimate_change_rate_complete",
      [](double changes, double time) {
        CE_EXPECTS(std::isfinite(changes) && changes >= 0, "changes= must be a number >= 0");
        CE_EXPECTS(std::isfinite(time) && time > 0, "time= must be a finite number > 0");
        return rate_estimate_dict(ce::estimate_complete(changes, time));
      },
      "changes"_a, "time"_a);
}
