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

struct LawName {
  UtilityLaw law;
  const char* name;
  const char* shape;  ///< what the parameter is called (nullptr: none)
};
constexpr LawName kLaws[] = {{UtilityLaw::deterministic, "deterministic", nullptr},
                             {UtilityLaw::exponential, "exponential", nullptr},
                             {UtilityLaw::lognormal, "lognormal", "sigma"},
                             {UtilityLaw::pareto, "pareto", "tail index a"},
                             {UtilityLaw::gamma, "gamma", "shape k"},
                             {UtilityLaw::empirical, "empirical", nullptr}};

const LawName& name_of(UtilityLaw law) {
  for (const LawName& l : kLaws)
    if (l.law == law) return l;
  return kLaws[1];
}

}  // namespace

const char* const kUtilityChoices =
    "deterministic, exponential, lognormal:SIGMA, pareto:A, gamma:K, empirical:FILE";

const char* utility_law_name(UtilityLaw law) { return name_of(law).name; }
const char* utility_law_shape(UtilityLaw law) { return name_of(law).shape; }
std::optional<UtilityLaw> utility_law_named(const std::string& name) {
  for (const LawName& l : kLaws)
    if (name == l.name) return l.law;
  return std::nullopt;
}

std::string utility_shape_error(UtilityLaw law, double shape) {
  const char* what = name_of(law).shape;
  auto outside = [&](const char* range, const char* why) {
    return std::string("the ") + name_of(law).name + " law's " + what + " must be in " + range +
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
  const std::string head = s.substr(0, colon);
  for (const LawName& l : kLaws) {
    if (head != l.name || l.law == UtilityLaw::empirical) continue;
    if (!l.shape) {
      if (colon != std::string::npos) return std::nullopt;
      return UtilityDist::of(l.law);
    }
    if (colon == std::string::npos) return std::nullopt;
    const std::string arg = s.substr(colon + 1);
    double v = 0.0;
    const auto [ptr, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), v);
    if (arg.empty() || ec != std::errc() || ptr != arg.data() + arg.size()) return std::nullopt;
    if (!utility_shape_error(l.law, v).empty()) return std::nullopt;
    return UtilityDist::of(l.law, v);
  }
  return std::nullopt;
}

std::string to_string(const UtilityDist& d) {
  const LawName& l = name_of(d.law);
  if (!l.shape) return l.name;
  std::ostringstream os;
  os << l.name << ":" << shown_number(d.shape);
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
