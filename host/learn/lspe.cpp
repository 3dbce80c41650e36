// The LSPE(0) Whittle learner (include/crawleval/learn/lspe.hpp).
#include "crawleval/learn/lspe.hpp"

#include <algorithm>
#include <cmath>

#include "crawleval/analysis/stats.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/model/model.hpp"
#include "crawleval/model/rng.hpp"

namespace crawleval {

namespace {

using Matrix = std::vector<std::vector<double>>;

/// Solves (M) x = y by Gaussian elimination with partial pivoting (M is small and dense).
std::vector<double> solve(Matrix m, std::vector<double> y) {
  const std::size_t n = y.size();
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t piv = col;
    for (std::size_t r = col + 1; r < n; ++r)
      if (std::fabs(m[r][col]) > std::fabs(m[piv][col])) piv = r;
    std::swap(m[col], m[piv]);
    std::swap(y[col], y[piv]);
    const double d = m[col][col];
    if (d == 0.0) continue;
    for (std::size_t r = col + 1; r < n; ++r) {
      const double f = m[r][col] / d;
      if (f == 0.0) continue;
      for (std::size_t c = col; c < n; ++c) m[r][c] -= f * m[col][c];
      y[r] -= f * y[col];
    }
  }
  std::vector<double> x(n, 0.0);
  for (std::size_t i = n; i-- > 0;) {
    double s = y[i];
    for (std::size_t c = i + 1; c < n; ++c) s -= m[i][c] * x[c];
    x[i] = m[i][i] != 0.0 ? s / m[i][i] : 0.0;
  }
  return x;
}

}  // namespace

const char* to_string(LspeOperating o) { return o == LspeOperating::top ? "top" : "randomised"; }
const char* to_string(LspeCritic c) { return c == LspeCritic::paper ? "paper" : "crawled"; }

double whittle_index_inverse(double g, const SourceParams& p) {
  if (!(g > 0.0)) return 0.0;
  const double top = p.u_star * p.inv_cost;  // gamma(u*) = u* / C
  if (!(g < top)) return g / p.inv_cost;
  double lo = 0.0, hi = p.u_star;
  for (int it = 0; it < 200 && hi - lo > 1e-15 * p.u_star; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (whittle_index(mid, p) < g)
      lo = mid;
    else
      hi = mid;
  }
  return 0.5 * (lo + hi);
}

double exact_threshold(const std::vector<double>& x, std::size_t i,
                       const std::vector<SourceParams>& p) {
  double best = 0.0;
  for (std::size_t j = 0; j < x.size(); ++j)
    if (j != i) best = std::max(best, whittle_index(x[j], p[j]));
  return whittle_index_inverse(best, p[i]);
}

void validate(const Problem& pr, const LspeConfig& cfg) {
  const std::size_t n = pr.size();
  CE_EXPECTS(n >= 1 && n <= 64, "the LSPE learner is for small populations (1 to 64 sources)");
  CE_EXPECTS(cfg.steps >= 2, "--steps must be at least 2");
  CE_EXPECTS(std::isfinite(cfg.kappa) && cfg.kappa > 0, "--kappa must be a finite number > 0");
  CE_EXPECTS(std::isfinite(cfg.gamma) && cfg.gamma > 0, "--gamma must be a finite number > 0");
  CE_EXPECTS(cfg.replications >= 1, "--replications must be at least 1");
  CE_EXPECTS(cfg.start >= 0 && cfg.start <= 1, "--start-thresholds must lie in [0, 1]");
  CE_EXPECTS(cfg.operating != LspeOperating::top || (cfg.top >= 1 && cfg.top <= n),
             "--top must lie in [1, " + std::to_string(n) + "] (the sources)");
}

LspeRun lspe_run(const Problem& pr, const LspeConfig& cfg, uint32_t replication) {
  validate(pr, cfg);
  const std::size_t n = pr.size();
  std::vector<SourceParams> p(n);
  double ustar_total = 0.0;
  for (std::size_t i = 0; i < n; ++i) p[i] = pr.params().at(i), ustar_total += p[i].u_star;
  const std::size_t l = n + n * (n + 1) / 2;  // features
  auto features = [&](const std::vector<double>& x) {
    std::vector<double> phi(l);
    std::vector<double> z(n);
    for (std::size_t i = 0; i < n; ++i) z[i] = p[i].u_star > 0 ? x[i] / p[i].u_star : 0.0;
    std::size_t k = 0;
    for (std::size_t i = 0; i < n; ++i) phi[k++] = z[i];
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = i; j < n; ++j) phi[k++] = z[i] * z[j];
    return phi;
  };
  // Threshold inputs psi = (1, s, s^2), s scaled by the other sources' u*.
  auto psi_of = [&](const std::vector<double>& x, std::size_t i, double psi[3]) {
    double s = 0.0, scale = ustar_total - p[i].u_star;
    for (std::size_t k = 0; k < n; ++k)
      if (k != i) s += x[k];
    s = scale > 0 ? s / scale : 0.0;
    psi[0] = 1.0, psi[1] = s, psi[2] = s * s;
  };

  CE_EXPECTS(!pr.params().compact(), "internal: LSPE reads the initial states' column");
  std::vector<double> x = pr.initial_state(), q(3 * n, 0.0), w(l, 0.0), c_vec(l, 0.0);
  for (std::size_t i = 0; i < n; ++i)
    q[3 * i] = drift(p[i]) + cfg.start * (p[i].u_star - drift(p[i]));
  Matrix a_mat(l, std::vector<double>(l, 0.0)), b_mat(l, std::vector<double>(l, 0.0));
  for (std::size_t i = 0; i < l; ++i) b_mat[i][i] = 1e-3;
  double eta = 0.0, reward_sum = 0.0, reward_last = 0.0, crawls = 0.0, gap_sum = 0.0;
  LspeRun out;
  std::vector<double> f(n), psi(3 * n), next(n), thr(n);
  std::vector<uint8_t> crawled(n);
  std::vector<std::size_t> order(n);
  const uint32_t rep = pr.config.first_replication + replication;
  for (uint32_t step = 0; step < cfg.steps; ++step) {
    const double nn = double(step) + 1.0;
    const double a_n = cfg.step_scale / std::ceil(nn / 500.0);
    const double b_n = cfg.step_scale / std::pow(std::ceil(nn / 1000.0), 2.0 / 3.0);
    // The randomised threshold policy, or the top N0 by margin over the learned thresholds.
    const Words4 words = philox_words(cfg.seed, 0, step, rep, Stream::lspe, 0);
    double reward = 0.0, state_sum = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      double* ps = &psi[3 * i];
      psi_of(x, i, ps);
      double t = q[3 * i] + q[3 * i + 1] * ps[1] + q[3 * i + 2] * ps[2];
      t = std::min(p[i].u_star, std::max(drift(p[i]), t));  // projection onto [u_i, u*_i]
      thr[i] = t;
      f[i] = 1.0 / (1.0 + std::exp(-cfg.kappa * (x[i] - t - 0.5)));
      if (cfg.operating == LspeOperating::randomised) {
        const uint32_t word =
            i < 4 ? words.w[i]
                  : philox_words(cfg.seed, uint32_t(i), step, rep, Stream::lspe, 1).w[0];
        crawled[i] = uniform(word) < f[i];
      }
    }
    if (cfg.operating == LspeOperating::top) {
      for (std::size_t i = 0; i < n; ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t a, std::size_t b) { return x[a] - thr[a] > x[b] - thr[b]; });
      std::fill(crawled.begin(), crawled.end(), uint8_t(0));
      for (std::size_t j = 0; j < cfg.top; ++j) crawled[order[j]] = 1;
    }
    for (std::size_t i = 0; i < n; ++i) {
      const double t = thr[i];
      state_sum += x[i];
      if (crawled[i]) reward += x[i], crawls += 1.0;
      if (step >= cfg.steps / 2 || cfg.trace) {
        const double exact = exact_threshold(x, i, p);
        if (step >= cfg.steps / 2 && p[i].u_star > 0) gap_sum += std::fabs(t - exact) / p[i].u_star;
        if (cfg.trace) {
          out.trace_state.push_back(x[i]), out.trace_learned.push_back(t);
          out.trace_exact.push_back(exact), out.trace_crawled.push_back(crawled[i]);
        }
      }
    }
    for (std::size_t i = 0; i < n; ++i)
      next[i] = crawled[i] ? drift(p[i]) : passive_next(x[i], drift(p[i]), p[i]);
    reward_sum += reward;
    if (step >= cfg.steps / 2) reward_last += reward;
    if (!cfg.learn) {  // the untrained policy: same draws, thresholds kept
      x = next;
      continue;
    }
    // Critic: LSPE(0) for the average reward.
    const std::vector<double> phi = features(x), phi_next = features(next);
    const double g = cfg.critic == LspeCritic::paper ? state_sum : reward;
    eta += b_n * (g - eta);
    for (std::size_t r = 0; r < l; ++r) {
      for (std::size_t c = 0; c < l; ++c) {
        b_mat[r][c] += b_n * (phi[r] * phi[c] - b_mat[r][c]);
        a_mat[r][c] += b_n * (phi[r] * (phi_next[c] - phi[c]) - a_mat[r][c]);
      }
      c_vec[r] += b_n * (phi[r] * (g - eta) - c_vec[r]);
    }
    std::vector<double> rhs(l, 0.0);  // A w + c
    for (std::size_t r = 0; r < l; ++r) {
      double s = c_vec[r];
      for (std::size_t c = 0; c < l; ++c) s += a_mat[r][c] * w[c];
      rhs[r] = s;
    }
    // Tikhonov: (B'B + delta I) d = B' rhs.
    Matrix btb(l, std::vector<double>(l, 0.0));
    std::vector<double> btr(l, 0.0);
    for (std::size_t r = 0; r < l; ++r) {
      for (std::size_t c = 0; c < l; ++c) {
        double s = 0.0;
        for (std::size_t k = 0; k < l; ++k) s += b_mat[k][r] * b_mat[k][c];
        btb[r][c] = s + (r == c ? cfg.tikhonov : 0.0);
      }
      double s = 0.0;
      for (std::size_t k = 0; k < l; ++k) s += b_mat[k][r] * rhs[k];
      btr[r] = s;
    }
    const std::vector<double> d = solve(btb, btr);
    for (std::size_t r = 0; r < l; ++r) w[r] += cfg.gamma * d[r];
    // Actor: stochastic gradient ascent on the thresholds (eq. 9).
    double value_next = 0.0;
    for (std::size_t r = 0; r < l; ++r) value_next += w[r] * phi_next[r];
    for (std::size_t i = 0; i < n; ++i) {
      const double dlog = crawled[i] ? -cfg.kappa * (1.0 - f[i]) : cfg.kappa * f[i];
      for (int j = 0; j < 3; ++j) q[3 * i + j] += a_n * dlog * psi[3 * i + j] * value_next;
    }
    x = next;
    bool finite = std::isfinite(eta);
    for (double v : w) finite = finite && std::isfinite(v);
    for (double v : q) finite = finite && std::isfinite(v);
    if (!finite) {
      out.finite = false;
      break;
    }
  }
  out.mean_reward = reward_sum / double(cfg.steps);
  out.mean_reward_last = reward_last / double(cfg.steps - cfg.steps / 2);
  out.mean_crawls = crawls / double(cfg.steps);
  out.threshold_gap = gap_sum / double(n) / double(cfg.steps - cfg.steps / 2);
  for (std::size_t i = 0; i < n; ++i) {
    double ps[3];
    psi_of(x, i, ps);
    const double t = q[3 * i] + q[3 * i + 1] * ps[1] + q[3 * i + 2] * ps[2];
    out.thresholds.push_back(std::min(p[i].u_star, std::max(drift(p[i]), t)));
  }
  return out;
}

LspeExperiment lspe_experiment(const Problem& pr, const LspeConfig& cfg) {
  validate(pr, cfg);  // before the parallel loop: nothing may throw inside it but the runs
  LspeExperiment e;
  e.runs.resize(cfg.replications), e.untrained.resize(cfg.replications);
  LspeConfig fixed = cfg;
  fixed.learn = false, fixed.trace = false;
  ParallelErrors errors;
#pragma omp parallel for schedule(dynamic, 1)
  for (uint32_t r = 0; r < cfg.replications; ++r)
    errors.run([&] {
      LspeConfig c = cfg;
      c.trace = r == 0 && cfg.trace;
      e.runs[r] = lspe_run(pr, c, r);
      e.untrained[r] = lspe_run(pr, fixed, r);
    });
  errors.rethrow();
  for (uint32_t r = 0; r < cfg.replications; ++r) {
    e.reward.push_back(e.runs[r].mean_reward);
    e.reward_last.push_back(e.runs[r].mean_reward_last);
    e.crawls.push_back(e.runs[r].mean_crawls);
    e.untrained_reward.push_back(e.untrained[r].mean_reward);
    e.threshold_gap.push_back(e.runs[r].threshold_gap);
    e.finite = e.finite && e.runs[r].finite;
  }
  const Summary sr = summarize_replications(e.reward, kNonNegative),
                sl = summarize_replications(e.reward_last, kNonNegative),
                sc = summarize_replications(e.crawls, kNonNegative),
                sb = summarize_replications(e.untrained_reward, kNonNegative),
                sg = summarize_replications(e.threshold_gap, kNonNegative);
  e.mean_reward = sr.mean, e.ci_low = sr.ci_low, e.ci_high = sr.ci_high;
  e.mean_reward_last = sl.mean, e.last_ci_low = sl.ci_low, e.last_ci_high = sl.ci_high;
  e.mean_crawls = sc.mean, e.crawls_ci_low = sc.ci_low, e.crawls_ci_high = sc.ci_high;
  e.untrained_mean = sb.mean, e.untrained_ci_low = sb.ci_low, e.untrained_ci_high = sb.ci_high;
  e.mean_threshold_gap = sg.mean;
  return e;
}

}  // namespace crawleval
