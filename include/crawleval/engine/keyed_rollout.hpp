// One GPU per MPI rank: the rollout contract (rollout.hpp) over the ranks of an MPI run, each rank
// moving and scoring its shard on a device and the selection and sums taken by the epoch layer
// (epoch_collective.hpp), as the CPU engines' are. Every number of ranks gives one process's
// crawled sets and rewards, bit for bit: a source's state, key and reward do not depend on which
// rank moves it, and the sums are chunk sums folded in global order (docs/scale-out.md, "A GPU per
// rank"). Against the CPU backend the crawled sets are the same and the rewards agree within
// rounding, as one GPU's do (the device's exp, expm1 and log1p differ from glibc's in the last
// bits); the host twin below, on the host's functions, gives the CPU backend's bits.
//
// How. Every epoch, one launch over the rank's shard (a KeyedPass) applies the previous selection
// to the key each source was scored with, moves every source (generic_step.hpp: the general model,
// every built-in policy), writes each source's key for the new epoch, and sums the crawled
// sources' rewards and costs per chunk of kKeyedChunk ids, left to right in id order: the CPU
// wide engine's chunk sums, which the layer folds in global chunk order. The keys come to the host
// (8 B per source and epoch over the bus), where the layer's windowed select finds the selection
// over every rank; the selection goes back to the device with the next launch. The rank's device is
// its local rank modulo the devices it sees, so that ranks on one machine share its GPUs.
//
// The pass's host twin (host_keyed_pass) runs the same per-source step and the same sums on the
// host; tests/test_mpi.cpp holds it to the CPU engine under mpirun, P = 1..4.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "crawleval/base/comm.hpp"
#include "crawleval/engine/generic_step.hpp"
#include "crawleval/engine/rollout.hpp"
#include "crawleval/model/problem.hpp"

namespace crawleval {

/// The chunk of the reward and cost sums: the CPU wide engine's (cpu_backend.cpp), so that the
/// folded sums are that engine's, bit for bit.
inline constexpr std::size_t kKeyedChunk = std::size_t(1) << 14;

namespace detail {

/// The device side of one rank's epochs (kernels/keyed_pass.cu) or its host twin.
class KeyedPass {
 public:
  virtual ~KeyedPass() = default;
  /// A replication's start: every state and age the problem's initial ones.
  virtual void start() = 0;
  /// One launch (generic_keyed_step for every source of the shard): with e.apply, the reward and
  /// cost of chunk c (sources c kKeyedChunk .. , left to right from 0.0) into sums[c] and
  /// sums[chunks + c]; with e.score, every source's key into keys; with e.observe, what a score
  /// function observes into seen and age (host memory, n of each).
  virtual void run(const KeyedEpoch& e, double* sums, uint64_t* keys, double* seen,
                   double* age) = 0;
  /// The keys a score function's scores gave (n of them, host memory), which the next launch's
  /// apply reads as it reads the keys the pass wrote.
  virtual void set_keys(const uint64_t* keys) = 0;
  /// The states now (for observers), n of them into x.
  virtual void states(double* x) = 0;
};

/// What a keyed pass reads, on the host: every source's constants, initial state and age word
/// (compact columns expanded), the policy's periods and gains, and the pass's settings with
/// `pass`'s pointers into these (a device pass uploads them and points its copy at the device's).
struct KeyedColumns {
  std::vector<SourceParams> params;
  std::vector<double> x0, cost;  // cost: empty for unit costs
  std::vector<uint32_t> w0;
  std::vector<uint8_t> observed;  // a score function's observe column, where it applies
  bool function = false;          // a score function's run: the pass writes what it observes
  GenericPass pass;
};
/// `function`: for keyed_rollout with a score function (then `policy` is not read).
KeyedColumns keyed_columns(const Problem& pr, Policy policy, bool function = false);

/// The host twin: generic_keyed_step source by source, the chunk sums left to right (`function`:
/// keyed_columns').
std::unique_ptr<KeyedPass> host_keyed_pass(const Problem& pr, Policy policy, bool function = false);

}  // namespace detail

/// Why keyed_rollout() cannot run `policy` (or a score function) on `pr` with a device ("" where
/// it can): the empirical utility law (its table is not on the device), more than 2^32 - 2
/// sources on a rank.
std::string keyed_refusal(const Problem& pr, Policy policy);

/// The rollout over comm's ranks (one process: solo_comm) with `pass` doing each rank's launches;
/// with `fn`, a policy given as a score function on the host, called every epoch on each rank's
/// shard with what it observes there, as the CPU function engine calls it (function_rollout,
/// rollout.hpp; under MPI `first` and `processes` set): then `policy` is not read, and a function
/// that fails on one rank fails the run on every rank.
/// Every rank returns the same output, one process's with the same kind of pass bit for bit (with
/// the host twin: the CPU backend's): the replications' rewards and costs and replication 0's
/// per-epoch rewards. The static and lip
/// policies need prepare_static_policy / prepare_lip_policy first, as on every engine.
RolloutOutput keyed_rollout(const Problem& pr, Policy policy, Comm& comm, detail::KeyedPass& pass,
                            const EpochObserver* observer = nullptr, const ScoreFn* fn = nullptr);

}  // namespace crawleval
