// The stochastic model's Whittle index, computed numerically
// (include/crawleval/analysis/stochastic_index.hpp explains the method and numbers its steps; the
// comments below refer to them).
#include "crawleval/analysis/stochastic_index.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <map>
#include <sstream>
#include <utility>

#include "crawleval/base/error.hpp"

namespace crawleval {

// ---- the item law's quantisation (step 1) ----------------------------------------------------

namespace {

/// Q(a, x) for x >= a + 1 by its continued fraction (modified Lentz); lead = log(x^a e^-x /
/// Gamma(a)).
double gamma_q_fraction(double a, double x, double lead) {
  const double tiny = 1e-300;
  double b = x + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, f = d;
  for (int n = 1; n < 100000; ++n) {
    const double an = -n * (n - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1.0 / d;
    const double delta = d * c;
    f *= delta;
    if (std::fabs(delta - 1.0) < 1e-16) break;
  }
  return std::exp(lead) * f;
}

}  // namespace

double regularized_gamma_p(double a, double x) {
  if (!(x > 0.0)) return 0.0;
  const double lead = a * std::log(x) - x - std::lgamma(a);
  if (x < a + 1.0) {  // series: P = e^-x x^a / Gamma(a + 1) sum x^n / ((a + 1) ... (a + n))
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 100000; ++n) {
      term *= x / (a + n);
      sum += term;
      if (term < sum * 1e-17) break;
    }
    return std::min(1.0, sum * std::exp(lead));
  }
  return std::max(0.0, 1.0 - gamma_q_fraction(a, x, lead));
}

namespace {

/// Q(a, x) = 1 - P(a, x) without the cancellation of 1 - P in the upper tail.
double regularized_gamma_q(double a, double x) {
  if (!(x > 0.0)) return 1.0;
  if (x < a + 1.0) return 1.0 - regularized_gamma_p(a, x);
  return std::min(1.0, gamma_q_fraction(a, x, a * std::log(x) - x - std::lgamma(a)));
}

double normal_tail(double t) { return 0.5 * std::erfc(t / std::sqrt(2.0)); }

/// P(Z > z) and E[Z; Z > z] of a parametric law (mean 1), each computed without cancellation.
struct Tail {
  double prob, mean;
};
Tail upper_tail(const UtilityDist& d, double z) {
  switch (d.law) {
    case UtilityLaw::exponential:
      return {std::exp(-z), std::exp(-z) * (1.0 + z)};
    case UtilityLaw::lognormal: {
      const double s = d.shape, l = std::log(z);
      return {normal_tail((l + 0.5 * s * s) / s), normal_tail((l - 0.5 * s * s) / s)};
    }
    case UtilityLaw::pareto: {
      const double a = d.shape, zm = (a - 1.0) / a;
      if (z <= zm) return {1.0, 1.0};
      return {std::pow(zm / z, a), std::pow(zm / z, a - 1.0)};
    }
    case UtilityLaw::gamma: {
      const double k = d.shape;
      return {regularized_gamma_q(k, k * z), regularized_gamma_q(k + 1.0, k * z)};
    }
    default:
      return {z < 1.0 ? 1.0 : 0.0, z < 1.0 ? 1.0 : 0.0};
  }
}
/// P(Z <= z) and E[Z; Z <= z], accurate in the lower tail.
Tail lower_tail(const UtilityDist& d, double z) {
  switch (d.law) {
    case UtilityLaw::exponential:
      return {-std::expm1(-z), -std::expm1(-z) - z * std::exp(-z)};
    case UtilityLaw::lognormal: {
      const double s = d.shape, l = std::log(z);
      return {normal_tail(-(l + 0.5 * s * s) / s), normal_tail(-(l - 0.5 * s * s) / s)};
    }
    case UtilityLaw::gamma: {
      const double k = d.shape;
      return {regularized_gamma_p(k, k * z), regularized_gamma_p(k + 1.0, k * z)};
    }
    default: {
      const Tail u = upper_tail(d, z);
      return {1.0 - u.prob, 1.0 - u.mean};
    }
  }
}

}  // namespace

LawAtoms utility_atoms(const UtilityDist& d, std::size_t bins) {
  LawAtoms out;
  if (d.law == UtilityLaw::deterministic) {
    out.z = {1.0}, out.p = {1.0};
    return out;
  }
  if (d.law == UtilityLaw::empirical) {
    double prev = 0.0;
    for (uint32_t j = 0; j < d.atoms; ++j) {
      out.z.push_back(d.table[d.atoms + j]);
      out.p.push_back(d.table[j] - prev);
      prev = d.table[j];
    }
    return out;
  }
  double lo = 1e-10, hi = 60.0;
  switch (d.law) {
    case UtilityLaw::lognormal:
      lo = std::exp(-0.5 * d.shape * d.shape - 10.0 * d.shape);
      hi = std::exp(-0.5 * d.shape * d.shape + 10.0 * d.shape);
      break;
    case UtilityLaw::pareto:
      lo = (d.shape - 1.0) / d.shape;
      hi = lo * std::pow(1e14, 1.0 / d.shape);
      break;
    case UtilityLaw::gamma:
      hi = (d.shape + 40.0 + 40.0 * std::sqrt(d.shape)) / d.shape;
      lo = std::min(1e-10, 1e-3 * hi);
      break;
    default:
      break;
  }
  // Mean-preserving quantisation: each bin's conditional mean carries the bin's mass.
  auto add = [&](double p, double m, double a, double b) {
    if (!(p > 0.0)) return;
    out.p.push_back(p);
    out.z.push_back(std::clamp(m / p, a, b));
  };
  const Tail below = lower_tail(d, lo);
  add(below.prob, below.mean, 0.0, lo);
  const double ratio = std::pow(hi / lo, 1.0 / double(bins));
  for (std::size_t j = 0; j < bins; ++j) {
    const double a = lo * std::pow(ratio, double(j));
    const double b = j + 1 == bins ? hi : lo * std::pow(ratio, double(j + 1));
    const Tail ua = upper_tail(d, a), ub = upper_tail(d, b);
    if (ua.prob > 0.5) {  // lower half: differences of the lower tail keep their digits
      const Tail la = lower_tail(d, a), lb = lower_tail(d, b);
      add(lb.prob - la.prob, lb.mean - la.mean, a, b);
    } else {
      add(ua.prob - ub.prob, ua.mean - ub.mean, a, b);
    }
  }
  const Tail above = upper_tail(d, hi);
  add(above.prob, above.mean, hi, HUGE_VAL);
  // Rounding aside the atoms' probabilities sum to 1 and their mean is 1: make it exact.
  double sp = 0.0, sm = 0.0;
  for (std::size_t j = 0; j < out.p.size(); ++j) sp += out.p[j], sm += out.p[j] * out.z[j];
  for (std::size_t j = 0; j < out.p.size(); ++j) out.p[j] /= sp, out.z[j] *= sp / sm;
  return out;
}

// ---- the arrivals on the lattice (step 1) ----------------------------------------------------

namespace {

/// E[(t - W)^+] for W = exp(-mu T s), s uniform on (0, 1): density 1 / (mu T w) on [alpha, 1].
double stop_loss_w(double t, double alpha, double mu_t) {
  if (t <= alpha) return 0.0;
  if (t >= 1.0) return t - (-std::expm1(-mu_t)) / mu_t;
  const double r = (t - alpha) / alpha;  // t log(t / alpha) - (t - alpha), without cancellation
  return (t * std::log1p(r) - (t - alpha)) / mu_t;
}

}  // namespace

ArrivalLattice arrival_lattice(double lambda_t, double mu_t, const UtilityDist& law, double h,
                               std::size_t size) {
  CE_EXPECTS(h > 0.0 && size >= 2, "internal: arrival_lattice needs h > 0 and two points");
  ArrivalLattice out;
  out.h = h;
  const double alpha = std::exp(-mu_t), ew = -std::expm1(-mu_t) / mu_t;  // E[W]
  out.mean = lambda_t * ew;
  // The item Y = z W on the lattice: E[hat_k(Y)] = (S((k+1)h) - 2 S(kh) + S((k-1)h)) / h with
  // S(y) = E[(y - Y)^+] = z stop_loss_w(y / z).
  const LawAtoms atoms = utility_atoms(law);
  std::vector<double> f(size, 0.0);
  for (std::size_t a = 0; a < atoms.z.size(); ++a) {
    const double z = atoms.z[a], p = atoms.p[a];
    if (!(z > 0.0)) {
      f[0] += p;
      continue;
    }
    if (z * alpha / h >= double(size)) continue;  // wholly beyond the lattice
    auto S = [&](double y) { return y <= 0.0 ? 0.0 : z * stop_loss_w(y / z, alpha, mu_t); };
    const std::size_t k0 = std::size_t(std::max(0.0, std::floor(z * alpha / h) - 1.0));
    const std::size_t k1 = std::min(size - 1, std::size_t(std::ceil(z / h) + 1.0));
    for (std::size_t k = k0; k <= k1; ++k) {
      const double y = double(k) * h;
      const double w = (S(y + h) - 2.0 * S(y) + S(y - h)) / h;
      if (w > 0.0) f[k] += p * w;
    }
  }
  // Panjer's recursion for the compound Poisson sum: phi_0 = exp(-lambda T (1 - f_0)),
  // phi_k = lambda T / k sum_{j=1..k} j f_j phi_(k-j). Kept as stored values times e^scale so that
  // large lambda T neither underflows phi_0 nor overflows later terms.
  std::vector<double> phi(size, 0.0);
  double scale = -lambda_t * (1.0 - f[0]);
  phi[0] = 1.0;
  for (std::size_t k = 1; k < size; ++k) {
    double s = 0.0;
    for (std::size_t j = 1; j <= k; ++j) s += double(j) * f[j] * phi[k - j];
    phi[k] = lambda_t / double(k) * s;
    if (phi[k] > 1e200) {
      for (std::size_t j = 0; j <= k; ++j) phi[j] *= 1e-200;
      scale += 200.0 * std::log(10.0);
    }
  }
  double mass = 0.0, mean = 0.0;
  for (std::size_t k = 0; k < size; ++k) {
    phi[k] = phi[k] > 0.0 ? std::exp(std::log(phi[k]) + scale) : 0.0;
    mass += phi[k];
    mean += phi[k] * double(k) * h;
  }
  out.pmf = std::move(phi);
  out.beyond_mass = std::max(0.0, 1.0 - mass);
  out.beyond_mean = std::max(0.0, out.mean - mean);
  return out;
}

// ---- the index table (steps 2-5) -------------------------------------------------------------

double IndexTable::at(double x) const {
  const std::size_t g = index.size();
  if (g == 0) return x;
  if (!(x > 0.0)) return index[0];
  const double r = x / h;
  if (r >= double(g - 1)) return index[g - 1] + (x - double(g - 1) * h);
  const std::size_t m = std::size_t(r);
  const double t = r - double(m);
  return index[m] + t * (index[m + 1] - index[m]);
}

double IndexTable::relaxed_gain(double c) const {
  double best = c;  // never crawl
  for (std::size_t b = 0; b < cycle_length.size(); ++b)
    best = std::max(best, c + (cycle_reward[b] - c) / cycle_length[b]);
  return best;
}

IndexTable stochastic_index_table(double lambda_t, double mu_t, const UtilityDist& law,
                                  const StochasticIndexOptions& options) {
  const std::size_t G = options.grid;
  CE_EXPECTS(G >= 8 && G <= 4000, "the index lattice needs between 8 and 4000 states");
  CE_EXPECTS(lambda_t > 0.0 && mu_t > 0.0, "internal: a class needs arrivals and decay");
  const double alpha = std::exp(-mu_t), u_star = lambda_t / mu_t;
  const double m2 = std::min(utility_second_moment(law), 1e4);
  const double sd = std::sqrt(lambda_t * m2 / (2.0 * mu_t));  // the never-crawled state's
  double top = options.top > 0.0 ? options.top * u_star : u_star + 8.0 * sd;
  if (!(options.top > 0.0) && !std::isfinite(utility_second_moment(law)))
    top = std::max(top, 5.0 * u_star);
  const double h = top / double(G - 1);
  // The lattice must resolve an epoch's content: a step above a quarter of U's standard deviation
  // (slow decay: a state range of u* against small arrivals; many arrivals: U nearly constant)
  // would replace the arrivals' law by the lattice's own spreading.
  const double sd_u = std::sqrt(lambda_t * m2 * -std::expm1(-2.0 * mu_t) / (2.0 * mu_t));
  if (options.require_resolution && h > 0.25 * sd_u) {
    const double need = std::ceil(4.0 * top / sd_u) + 1.0;
    std::ostringstream os;
    os << "the numerical index's lattice cannot resolve the arrivals of the class lambda T = "
       << lambda_t << ", mu T = " << mu_t << ": its step " << h
       << " is above a quarter of their standard deviation " << sd_u
       << " (both in units of the sources' xi); it needs " << need << " states"
       << (need <= 4000.0 ? " (--index-grid)" : ", more than the 4000 allowed")
       << (sd_u < 0.05 * u_star * -std::expm1(-mu_t)
               ? "; with arrivals this regular Theorem 1's index (--policy whittle) is close"
               : "");
    throw InputError(os.str());
  }
  IndexTable t;
  t.h = h;
  const ArrivalLattice U = arrival_lattice(lambda_t, mu_t, law, h, G);
  t.u = U.mean;
  const double u = U.mean;

  // Step 2: P (row-major), its rows' lattice sums.
  std::vector<double> s(G);
  for (std::size_t i = 0; i < G; ++i) s[i] = double(i) * h;
  std::vector<double> P(G * G, 0.0);
  for (std::size_t i = 0; i < G; ++i) {
    const double y = alpha * s[i] / h;
    const std::size_t f = std::size_t(y);
    const double th = y - double(f);
    double* row = &P[i * G];
    for (std::size_t k = 0; f + k < G; ++k) {
      row[f + k] += (1.0 - th) * U.pmf[k];
      if (f + k + 1 < G) row[f + k + 1] += th * U.pmf[k];
    }
  }
  // Step 3: A = I - P = L U in place (no pivoting: rows of I - P are diagonally dominant).
  std::vector<double> A(G * G);
  for (std::size_t i = 0; i < G * G; ++i) A[i] = -P[i];
  for (std::size_t i = 0; i < G; ++i) A[i * G + i] += 1.0;
  for (std::size_t k = 0; k < G; ++k) {
    const double* rk = &A[k * G];
    const double piv = rk[k];
    if (!(piv > 0.0)) {
      // A state the chain never leaves: in double precision an epoch without arrivals is certain
      // (exp(-lambda T) rounds to 1 for lambda T below about 1e-16), so no threshold's cycle ends.
      std::ostringstream os;
      os << "the numerical index cannot be computed for the class lambda T = " << lambda_t
         << ", mu T = " << mu_t << ": on its lattice of " << G << " states a state is never left"
         << (std::exp(-lambda_t) == 1.0
                 ? " (an arrival per epoch is less likely than double precision resolves)"
                 : "")
         << "; Theorem 1's index (--policy whittle) applies";
      throw InputError(os.str());
    }
    for (std::size_t i = k + 1; i < G; ++i) {
      double* ri = &A[i * G];
      const double l = ri[k] / piv;
      ri[k] = l;
      if (l == 0.0) continue;
      for (std::size_t j = k + 1; j < G; ++j) ri[j] -= l * rk[j];
    }
  }
  auto forward_l = [&](std::vector<double>& v) {  // v <- L^-1 v (unit lower)
    for (std::size_t i = 0; i < G; ++i) {
      double acc = v[i];
      const double* ri = &A[i * G];
      for (std::size_t k = 0; k < i; ++k) acc -= ri[k] * v[k];
      v[i] = acc;
    }
  };
  std::vector<double> y(G, 1.0), vv(G);
  forward_l(y);
  for (std::size_t i = 0; i < G; ++i) vv[i] = alpha * s[i] + u;
  forward_l(vv);
  // Z = L^-1 P by rows, then its prefix sums along each row: Qc(i, b) = sum_{j<b} Z_ij and
  // Qx(i, b) = sum_{j<b} Z_ij s_j, stored at [i * (G + 1) + b].
  std::vector<double> Z(P);
  for (std::size_t i = 0; i < G; ++i) {
    double* zi = &Z[i * G];
    const double* li = &A[i * G];
    for (std::size_t k = 0; k < i; ++k) {
      const double l = li[k];
      if (l == 0.0) continue;
      const double* zk = &Z[k * G];
      for (std::size_t j = 0; j < G; ++j) zi[j] -= l * zk[j];
    }
  }
  std::vector<double> Qc(G * (G + 1)), Qx(G * (G + 1));
  for (std::size_t i = 0; i < G; ++i) {
    double c = 0.0, x = 0.0;
    Qc[i * (G + 1)] = 0.0, Qx[i * (G + 1)] = 0.0;
    for (std::size_t j = 0; j < G; ++j) {
      c += Z[i * G + j];
      x += Z[i * G + j] * s[j];
      Qc[i * (G + 1) + j + 1] = c;
      Qx[i * (G + 1) + j + 1] = x;
    }
  }
  Z.clear();
  Z.shrink_to_fit();
  // w^T U_b = p^T (U: the upper factor with its diagonal), for the first b entries of p.
  std::vector<double> w(G);
  auto solve_upper_t = [&](const double* p, std::size_t b) {
    for (std::size_t j = 0; j < b; ++j) {
      double acc = p[j];
      for (std::size_t k = 0; k < j; ++k) acc -= w[k] * A[k * G + j];
      w[j] = acc / A[j * G + j];
    }
  };
  // With w for a start distribution p restricted below b: the expected epochs to the crawl and
  // what it collects, N and S of the header's step 3.
  auto cycle = [&](const double* p, std::size_t b, double first, double* len, double* rew) {
    double mass_below = 0.0, mean_below = 0.0;
    for (std::size_t j = 0; j < b; ++j) mass_below += p[j], mean_below += p[j] * s[j];
    double l = 1.0 - mass_below, r = first - mean_below;
    for (std::size_t i = 0; i < b; ++i) {
      l += w[i] * (2.0 * y[i] - Qc[i * (G + 1) + b]);
      r += w[i] * (vv[i] - Qx[i * (G + 1) + b]);
    }
    *len = l, *rew = r;
  };
  t.cycle_length.resize(G), t.cycle_reward.resize(G);
  t.continue_length.resize(G), t.continue_reward.resize(G), t.index.resize(G);
  solve_upper_t(U.pmf.data(), G);  // the fresh start's w is prefix-consistent: one solve
  const std::vector<double> w_fresh = w;
  for (std::size_t b = 0; b < G; ++b) {
    w.assign(w_fresh.begin(), w_fresh.end());
    cycle(U.pmf.data(), b, u, &t.cycle_length[b], &t.cycle_reward[b]);
  }
  for (std::size_t m = 0; m < G; ++m) {
    const std::size_t b = m + 1;
    solve_upper_t(&P[m * G], b);
    cycle(&P[m * G], b, alpha * s[m] + u, &t.continue_length[m], &t.continue_reward[m]);
    // Step 4.
    t.index[m] = t.cycle_reward[m] -
                 t.cycle_length[m] * (t.continue_reward[m] - s[m]) / t.continue_length[m];
  }
  // Step 5: the index must not decrease (a relative tolerance for the solves' rounding).
  for (std::size_t m = 1; m < G; ++m) {
    const double tol = 1e-9 * (std::fabs(t.index[m - 1]) + u);
    if (t.index[m] < t.index[m - 1] - tol) {
      std::ostringstream os;
      os << "the index decreases from " << t.index[m - 1] << " at x = " << s[m - 1] << " to "
         << t.index[m] << " at x = " << s[m] << " (lambda T " << lambda_t << ", mu T " << mu_t
         << ", xi = 1)";
      t.indexable = false;
      t.not_indexable = os.str();
      break;
    }
  }
  return t;
}

// ---- a problem's classes ---------------------------------------------------------------------

double StochasticIndex::index(std::size_t i, double x, const Problem& pr) const {
  const SourceParams p = pr.params().at(i);
  if (class_of[i] == kNoClass) return x * p.inv_cost;
  return tables[class_of[i]].at(x / p.xi) * p.xi * p.inv_cost;
}

bool StochasticIndex::indexable() const {
  for (const IndexTable& t : tables)
    if (!t.indexable) return false;
  return true;
}

StochasticIndex compute_stochastic_index(const Problem& pr, const StochasticIndexOptions& options,
                                         std::size_t max_classes) {
  const auto t0 = std::chrono::steady_clock::now();
  const RunConfig& cfg = pr.config;
  if (cfg.model != Model::stochastic)
    throw InputError(
        "the numerical Whittle index is the stochastic model's (--model stochastic); the "
        "deterministic model's index is Theorem 1's, exactly (--policy whittle)");
  if (cfg.observe != Observe::full)
    throw InputError(
        "the numerical Whittle index is for full observation: under belief the observed state "
        "moves deterministically and Theorem 1's index is exact for it (--policy whittle)");
  if (pr.observe_column_applies()) {
    const std::vector<uint8_t>& seen = pr.population->observe;
    const auto belief = std::find(seen.begin(), seen.end(), uint8_t(0));
    if (belief != seen.end())
      throw InputError(
          printable(pr.population->origin, 256) + ": source " +
          std::to_string(pr.population->id_of(std::size_t(belief - seen.begin()))) +
          " is observed as a belief (the observe column): the numerical Whittle index is for "
          "full observation (whittle_mixed scores belief sources by their expected state)");
  }
  if (pr.has_expiry)
    throw InputError("the numerical Whittle index does not model content expiry yet");
  StochasticIndex out;
  const std::size_t n = pr.size();
  out.class_of.assign(n, StochasticIndex::kNoClass);
  std::map<std::pair<double, double>, uint32_t> classes;
  std::vector<std::pair<double, double>> keys;
  for (std::size_t i = 0; i < n; ++i) {
    const SourceParams p = pr.params().at(i);
    if (!(p.lambda_t > 0.0) || !(p.xi > 0.0)) continue;
    const auto key = std::make_pair(p.lambda_t, p.mu_t);
    auto it = classes.find(key);
    if (it == classes.end()) {
      if (classes.size() >= max_classes)
        throw InputError(
            "the numerical Whittle index is computed per class of sources with the same lambda "
            "T and mu T; " +
            printable(pr.population->origin, 256) + " has more than " +
            std::to_string(max_classes) + " classes");
      it = classes.emplace(key, uint32_t(keys.size())).first;
      keys.push_back(key);
    }
    out.class_of[i] = it->second;
  }
  out.tables.resize(keys.size());
  std::vector<std::exception_ptr> failed(keys.size());  // no exception crosses the region
#pragma omp parallel for schedule(dynamic, 1)
  for (std::size_t c = 0; c < keys.size(); ++c) {
    try {
      out.tables[c] = stochastic_index_table(keys[c].first, keys[c].second, cfg.utility, options);
    } catch (...) {
      failed[c] = std::current_exception();
    }
  }
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

ScoreFn stochastic_index_policy(const Problem& pr, const StochasticIndex& index) {
  return [&pr, &index](const ScoreRequest& r) {
    for (std::size_t i = 0; i < r.n; ++i) r.scores[i] = index.index(i, r.state[i], pr);
  };
}

}  // namespace crawleval
