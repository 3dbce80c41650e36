// The processes of one evaluation: the few collective operations the epoch layer
// (epoch_collective.hpp), the sharded bound and the command line need, over MPI
// (host/base/comm.cpp) or within one process.
//
// Every rank calls the same collectives in the same order. What crosses between ranks is small and
// fixed by the algorithm, never a key per source: digit histograms and boundary candidates in the
// selection (host/select/window_selector.cpp, shared), per-chunk partial sums for the rewards and
// the bound, the sampled sources of the bound's first phase, and error messages; in the freshness
// model also the caps' host directory and split hosts' candidates (to their owner rank), and once
// per bound the crowded hosts' members' columns to the rank that solves the host.
//
// Example (two ranks):
//   uint64_t h[2] = {rank == 0 ? 3u : 4u, 1};
//   comm.sum(h, 2);                       // both ranks now hold {7, 2}
//   auto all = comm.allgather(std::vector<int>{rank});   // both hold {0, 1}
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace crawleval {

/// Sums over sources (total cost, rewards, the bound's sums) are taken per fixed chunk of
/// kFoldChunk consecutive ids and the chunk sums added in id order, so that a result does not
/// depend on how many threads or processes computed it. A process's shard of the population
/// (shard_of) starts and ends on a chunk boundary.
inline constexpr std::size_t kFoldChunk = std::size_t(1) << 15;

/// What an engine's collectives moved (summed over calls).
struct CommTraffic {
  uint64_t collectives = 0;  ///< calls
  uint64_t bytes = 0;        ///< bytes this process contributed
  double seconds = 0.0;      ///< wall time inside them (waiting for the others included)
};

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// This rank's position among the ranks on its machine (0 in one process): a collective the
  /// first time (every rank calls it). A GPU per rank takes its machine's device local_rank()
  /// modulo their count.
  virtual int local_rank() { return 0; }
  /// Element-wise sums (exact: integers) and maxima over the ranks, in place, on every rank.
  virtual void sum(uint64_t* values, std::size_t n) = 0;
  virtual void max(double* values, std::size_t n) = 0;
  /// Every rank's bytes, concatenated in rank order, on every rank.
  virtual std::vector<unsigned char> allgather_bytes(const void* data, std::size_t bytes) = 0;
  /// The root's bytes on every rank (the same count on every rank).
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  /// A personalised exchange: to[r] goes to rank r (to[rank()] stays here); returns from[r], what
  /// rank r sent to this one (MPI_Alltoallv after the counts).
  virtual std::vector<std::vector<unsigned char>> alltoall_bytes(
      const std::vector<std::vector<unsigned char>>& to) = 0;
  /// Point to point, for the ordered fold (fold_in_order): blocking, exact byte counts.
  virtual void send(const void* data, std::size_t bytes, int to) = 0;
  virtual void recv(void* data, std::size_t bytes, int from) = 0;
  /// Ends every process of the evaluation with this exit code (after a failure that the other
  /// ranks cannot learn about at a collective: it would leave them waiting forever).
  [[noreturn]] virtual void abort(int code) = 0;

  template <class T>
  std::vector<T> allgather(const std::vector<T>& local) {
    const std::vector<unsigned char> b = allgather_bytes(local.data(), local.size() * sizeof(T));
    std::vector<T> out(b.size() / sizeof(T));
    if (!b.empty()) std::memcpy(out.data(), b.data(), b.size());
    return out;
  }
  uint64_t sum(uint64_t v) {
    sum(&v, 1);
    return v;
  }
  double max(double v) {
    max(&v, 1);
    return v;
  }
  bool any(bool v) { return sum(uint64_t(v)) > 0; }
  bool all(bool v) { return sum(uint64_t(!v)) == 0; }
};

/// A single process: every collective is the identity.
Comm& solo_comm();

/// The ranks of `mpirun` when this program was started by it and built with MPI
/// (CRAWLEVAL_ENABLE_MPI), else nullptr. The first call initialises MPI; finalize_mpi() ends it.
Comm* mpi_world();
void finalize_mpi();
/// Whether this binary was built with MPI.
bool mpi_compiled();
/// Whether the environment says this process was started by an MPI launcher (Open MPI, PMIx,
/// MPICH's PMI): the run-time detection that makes `mpirun -np P crawleval ...` shard.
bool launched_by_mpi();

/// Left folds of doubles in a global order: rank r holds `parts`, a rows x cols block (row-major)
/// of partial sums whose columns are consecutive in the global order after those of ranks < r.
/// Returns, on every rank, each row's 0.0 + p_1 + p_2 + ... over all ranks' columns in order: the
/// same bits as one process adding the same partial sums left to right. A chain: rank r receives
/// the running row sums from rank r - 1, adds its columns, passes them on; the last rank
/// broadcasts. P - 1 messages of 8 rows bytes and one broadcast per call.
std::vector<double> fold_in_order(Comm& comm, const std::vector<double>& parts, std::size_t rows,
                                  std::size_t cols);

/// Comm::alltoall_bytes of trivially copyable items (std::exchange is another thing).
template <class T>
std::vector<std::vector<T>> exchange_items(Comm& comm, const std::vector<std::vector<T>>& to) {
  std::vector<std::vector<unsigned char>> bytes(to.size());
  for (std::size_t r = 0; r < to.size(); ++r) {
    bytes[r].resize(to[r].size() * sizeof(T));
    if (!to[r].empty()) std::memcpy(bytes[r].data(), to[r].data(), bytes[r].size());
  }
  const std::vector<std::vector<unsigned char>> got = comm.alltoall_bytes(bytes);
  std::vector<std::vector<T>> from(got.size());
  for (std::size_t r = 0; r < got.size(); ++r) {
    from[r].resize(got[r].size() / sizeof(T));
    if (!got[r].empty()) std::memcpy(from[r].data(), got[r].data(), got[r].size());
  }
  return from;
}

/// Makes every rank agree on whether a step failed: a collective. `failure` is this rank's
/// exception (or null). When any rank failed, every rank throws the first failing rank's error
/// (InputError stays InputError, the message unchanged), so that one message is printed and every
/// rank exits with the same code.
void agree_on_failure(Comm& comm, std::exception_ptr failure);

/// Makes every rank check that all ranks see the same `facts` (lines "name=value": the parsed
/// settings, what an input file holds): a collective whose size does not depend on the facts, so
/// it cannot hang when they differ. When they differ, every rank throws the same InputError, which
/// names the ranks that differ from rank 0 and the first line that does, then `hint`:
///   "the processes disagree on the settings: process 1 has --epochs=10 where process 0 has
///    --epochs=5 (processes 1, 3 differ from process 0); <hint>"
void agree_on(Comm& comm, const std::string& facts, const std::string& what,
              const std::string& hint);

/// Runs step() on every rank and agrees on its failure (agree_on_failure).
template <class F>
void collectively(Comm& comm, F&& step) {
  std::exception_ptr failure;
  try {
    step();
  } catch (...) {
    failure = std::current_exception();
  }
  agree_on_failure(comm, failure);
}

/// Runs step(). In a run over several ranks, a failure there may leave the other ranks waiting at
/// a collective: the failing rank prints the message (naming its rank) and ends every rank, exit
/// code 2 for bad input, 1 otherwise. A failure every rank agreed on (AgreedError,
/// AgreedInputError: agree_on_failure) is thrown on, as in one process (world null or of size 1).
void on_every_rank_or_abort(Comm* world, const std::function<void()>& step);

/// Threads per process when a sharded run does not say (--threads 0): the hardware threads
/// shared among the processes on this machine (the launcher's local size), at least one.
int default_threads_per_rank();

}  // namespace crawleval
