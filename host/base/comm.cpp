// The processes of one evaluation (comm.hpp): one process, or MPI's world when built with MPI
// (CRAWLEVAL_HAVE_MPI) and started by an MPI launcher.
#include "crawleval/base/comm.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <thread>

#include "crawleval/base/error.hpp"

#if defined(CRAWLEVAL_HAVE_MPI)
#include <mpi.h>
#endif

namespace crawleval {

namespace {

class SoloComm final : public Comm {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void sum(uint64_t*, std::size_t) override {}
  void max(double*, std::size_t) override {}
  std::vector<unsigned char> allgather_bytes(const void* data, std::size_t bytes) override {
    const auto* p = static_cast<const unsigned char*>(data);
    return std::vector<unsigned char>(p, p + bytes);
  }
  void broadcast(void*, std::size_t, int) override {}
  std::vector<std::vector<unsigned char>> alltoall_bytes(
      const std::vector<std::vector<unsigned char>>& to) override {
    return to;
  }
  void send(const void*, std::size_t, int) override {
    throw Error("internal: send() in a single process");
  }
  void recv(void*, std::size_t, int) override {
    throw Error("internal: recv() in a single process");
  }
  [[noreturn]] void abort(int code) override { std::exit(code); }
};

#if defined(CRAWLEVAL_HAVE_MPI)
int checked_count(std::size_t n, const char* what) {
  if (n > std::size_t(INT_MAX))
    throw Error(std::string("internal: an MPI message of ") + std::to_string(n) + " " + what +
                " exceeds 2^31 - 1");
  return int(n);
}

/// Waits for a non-blocking operation without keeping a core busy: MPI's blocking calls poll in a
/// loop (Open MPI's yield_when_idle only adds sched_yield to it), so a rank waiting for a slower
/// one would burn a core that the slower rank may need (more ranks than cores, a loaded machine).
/// It polls for about 50 microseconds, enough for a collective between ranks that arrive
/// together, then sleeps between polls, doubling the nap up to a millisecond.
void wait_for(MPI_Request* request) {
  int done = 0;
  MPI_Test(request, &done, MPI_STATUS_IGNORE);
  if (done) return;
  const auto start = std::chrono::steady_clock::now();
  std::chrono::microseconds nap(0);
  for (;;) {
    MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (std::chrono::steady_clock::now() - start < std::chrono::microseconds(50)) continue;
    nap =
        std::min(std::max(2 * nap, std::chrono::microseconds(5)), std::chrono::microseconds(1000));
    std::this_thread::sleep_for(nap);
  }
}

/// MPI_COMM_WORLD. Errors are fatal (MPI's default handler aborts every rank), so no call here
/// returns a failure. Every operation is started non-blocking and waited for with wait_for.
class MpiComm final : public Comm {
 public:
  MpiComm() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() override {
    if (local_rank_ < 0) {  // (once: the ranks that share this machine's memory)
      MPI_Comm local;
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
      MPI_Comm_rank(local, &local_rank_);
      MPI_Comm_free(&local);
    }
    return local_rank_;
  }
  void sum(uint64_t* v, std::size_t n) override {
    MPI_Request r;
    MPI_Iallreduce(MPI_IN_PLACE, v, checked_count(n, "integers"), MPI_UINT64_T, MPI_SUM,
                   MPI_COMM_WORLD, &r);
    wait_for(&r);
  }
  void max(double* v, std::size_t n) override {
    MPI_Request r;
    MPI_Iallreduce(MPI_IN_PLACE, v, checked_count(n, "numbers"), MPI_DOUBLE, MPI_MAX,
                   MPI_COMM_WORLD, &r);
    wait_for(&r);
  }
  std::vector<unsigned char> allgather_bytes(const void* data, std::size_t bytes) override {
    const unsigned long long mine = bytes;
    std::vector<unsigned long long> sizes(std::size_t(size_), 0);
    MPI_Request r;
    MPI_Iallgather(&mine, 1, MPI_UNSIGNED_LONG_LONG, sizes.data(), 1, MPI_UNSIGNED_LONG_LONG,
                   MPI_COMM_WORLD, &r);
    wait_for(&r);
    std::vector<int> counts(sizes.size()), displs(sizes.size());
    std::size_t total = 0;
    for (std::size_t r = 0; r < sizes.size(); ++r) {
      counts[r] = checked_count(sizes[r], "bytes");
      displs[r] = checked_count(total, "bytes");
      total += sizes[r];
    }
    checked_count(total, "bytes");
    std::vector<unsigned char> out(total);
    MPI_Iallgatherv(data, counts[std::size_t(rank_)], MPI_BYTE, out.data(), counts.data(),
                    displs.data(), MPI_BYTE, MPI_COMM_WORLD, &r);
    wait_for(&r);
    return out;
  }
  void broadcast(void* data, std::size_t bytes, int root) override {
    MPI_Request r;
    MPI_Ibcast(data, checked_count(bytes, "bytes"), MPI_BYTE, root, MPI_COMM_WORLD, &r);
    wait_for(&r);
  }
  std::vector<std::vector<unsigned char>> alltoall_bytes(
      const std::vector<std::vector<unsigned char>>& to) override {
    CE_EXPECTS(to.size() == std::size_t(size_), "internal: an exchange names every rank");
    const std::size_t P = to.size();
    std::vector<unsigned long long> out_n(P), in_n(P);
    for (std::size_t r = 0; r < P; ++r) out_n[r] = to[r].size();
    MPI_Request req;
    MPI_Ialltoall(out_n.data(), 1, MPI_UNSIGNED_LONG_LONG, in_n.data(), 1, MPI_UNSIGNED_LONG_LONG,
                  MPI_COMM_WORLD, &req);
    wait_for(&req);
    // In rounds of at most `piece` bytes per pair, so that a round's counts and displacements
    // (int) stay below 2^31 however much a rank sends; every rank takes the largest pair's rounds.
    // (CRAWLEVAL_ALLTOALL_PIECE: a smaller piece, for the test of the rounds.)
    const char* test_piece = std::getenv("CRAWLEVAL_ALLTOALL_PIECE");
    const std::size_t piece = test_piece
                                  ? std::max<std::size_t>(1, std::strtoull(test_piece, nullptr, 10))
                                  : std::max<std::size_t>(1, (std::size_t(1) << 30) / P);
    double most = 0.0;
    for (std::size_t r = 0; r < P; ++r) most = std::max({most, double(out_n[r]), double(in_n[r])});
    max(&most, 1);
    const std::size_t rounds = std::size_t(std::ceil(most / double(piece)));
    std::vector<std::vector<unsigned char>> from(P);
    for (std::size_t r = 0; r < P; ++r) from[r].resize(in_n[r]);
    std::vector<int> sc(P), sd(P), rc(P), rd(P);
    std::vector<unsigned char> send, recv;
    for (std::size_t k = 0; k < rounds; ++k) {
      const std::size_t at = k * piece;
      auto part = [&](std::size_t n) { return n > at ? std::min(piece, n - at) : 0; };
      int s_total = 0, r_total = 0;
      for (std::size_t r = 0; r < P; ++r) {
        sc[r] = int(part(out_n[r])), sd[r] = s_total, s_total += sc[r];
        rc[r] = int(part(in_n[r])), rd[r] = r_total, r_total += rc[r];
      }
      send.resize(std::size_t(s_total)), recv.resize(std::size_t(r_total));
      for (std::size_t r = 0; r < P; ++r)
        if (sc[r]) std::memcpy(send.data() + sd[r], to[r].data() + at, std::size_t(sc[r]));
      MPI_Ialltoallv(send.data(), sc.data(), sd.data(), MPI_BYTE, recv.data(), rc.data(), rd.data(),
                     MPI_BYTE, MPI_COMM_WORLD, &req);
      wait_for(&req);
      for (std::size_t r = 0; r < P; ++r)
        if (rc[r]) std::memcpy(from[r].data() + at, recv.data() + rd[r], std::size_t(rc[r]));
    }
    return from;
  }
  void send(const void* data, std::size_t bytes, int to) override {
    MPI_Request r;
    MPI_Isend(data, checked_count(bytes, "bytes"), MPI_BYTE, to, 0, MPI_COMM_WORLD, &r);
    wait_for(&r);
  }
  void recv(void* data, std::size_t bytes, int from) override {
    MPI_Request r;
    MPI_Irecv(data, checked_count(bytes, "bytes"), MPI_BYTE, from, 0, MPI_COMM_WORLD, &r);
    wait_for(&r);
  }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

 private:
  int rank_ = 0, size_ = 1, local_rank_ = -1;
};
#endif

}  // namespace

Comm& solo_comm() {
  static SoloComm comm;
  return comm;
}

bool mpi_compiled() {
#if defined(CRAWLEVAL_HAVE_MPI)
  return true;
#else
  return false;
#endif
}

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(v)) return true;
  return false;
}

Comm* mpi_world() {
#if defined(CRAWLEVAL_HAVE_MPI)
  static MpiComm* world = []() -> MpiComm* {
    if (!launched_by_mpi()) return nullptr;
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    }
    return new MpiComm();
  }();
  return world;
#else
  return nullptr;
#endif
}

void finalize_mpi() {
#if defined(CRAWLEVAL_HAVE_MPI)
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
#endif
}

std::vector<double> fold_in_order(Comm& comm, const std::vector<double>& parts, std::size_t rows,
                                  std::size_t cols) {
  std::vector<double> acc(rows, 0.0);
  const int rank = comm.rank(), last = comm.size() - 1;
  if (rank > 0 && rows) comm.recv(acc.data(), rows * sizeof(double), rank - 1);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) acc[r] += parts[r * cols + c];
  if (rank < last && rows) comm.send(acc.data(), rows * sizeof(double), rank + 1);
  if (last > 0 && rows) comm.broadcast(acc.data(), rows * sizeof(double), last);
  return acc;
}

void agree_on_failure(Comm& comm, std::exception_ptr failure) {
  // This rank's status: 0 fine, 1 a failure, 2 bad input; and its message.
  uint64_t code = 0;
  std::string message;
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const InputError& e) {
      code = 2, message = e.what();
    } catch (const std::exception& e) {
      code = 1, message = e.what();
    } catch (...) {
      code = 1, message = "unknown failure";
    }
  }
  if (comm.size() == 1) {
    if (failure) std::rethrow_exception(failure);
    return;
  }
  const std::vector<uint64_t> codes = comm.allgather(std::vector<uint64_t>{code});
  int first = -1;
  for (std::size_t r = 0; r < codes.size() && first < 0; ++r)
    if (codes[r]) first = int(r);
  if (first < 0) return;
  uint64_t length = message.size();
  comm.broadcast(&length, sizeof length, first);
  message.resize(length);
  comm.broadcast(message.data(), length, first);
  if (codes[std::size_t(first)] == 2) throw AgreedInputError(message);
  throw AgreedError(message);
}

void agree_on(Comm& comm, const std::string& facts, const std::string& what,
              const std::string& hint) {
  if (comm.size() == 1) return;
  // Each rank's text, then every text; allgather_bytes first gathers the sizes (a fixed-size
  // collective), so differing texts cannot leave a rank waiting.
  const std::vector<unsigned long long> sizes =
      comm.allgather(std::vector<unsigned long long>{facts.size()});
  const std::vector<unsigned char> all = comm.allgather_bytes(facts.data(), facts.size());
  std::vector<std::string> text;
  std::size_t at = 0;
  for (unsigned long long n : sizes) {
    text.emplace_back(reinterpret_cast<const char*>(all.data()) + at, std::size_t(n));
    at += std::size_t(n);
  }
  std::vector<int> differ;
  for (std::size_t r = 1; r < text.size(); ++r)
    if (text[r] != text[0]) differ.push_back(int(r));
  if (differ.empty()) return;
  // The first line of the first differing rank that rank 0 does not have, and rank 0's line of the
  // same name.
  auto lines = [](const std::string& t) {
    std::vector<std::string> out;
    std::size_t p = 0;
    while (p < t.size()) {
      const std::size_t e = std::min(t.find('\n', p), t.size());
      out.push_back(t.substr(p, e - p));
      p = e + 1;
    }
    return out;
  };
  const std::vector<std::string> mine = lines(text[0]),
                                 theirs = lines(text[std::size_t(differ[0])]);
  std::string line_theirs = "(nothing)", line_mine = "(nothing)";
  for (std::size_t k = 0; k < std::max(mine.size(), theirs.size()); ++k) {
    const std::string a = k < mine.size() ? mine[k] : "", b = k < theirs.size() ? theirs[k] : "";
    if (a != b) {
      line_mine = a.empty() ? "(nothing)" : printable(a, 80);
      line_theirs = b.empty() ? "(nothing)" : printable(b, 80);
      break;
    }
  }
  std::string ranks;
  for (int r : differ) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  throw InputError("the processes disagree on " + what + ": process " + std::to_string(differ[0]) +
                   " has " + line_theirs + " where process 0 has " + line_mine + " (process" +
                   (differ.size() > 1 ? "es " : " ") + ranks + " differ" +
                   (differ.size() > 1 ? "" : "s") + " from process 0); " + hint);
}

void on_every_rank_or_abort(Comm* world, const std::function<void()>& step) {
  if (!world || world->size() == 1) return step();
  try {
    step();
  } catch (const AgreedInputError&) {
    throw;  // every process has it: process 0 prints it once
  } catch (const AgreedError&) {
    throw;
  } catch (const InputError& e) {
    std::fprintf(stderr, "crawleval: error (process %d of %d): %s\n", world->rank(), world->size(),
                 e.what());
    world->abort(kExitBadInput);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "crawleval: failed (process %d of %d): out of memory\n", world->rank(),
                 world->size());
    world->abort(kExitFailure);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "crawleval: failed (process %d of %d): %s\n", world->rank(), world->size(),
                 e.what());
    world->abort(kExitFailure);
  }
}

int default_threads_per_rank() {
  int local = 1;
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE"})
    if (const char* s = std::getenv(v)) {
      local = std::max(1, std::atoi(s));
      break;
    }
  const unsigned hw = std::thread::hardware_concurrency();
  return std::max(1, int(hw > 0 ? hw : 1) / local);
}

}  // namespace crawleval
