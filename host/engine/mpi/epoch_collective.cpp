// The epoch layer between an engine and its processes (epoch_collective.hpp).
#include "crawleval/engine/epoch_collective.hpp"

#include <algorithm>
#include <chrono>

#include "crawleval/base/error.hpp"
#include "crawleval/model/problem.hpp"
#include "select/window_selector.hpp"

namespace crawleval {

namespace {
/// Partial sums a process holds before a fold: epochs x its chunks x quantities (8 MiB).
constexpr std::size_t kFoldBatch = std::size_t(1) << 20;
}  // namespace

EpochCollective::EpochCollective(Comm& comm, uint64_t first, std::size_t n, uint64_t global_n,
                                 int threads)
    : comm_(comm), first_(first), global_n_(global_n), n_(n), threads_(std::max(1, threads)) {}

EpochCollective::~EpochCollective() = default;

Selection EpochCollective::select(const uint64_t* keys, const uint64_t* weights, bool unit,
                                  uint64_t limit) {
  if (!sel_) {
    sel_ = std::make_unique<detail::WindowSelector>();
    sel_->prepare(n_, threads_, unit);
    sel_->share(comm_, first_, global_n_);
  }
  // Every process must pass the same `unit`; an empty shard may have no weights to point to.
  static const uint64_t none = 0;
  return sel_->select(keys, unit ? nullptr : (weights ? weights : &none), n_, limit);
}

window::Diagnostics EpochCollective::diagnostics() const {
  return sel_ ? sel_->state().diag : window::Diagnostics{};
}

CommTraffic EpochCollective::traffic() const {
  CommTraffic t = stats;
  if (sel_) {
    t.collectives += sel_->traffic.collectives;
    t.bytes += sel_->traffic.bytes;
    t.seconds += sel_->traffic.seconds;
  }
  return t;
}

void EpochCollective::begin_sums(std::size_t quantities, std::size_t chunk, uint64_t epochs,
                                 bool every_epoch) {
  CE_EXPECTS(chunk > 0 && kFoldChunk % chunk == 0,
             "internal: a reward chunk must divide the shards' chunk");
  quantities_ = quantities;
  chunks_ = (n_ + chunk - 1) / chunk;
  // Epochs per fold: the widest shard's partial sums stay under kFoldBatch; every process
  // computes the same number from the shards (shard_of).
  std::size_t widest = 0;
  for (int r = 0; r < comm_.size(); ++r)
    widest = std::max<std::size_t>(
        widest, (shard_of(global_n_, r, comm_.size()).count + chunk - 1) / chunk);
  const uint64_t fit = kFoldBatch / std::max<std::size_t>(1, widest * quantities);
  batch_rows_ = every_epoch || single()
                    ? 1
                    : std::size_t(std::max<uint64_t>(1, std::min<uint64_t>(epochs, fit)));
  rows_ = 0;
  batch_.assign(batch_rows_ * quantities_ * chunks_, 0.0);
}

void EpochCollective::commit(const Totals& each) {
  if (++rows_ == batch_rows_) flush(each);
}

void EpochCollective::flush(const Totals& each) {
  if (rows_ == 0) return;
  const auto t0 = std::chrono::steady_clock::now();
  // (fold_in_order reads only the first rows_ epochs of the batch.)
  const std::vector<double> totals = fold_in_order(comm_, batch_, rows_ * quantities_, chunks_);
  if (!single()) {
    stats.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    stats.collectives += 1;
    stats.bytes += 2 * rows_ * quantities_ * sizeof(double);
  }
  for (std::size_t e = 0; e < rows_; ++e) each(totals.data() + e * quantities_);
  rows_ = 0;
}

std::vector<uint64_t> EpochCollective::gather(const std::vector<uint64_t>& mine) {
  return single() ? mine : comm_.allgather(mine);
}

double EpochCollective::sum_in_order(const std::vector<double>& values) {
  return fold_in_order(comm_, values, 1, values.size())[0];
}

}  // namespace crawleval
