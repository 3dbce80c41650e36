// The utility laws of the stochastic model (rng.hpp, UtilityDist): names, shapes, and the figures
// validation and the tests need (largest draw, second moment). The settings that read a table's
// file: host/io/utility_table.cpp.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <sstream>

#include "crawleval/base/error.hpp"
#include "crawleval/model/problem.hpp"

namespace crawleval {

namespace {

/// What a law's parameter is called (nullptr: none) and how a setting writes it; its name is
/// EnumNames<UtilityLaw>'s.
struct LawShape {
  UtilityLaw law;
  const char* shape;
  const char* placeholder;
};
constexpr LawShape kShapes[] = {{UtilityLaw::lognormal, "sigma", "SIGMA"},
                                {UtilityLaw::pareto, "tail index a", "A"},
                                {UtilityLaw::gamma, "shape k", "K"},
                                {UtilityLaw::empirical, nullptr, "FILE"}};

const LawShape* shape_of(UtilityLaw law) {
  for (const LawShape& l : kShapes)
    if (l.law == law) return &l;
  return nullptr;
}

}  // namespace

std::string utility_choices() {
  std::string out;
  for (const EnumName<UtilityLaw>& l : EnumNames<UtilityLaw>::table) {
    out += out.empty() ? "" : ", ";
    out += l.name;
    if (const LawShape* s = shape_of(l.value)) out += std::string(":") + s->placeholder;
  }
  return out;
}

const char* utility_law_shape(UtilityLaw law) {
  const LawShape* s = shape_of(law);
  return s ? s->shape : nullptr;
}

std::string utility_shape_error(UtilityLaw law, double shape) {
  const char* what = utility_law_shape(law);
  auto outside = [&](const char* range, const char* why) {
    return std::string("the ") + utility_law_name(law) + " law's " + what + " must be in " + range +
           " (" + why + "), not " + shown_number(shape);
  };
  switch (law) {
    case UtilityLaw::lognormal:
      if (!(shape > 0.0 && shape <= 5.0))
        return outside("(0, 5]",
                       "beyond 5 the draws' finite resolution would cut the tail that carries "
                       "the mean");
      return {};
    case UtilityLaw::pareto:
      if (!(shape >= 1.5 && shape <= 1e6))
        return outside("[1.5, 1e6]",
                       "a finite mean needs a > 1, and below 1.5 the draws' finite resolution "
                       "would cut the tail that carries it by more than 1e-6");
      return {};
    case UtilityLaw::gamma:
      if (!(shape >= 0.01 && shape <= 1e6)) return outside("[0.01, 1e6]", "the sampler's range");
      return {};
    default:
      return {};
  }
}

std::optional<UtilityDist> parse_utility(const std::string& s) {
  const std::size_t colon = s.find(':');
  const std::optional<UtilityLaw> law = utility_law_named(s.substr(0, colon));
  if (!law || *law == UtilityLaw::empirical) return std::nullopt;
  if (!utility_law_shape(*law)) {
    if (colon != std::string::npos) return std::nullopt;
    return UtilityDist::of(*law);
  }
  if (colon == std::string::npos) return std::nullopt;
  const std::string arg = s.substr(colon + 1);
  double v = 0.0;
  const auto [ptr, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), v);
  if (arg.empty() || ec != std::errc() || ptr != arg.data() + arg.size()) return std::nullopt;
  if (!utility_shape_error(*law, v).empty()) return std::nullopt;
  return UtilityDist::of(*law, v);
}

std::string to_string(const UtilityDist& d) {
  if (!utility_law_shape(d.law)) return utility_law_name(d.law);
  std::ostringstream os;
  os << utility_law_name(d.law) << ":" << shown_number(d.shape);
  return os.str();
}

std::string utility_setting(const RunConfig& cfg) {
  if (cfg.utility.law == UtilityLaw::empirical && cfg.utility_table)
    return "empirical:" + cfg.utility_table->origin;
  return to_string(cfg.utility);
}

double utility_max_ratio(const UtilityDist& d) {
  switch (d.law) {
    case UtilityLaw::deterministic:
      return 1.0;
    case UtilityLaw::exponential:
      return 23.0;  // -log of the smallest uniform, 2^-33
    case UtilityLaw::lognormal:
      // |N| <= sqrt(-2 log S) with S >= 2^-105: N^2/2 <= 73, and sigma N - sigma^2/2 <= N^2/2.
      return std::exp(73.0);
    case UtilityLaw::pareto:
      return (d.shape - 1.0) / d.shape * std::exp2(65.0 / d.shape);
    case UtilityLaw::gamma: {
      // Marsaglia-Tsang returns d (1 + c N)^3 with |N| <= 12.1, c = 1/sqrt(9 d); k < 1 runs it
      // at k + 1 and multiplies by a uniform power <= 1; then / k.
      const double k = d.shape, dd = (k >= 1.0 ? k : k + 1.0) - 1.0 / 3.0;
      const double t = 1.0 + 12.1 / std::sqrt(9.0 * dd);
      return dd * t * t * t / k;
    }
    case UtilityLaw::empirical:
      return d.atoms ? d.table[2 * d.atoms - 1] : 1.0;
  }
  return 1.0;
}

double utility_second_moment(const UtilityDist& d) {
  switch (d.law) {
    case UtilityLaw::deterministic:
      return 1.0;
    case UtilityLaw::exponential:
      return 2.0;
    case UtilityLaw::lognormal:
      return std::exp(d.shape * d.shape);
    case UtilityLaw::pareto: {
      const double a = d.shape;
      if (a <= 2.0) return HUGE_VAL;
      return (a - 1.0) * (a - 1.0) / (a * (a - 2.0));
    }
    case UtilityLaw::gamma:
      return 1.0 + 1.0 / d.shape;
    case UtilityLaw::empirical: {
      double m2 = 0.0, prev = 0.0;
      for (uint32_t j = 0; j < d.atoms; ++j) {
        const double v = d.table[d.atoms + j];
        m2 += (d.table[j] - prev) * v * v;
        prev = d.table[j];
      }
      return m2;
    }
  }
  return 1.0;
}

}  // namespace crawleval
