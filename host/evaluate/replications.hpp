// What a measured evaluation reports of its replications, for both models (driver.cpp and
// fresh_evaluate.cpp): one rule for the reward's interval and one for --target-ci, so that an
// interval means the same thing in every output.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "crawleval/analysis/stats.hpp"

namespace crawleval::detail {

/// Why an interval over samples of `epochs` measured epochs each would not be trusted whatever
/// spread the samples show ("" where it would; empty function: always trusted).
using UntrustedFn = std::function<std::string(uint64_t epochs)>;

/// Whether R >= 2 replications are copies of one another (the same reward to the last bit: a run
/// that draws nothing).
bool replication_copies(const std::vector<double>& rewards);

/// A reward's summary: Student's t over R >= 2 replications that differ; batch means over
/// replication 0's epochs otherwise (one replication, or replications that are copies, whose
/// interval over replications would have width 0); no interval where `untrusted` gives a reason
/// for the samples' length (the replications' epochs, or a batch's).
Summary replication_summary(const std::vector<double>& rewards,
                            const std::vector<double>& epoch_series, Range range,
                            uint64_t epochs_per_replication, const UntrustedFn& untrusted = {});

/// --target-ci: batches of replications (each as large as everything so far, at least 2, with
/// draws of their own: the first after the last run) are added to `rewards` by `more(offset,
/// count)`, which runs replications first + offset .. first + offset + count - 1 and returns
/// their rewards, until the interval the results report (`reported(rewards)`: replication_summary)
/// is within target_ci of its mean, or max_replications are run, or the replications are copies
/// (more copies say nothing more), or the interval is `hopeless` (untrusted for the measured window
/// whatever it shows). Returns whether the target was reached: whether the reported interval is
/// narrow enough.
bool add_replication_batches(double target_ci, uint32_t max_replications, bool hopeless,
                             const std::function<Summary(const std::vector<double>&)>& reported,
                             std::vector<double>& rewards,
                             const std::function<std::vector<double>(uint32_t, uint32_t)>& more);

}  // namespace crawleval::detail
