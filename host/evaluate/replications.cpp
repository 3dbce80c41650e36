// One rule for the reward's interval and for --target-ci (replications.hpp).
#include "evaluate/replications.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace crawleval::detail {

bool replication_copies(const std::vector<double>& rewards) {
  return rewards.size() >= 2 &&
         std::all_of(rewards.begin(), rewards.end(), [&](double x) { return x == rewards[0]; });
}

Summary replication_summary(const std::vector<double>& rewards,
                            const std::vector<double>& epoch_series, Range range,
                            uint64_t epochs_per_replication, const UntrustedFn& untrusted) {
  const bool copies = replication_copies(rewards);
  Summary s = rewards.size() >= 2 && !copies ? summarize_replications(rewards, range)
                                             : summarize_batch_means(epoch_series, range);
  if (s.no_interval.empty() && untrusted) {
    const uint64_t per_sample =
        s.method == "replications" ? epochs_per_replication : s.batch_epochs;
    if (std::string why = untrusted(per_sample); !why.empty()) {
      s.std_error = s.half_width = s.ci_low = s.ci_high = std::numeric_limits<double>::quiet_NaN();
      s.no_interval = std::move(why);
    }
  }
  if (copies) {
    s.copies = rewards.size();
    if (!s.no_interval.empty())
      s.no_interval = "the " + std::to_string(rewards.size()) +
                      " replications are copies (the same reward to the last bit: the run "
                      "draws nothing), and over their epochs: " +
                      s.no_interval;
  }
  return s;
}

bool add_replication_batches(double target_ci, uint32_t max_replications, bool hopeless,
                             const std::function<Summary(const std::vector<double>&)>& reported,
                             std::vector<double>& rewards,
                             const std::function<std::vector<double>(uint32_t, uint32_t)>& more) {
  for (;;) {
    const Summary s = reported(rewards);
    const bool narrow = s.no_interval.empty() && s.half_width <= target_ci * std::fabs(s.mean);
    if (narrow || hopeless || replication_copies(rewards) || rewards.size() >= max_replications)
      return narrow;
    const uint32_t count = uint32_t(std::min<std::size_t>(std::max<std::size_t>(rewards.size(), 2),
                                                          max_replications - rewards.size()));
    const std::vector<double> added = more(uint32_t(rewards.size()), count);
    rewards.insert(rewards.end(), added.begin(), added.end());
  }
}

}  // namespace crawleval::detail
