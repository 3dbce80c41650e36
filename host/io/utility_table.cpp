// The utility laws' settings: --utility (and Python's `utility=`) with the empirical law's table
// read from its file (the laws' names and figures: host/model/utility_law.cpp).
#include <algorithm>
#include <charconv>
#include <cmath>

#include "crawleval/base/error.hpp"
#include "crawleval/io/io.hpp"
#include "crawleval/model/problem.hpp"
#include "io/text_fields.hpp"

namespace crawleval {

namespace {

struct LawText {
  const char* name;
  const char* shape;
};

/// The empirical law's file: columns value and probability (any order, any case).
std::shared_ptr<UtilityTable> read_table(const std::string& path) {
  const std::string data = read_text_file(path);
  enum { kValue, kProbability };
  const char* const names[] = {"value", "probability"};
  std::vector<std::pair<double, double>> rows;
  text::read_csv_rows(
      data, path, names, 2, {kValue, kProbability},
      "(the empirical utility law's table has the columns value and probability)",
      [&](const std::vector<std::string_view>& f, const std::vector<int>& pos,
          const text::Location& loc) {
        const double v = text::parse_number(f[std::size_t(pos[kValue])], loc, "value");
        const double p = text::parse_number(f[std::size_t(pos[kProbability])], loc, "probability");
        if (v < 0) throw InputError(loc.at("value") + " must be >= 0");
        if (p < 0) throw InputError(loc.at("probability") + " must be >= 0");
        if (rows.size() >= (std::size_t(1) << 24))
          throw InputError(loc.here() + ": the table has more than 16777216 rows");
        if (p > 0) rows.emplace_back(v, p);
      },
      text::ExtraColumns{}, "rows");
  const std::string name = printable(path, 256);
  if (rows.empty()) throw InputError(name + ": every probability is 0");
  std::sort(rows.begin(), rows.end());
  // Equal values merge into one atom (the table's law is the same).
  std::vector<std::pair<double, double>> atoms;
  for (const auto& r : rows) {
    if (!atoms.empty() && atoms.back().first == r.first)
      atoms.back().second += r.second;
    else
      atoms.push_back(r);
  }
  double total = 0.0, mean = 0.0;
  for (const auto& a : atoms) total += a.second;
  if (!std::isfinite(total)) throw InputError(name + ": the probabilities' sum overflows");
  for (const auto& a : atoms) mean += a.first * (a.second / total);
  if (!(mean > 0.0)) throw InputError(name + ": the table's mean value is 0 (every value is 0)");
  if (!std::isfinite(mean)) throw InputError(name + ": the table's mean value overflows");
  auto t = std::make_shared<UtilityTable>();
  t->origin = path;
  t->mean = mean;
  const std::size_t m = atoms.size();
  t->data.resize(2 * m);
  double cum = 0.0;
  for (std::size_t j = 0; j < m; ++j) {
    cum += atoms[j].second / total;
    t->data[j] = std::min(cum, 1.0);
    t->data[m + j] = atoms[j].first / mean;
  }
  // The bisection stops at the last atom for any uniform below 1, whatever the sum's rounding.
  t->data[m - 1] = 1.0;
  return t;
}

}  // namespace

void set_utility(RunConfig& cfg, const std::string& text, const char* setting) {
  const std::string opt = setting;
  const std::size_t colon = text.find(':');
  const std::string head = text.substr(0, colon);
  if (head == "empirical") {
    if (colon == std::string::npos || colon + 1 == text.size())
      throw InputError(opt +
                       " empirical needs its table: empirical:FILE (a CSV with columns "
                       "value and probability)");
    auto table = read_table(text.substr(colon + 1));
    UtilityDist d = UtilityDist::of(UtilityLaw::empirical);
    d.atoms = uint32_t(table->data.size() / 2);
    d.table = table->data.data();
    cfg.utility = d;
    cfg.utility_table = std::move(table);
    return;
  }
  if (const std::optional<UtilityLaw> named = utility_law_named(head)) {
    const UtilityLaw law = *named;
    const LawText l{utility_law_name(law), utility_law_shape(law)};
    if (!l.shape && colon != std::string::npos)
      throw InputError(opt + " " + l.name + " takes no parameter (got '" + printable(text) + "')");
    if (l.shape && colon == std::string::npos)
      throw InputError(opt + " " + l.name + " needs its " + l.shape + ": " + l.name + ":VALUE");
    if (l.shape) {
      const std::string arg = text.substr(colon + 1);
      double v = 0.0;
      const auto [ptr, ec] = std::from_chars(arg.data(), arg.data() + arg.size(), v);
      if (arg.empty() || ec != std::errc() || ptr != arg.data() + arg.size())
        throw InputError(opt + " " + l.name + ": the " + l.shape + " '" + printable(arg) +
                         "' is not a number");
      const std::string err = utility_shape_error(law, v);
      if (!err.empty()) throw InputError(opt + ": " + err);
      cfg.utility = UtilityDist::of(law, v);
    } else {
      cfg.utility = UtilityDist::of(law);
    }
    cfg.utility_table.reset();
    return;
  }
  throw InputError(opt + " '" + printable(text) + "' is not one of: " + utility_choices());
}

}  // namespace crawleval
