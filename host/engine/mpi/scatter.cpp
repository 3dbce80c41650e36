// A population read by one rank, cut into every rank's shard (sharded.hpp: scatter_population).
#include <algorithm>

#include "crawleval/base/error.hpp"
#include "crawleval/engine/sharded.hpp"

namespace crawleval {

namespace {

/// Rank 0 sends rank r its slice of a column; rank r receives it. Empty columns stay empty.
template <class T>
void move_column(Comm& comm, const std::vector<T>* whole, std::vector<T>& mine, bool present,
                 const std::vector<Shard>& shards) {
  const int rank = comm.rank();
  const Shard& s = shards[std::size_t(rank)];
  if (!present) return;
  if (rank == 0) {
    for (int r = 1; r < comm.size(); ++r) {
      const Shard& t = shards[std::size_t(r)];
      if (t.count) comm.send(whole->data() + t.first, t.count * sizeof(T), r);
    }
    mine.assign(whole->begin() + std::ptrdiff_t(s.first),
                whole->begin() + std::ptrdiff_t(s.first + s.count));
  } else {
    mine.resize(s.count);
    if (s.count) comm.recv(mine.data(), s.count * sizeof(T), 0);
  }
}

}  // namespace

Population scatter_population(Comm& comm, const Population* whole, Shard* shard) {
  struct Header {
    uint64_t n, origin_bytes, first_id;
    uint8_t x0, expiry, line, observe, pad[4];
  } h{};
  if (comm.rank() == 0) {
    if (!whole) throw Error("internal: rank 0 scatters no population");
    h.n = whole->size();
    h.origin_bytes = whole->origin.size();
    h.first_id = whole->first_id;
    h.x0 = !whole->x0.empty(), h.expiry = !whole->expiry.empty(), h.line = !whole->line.empty();
    h.observe = !whole->observe.empty();
  }
  comm.broadcast(&h, sizeof h, 0);
  Population mine;
  mine.first_id = h.first_id;
  mine.origin = comm.rank() == 0 ? whole->origin : std::string(h.origin_bytes, ' ');
  comm.broadcast(mine.origin.data(), h.origin_bytes, 0);
  std::vector<Shard> shards;
  for (int r = 0; r < comm.size(); ++r) shards.push_back(shard_of(h.n, r, comm.size()));
  move_column(comm, whole ? &whole->lambda : nullptr, mine.lambda, true, shards);
  move_column(comm, whole ? &whole->xi : nullptr, mine.xi, true, shards);
  move_column(comm, whole ? &whole->mu : nullptr, mine.mu, true, shards);
  move_column(comm, whole ? &whole->cost : nullptr, mine.cost, true, shards);
  move_column(comm, whole ? &whole->id : nullptr, mine.id, true, shards);
  move_column(comm, whole ? &whole->x0 : nullptr, mine.x0, h.x0, shards);
  move_column(comm, whole ? &whole->expiry : nullptr, mine.expiry, h.expiry, shards);
  move_column(comm, whole ? &whole->line : nullptr, mine.line, h.line, shards);
  move_column(comm, whole ? &whole->observe : nullptr, mine.observe, h.observe, shards);
  *shard = shards[std::size_t(comm.rank())];
  return mine;
}

}  // namespace crawleval
