// The warm-up of a run: how many epochs each replication discards before measuring, why, and
// whether the measured window still holds the initial transient.
//
// Automatic burn-in (`--burn-in auto`, the command line's and the Python package's default):
//   1. A pilot: replication 0 alone, no burn-in, L = clamp(H, 100, 1000) epochs (H: the measured
//      epochs asked for); MSER-5 (stats.hpp) on its reward per epoch.
//   2. While MSER-5's minimum is not settled (it sits at the end of the first half: the pilot is
//      too short to show the end of the transient), the pilot doubles, up to 2 * max_burn_in.
//   3. burn-in = min(2 * truncation point, max_burn_in). MSER-5 stops where the bias left in the
//      pilot's tail is about that tail's standard error, and a measured window that starts there
//      holds the least settled part of the tail: on geometric transients with little noise (this
//      model's) a window starting at the truncation point missed its 95% interval in 30-70% of
//      trials, one starting at twice it in 2-7% (docs/statistics.md).
//   The pilot costs one replication of up to L epochs (a pilot that doubles: up to 2L in all).
//   Replication 0 of the measured run repeats the pilot's trajectory (the draws are keyed by
//   epoch), so its reward series joins the pilot's.
// Every run, automatic or not: MSER-5 on replication 0's measured epochs. A transient is reported
// in the window when its truncation moves replication 0's mean by more than that replication's own
// 95% half-width (batch means); too short a window (under 20 epochs) or one without a valid
// interval is reported as not checked, and a given burn-in that could not be checked is warned
// about.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace crawleval {

struct WarmUpOptions {
  bool automatic = false;       ///< choose the burn-in (else RunConfig::burn_in)
  uint64_t max_burn_in = 5000;  ///< cap of the automatic burn-in
};

/// Pilots are at least this long, and start at most this long before doubling.
inline constexpr uint64_t kMinPilotEpochs = 100, kMaxFirstPilotEpochs = 1000;
/// Points of the reward series kept for plots.
inline constexpr uint64_t kSeriesPoints = 400;

struct WarmUp {
  bool automatic = false;
  uint64_t burn_in = 0;  ///< epochs discarded before measuring, in every replication
  uint64_t max_burn_in = 0;
  // The automatic choice:
  uint64_t mser_truncation = 0;  ///< MSER-5's truncation point on the last pilot, in epochs
  uint64_t pilot_epochs = 0;     ///< the last pilot's length
  uint32_t pilots = 0;           ///< pilots run
  bool settled = true;           ///< the last pilot showed the end of the transient
  bool capped = false;           ///< 2 * truncation exceeded max_burn_in
  double pilot_seconds = 0.0;    ///< wall time of the pilots
  std::string reason;            ///< why the first burn_in epochs were discarded
  // The measured window (replication 0):
  bool window_checked = false;
  std::string window_not_checked;  ///< why not (empty when checked)
  uint64_t window_truncation = 0;  ///< MSER-5's truncation point inside the window
  double window_shift = 0.0;       ///< mean of the window minus the mean after that truncation
  double window_half_width = std::numeric_limits<double>::quiet_NaN();
  bool transient_in_window = false;
  std::string warning;  ///< empty when there is nothing to warn about
  /// Replication 0's reward per epoch from epoch series_first, each point the mean of
  /// series_stride epochs (at most kSeriesPoints points): the pilot's epochs, then the measured
  /// run's beyond them.
  std::vector<double> series;
  uint64_t series_first = 0, series_stride = 1;
  std::vector<double> pilot_series;  ///< the last pilot's reward per epoch (internal)
};

/// Runs replication 0 from epoch 0 without burn-in for `epochs` epochs and returns its reward
/// per epoch.
using PilotFn = std::function<std::vector<double>(uint64_t epochs)>;

/// Steps 1-3 above for a run that will measure `measured_epochs` epochs.
WarmUp choose_burn_in(uint64_t measured_epochs, const WarmUpOptions& options, const PilotFn& pilot);

/// A fixed burn-in (no pilot).
WarmUp fixed_burn_in(uint64_t burn_in);

/// The window check on replication 0's measured rewards (epochs burn_in .. burn_in + H - 1),
/// the warning, and the series for plots.
void check_measured_window(WarmUp& w, const std::vector<double>& window);

}  // namespace crawleval
