#include "crawleval/analysis/warm_up.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "crawleval/analysis/stats.hpp"

namespace crawleval {

namespace {

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

}  // namespace

WarmUp fixed_burn_in(uint64_t burn_in) {
  WarmUp w;
  w.burn_in = burn_in;
  w.reason = burn_in ? "--burn-in " + std::to_string(burn_in) + " (given)" : "no burn-in (given)";
  return w;
}

WarmUp choose_burn_in(uint64_t measured_epochs, const WarmUpOptions& options,
                      const PilotFn& pilot) {
  WarmUp w;
  w.automatic = true;
  w.max_burn_in = options.max_burn_in;
  const uint64_t longest = std::max<uint64_t>(kMinPilotEpochs, 2 * options.max_burn_in);
  uint64_t length = std::min(
      longest, std::clamp<uint64_t>(measured_epochs, kMinPilotEpochs, kMaxFirstPilotEpochs));
  const auto t0 = std::chrono::steady_clock::now();
  Mser m;
  for (;;) {
    w.pilot_series = pilot(length);
    ++w.pilots;
    w.pilot_epochs = length;
    m = mser5(w.pilot_series);
    if (m.settled || length >= longest) break;
    length = std::min(longest, 2 * length);
  }
  w.pilot_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  w.settled = m.settled;
  w.mser_truncation = m.truncation;
  const uint64_t wanted = m.settled ? 2 * m.truncation : length / 2;
  w.capped = wanted > options.max_burn_in;
  w.burn_in = std::min(wanted, options.max_burn_in);
  const std::string pilot_text = "replication 0's reward per epoch over a pilot of " +
                                 std::to_string(w.pilot_epochs) + " epochs from epoch 0";
  if (m.settled) {
    w.reason = "automatic: MSER-5 on " + pilot_text + " truncates the first " +
               std::to_string(m.truncation) + " epochs; the burn-in is twice that";
    if (w.capped) {
      w.reason += ", capped at --max-burn-in " + std::to_string(options.max_burn_in);
      w.warning = "the burn-in was capped at " + std::to_string(options.max_burn_in) +
                  " epochs (twice MSER-5's truncation point is " + std::to_string(wanted) +
                  "): the measured epochs may still hold the transient; raise --max-burn-in";
    }
  } else {
    w.reason = "automatic: MSER-5 on " + pilot_text +
               " found no end of the transient in the pilot's first half; the burn-in is the "
               "cap";
    w.warning = "the transient did not end within " + std::to_string(w.pilot_epochs) +
                " epochs (MSER-5 on replication 0, the longest pilot --max-burn-in " +
                std::to_string(options.max_burn_in) +
                " allows): the measured epochs may still hold it; raise --max-burn-in";
  }
  return w;
}

void check_measured_window(WarmUp& w, const std::vector<double>& window) {
  // The series for plots: the pilot's epochs, then the measured run's beyond them.
  std::vector<double> joined;
  uint64_t first = w.burn_in;
  if (!w.pilot_series.empty()) {
    joined = w.pilot_series;
    first = 0;
    const uint64_t end = w.burn_in + window.size();
    if (end > joined.size())
      joined.insert(joined.end(), window.end() - long(end - joined.size()), window.end());
  } else {
    joined = window;
  }
  w.pilot_series.clear();
  w.pilot_series.shrink_to_fit();
  w.series_first = first;
  w.series_stride = std::max<uint64_t>(1, (joined.size() + kSeriesPoints - 1) / kSeriesPoints);
  w.series.clear();
  for (std::size_t i = 0; i < joined.size(); i += w.series_stride) {
    const std::size_t end = std::min<std::size_t>(joined.size(), i + w.series_stride);
    double sum = 0.0;
    for (std::size_t j = i; j < end; ++j) sum += joined[j] / double(end - i);
    w.series.push_back(sum);
  }

  // The window check.
  const Mser m = mser5(window);
  if (m.batches < 4) {
    w.window_not_checked = "fewer than 20 measured epochs";
  } else {
    w.window_truncation = m.truncation;
    const std::vector<double> rest(window.begin() + long(m.truncation), window.end());
    const Summary all = summarize_batch_means(window), kept = summarize_batch_means(rest);
    w.window_shift = all.mean - kept.mean;
    if (m.truncation == 0) {
      w.window_checked = true;
      w.window_half_width = all.half_width;
    } else if (!kept.no_interval.empty()) {
      w.window_not_checked =
          kept.no_interval.find("correlated") != std::string::npos
              ? "replication 0's batch means after MSER-5's truncation are correlated"
              : "too few measured epochs after MSER-5's truncation for an interval";
    } else {
      w.window_checked = true;
      w.window_half_width = kept.half_width;
      w.transient_in_window = std::fabs(w.window_shift) > kept.half_width;
    }
  }
  if (!w.automatic && !w.window_checked) {
    // A given burn-in nothing could check: the mean may hold a transient nobody measured.
    const std::string text = "the given burn-in (" + std::to_string(w.burn_in) +
                             " epochs) could not be checked: " + w.window_not_checked +
                             "; --burn-in auto measures the transient";
    w.warning = w.warning.empty() ? text : w.warning + "; " + text;
  }
  if (w.transient_in_window) {
    const std::string text =
        "the measured epochs still hold a transient: MSER-5 on replication 0's measured epochs "
        "truncates the first " +
        std::to_string(w.window_truncation) + " of " + std::to_string(window.size()) +
        ", which moves its mean by " + fmt(-w.window_shift) + " (more than its 95% half-width " +
        fmt(w.window_half_width) + ")" +
        (w.automatic ? "; raise --max-burn-in or run more epochs"
                     : "; use --burn-in auto or a longer --burn-in");
    w.warning = w.warning.empty() ? text : w.warning + "; " + text;
  }
}

}  // namespace crawleval
