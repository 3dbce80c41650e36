// Sync-bandit instances in files (syncbandit_io.hpp): per-arm CSVs and round-varying costs.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <string>

#include "crawleval/base/error.hpp"
#include "crawleval/io/io.hpp"
#include "crawleval/io/output_file.hpp"
#include "crawleval/io/syncbandit_io.hpp"
#include "crawleval/model/resources.hpp"
#include "io/text_fields.hpp"

namespace crawleval::sync {

namespace {

double parse_field(std::string_view text, const std::string& path, std::size_t line,
                   const char* field) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
    text.remove_suffix(1);
  double v = 0.0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v))
    throw InputError(path + ":" + std::to_string(line) + ": field '" + field + "': '" +
                     std::string(text) + "' is not a finite number");
  return v;
}

}  // namespace

Instance read_instance_csv(const std::string& path, std::optional<Family> expected) {
  const std::string data = read_text_file(path);
  Instance inst;
  Family family = expected.value_or(Family::polynomial);
  const char* first = "mu";
  const char* second = "p";
  int col_a = -1, col_b = -1;
  std::size_t ncols = 0, line_no = 0, pos = 0;
  bool header = false;
  while (pos < data.size()) {
    std::size_t end = data.find('\n', pos);
    if (end == std::string::npos) end = data.size();
    std::string line = data.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    std::size_t start = 0;
    for (;;) {
      const std::size_t comma = line.find(',', start);
      fields.push_back(
          line.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (!header) {
      header = true;
      ncols = fields.size();
      // The family is the one whose columns the header names: mu,p (polynomial) or
      // delta,weight (poisson).
      std::vector<std::string> names;
      for (std::string name : fields) {
        name.erase(std::remove(name.begin(), name.end(), ' '), name.end());
        names.push_back(name);
      }
      auto has = [&](const char* c) {
        return std::find(names.begin(), names.end(), c) != names.end();
      };
      const bool poly = has("mu") || has("p"), poisson = has("delta") || has("weight");
      const std::string here = printable(path, 256) + ":" + std::to_string(line_no);
      if (poly == poisson)
        throw InputError(here + ": " +
                         (poly ? "the header mixes the polynomial family's columns (mu, p) and "
                                 "the poisson family's (delta, weight)"
                               : "the header names neither the polynomial family's columns (mu, "
                                 "p) nor the poisson family's (delta, weight)"));
      family = poly ? Family::polynomial : Family::poisson;
      if (expected && *expected != family)
        throw InputError(here + ": the columns are a " + to_string(family) +
                         " instance's, but the family asked for (--family) is " +
                         to_string(*expected));
      first = poly ? "mu" : "delta";
      second = poly ? "p" : "weight";
      for (std::size_t c = 0; c < names.size(); ++c) {
        // (A column named twice was read from its last place, silently; a hostile pass.)
        if (std::count(names.begin(), names.begin() + std::ptrdiff_t(c), names[c]))
          throw InputError(here + ": column '" + printable(names[c]) + "' appears twice");
        if (names[c] == first)
          col_a = int(c);
        else if (names[c] == second)
          col_b = int(c);
        else if (names[c] != "arm")
          throw InputError(here + ": unknown column '" + printable(names[c]) + "' (a " +
                           to_string(family) + " instance has columns " + first + "," + second +
                           " and optionally arm)");
      }
      if (col_a < 0 || col_b < 0)
        throw InputError(here + ": a " + to_string(family) + " instance needs columns " + first +
                         " and " + second);
      inst.family = family;
      continue;
    }
    if (fields.size() != ncols)
      throw InputError(path + ":" + std::to_string(line_no) + ": expected " +
                       std::to_string(ncols) + " fields, found " + std::to_string(fields.size()));
    const double a = parse_field(fields[col_a], path, line_no, first);
    const double b = parse_field(fields[col_b], path, line_no, second);
    if (family == Family::polynomial) {
      if (a < 0)
        throw InputError(path + ":" + std::to_string(line_no) + ": field 'mu': must be >= 0");
      if (!(b > 0 && b < 1))
        throw InputError(path + ":" + std::to_string(line_no) + ": field 'p': must lie in (0, 1)");
      inst.mu.push_back(a), inst.p.push_back(b);
    } else {
      if (!(a > 0))
        throw InputError(path + ":" + std::to_string(line_no) + ": field 'delta': must be > 0");
      if (b < 0)
        throw InputError(path + ":" + std::to_string(line_no) + ": field 'weight': must be >= 0");
      inst.delta.push_back(a), inst.weight.push_back(b);
    }
  }
  if (inst.arms() == 0) throw InputError(path + ": no arms");
  inst.budget = 0.4 * double(inst.arms());
  inst.r_max = family == Family::polynomial ? 3.0 : 6.0;
  return inst;
}

void write_instance_csv(const Instance& inst, const std::string& path) {
  OutputFile file(path, "--out");
  std::ostream& os = file.stream();
  os.precision(17);
  if (inst.family == Family::polynomial) {
    os << "arm,mu,p\n";
    for (std::size_t k = 0; k < inst.arms(); ++k)
      os << k << ',' << inst.mu[k] << ',' << inst.p[k] << '\n';
  } else {
    os << "arm,delta,weight\n";
    for (std::size_t k = 0; k < inst.arms(); ++k)
      os << k << ',' << inst.delta[k] << ',' << inst.weight[k] << '\n';
  }
  file.commit();
}

std::vector<Instance> read_round_costs_csv(const std::string& path, Family family,
                                           const Instance& base, uint32_t rounds) {
  const std::string data = read_text_file(path);
  const bool poly = family == Family::polynomial;
  enum { kRound, kArm, kA, kB };
  const char* const names[] = {"round", "arm", poly ? "mu" : "delta", poly ? "p" : "weight"};
  struct Row {
    uint64_t round, arm;
    double a, b;
    std::size_t line;
  };
  std::vector<Row> rows;
  text::read_csv_rows(
      data, path, names, 4, {kRound, kArm, kA, kB},
      std::string("(round-varying ") + to_string(family) + " costs: round,arm," + names[2] + "," +
          names[3] + ")",
      [&](const std::vector<std::string_view>& f, const std::vector<int>& pos,
          const text::Location& loc) {
        Row r;
        r.round = text::parse_uint(f[std::size_t(pos[kRound])], loc, "round");
        r.arm = text::parse_uint(f[std::size_t(pos[kArm])], loc, "arm");
        r.a = text::parse_number(f[std::size_t(pos[kA])], loc, names[2]);
        r.b = text::parse_number(f[std::size_t(pos[kB])], loc, names[3]);
        r.line = loc.line;
        if (r.round < 1) throw InputError(loc.at("round") + " must be >= 1");
        if (r.arm > 100000000) throw InputError(loc.at("arm") + " is above 1e8");
        if (poly && r.a < 0) throw InputError(loc.at("mu") + ": must be >= 0");
        if (poly && !(r.b > 0 && r.b < 1)) throw InputError(loc.at("p") + ": must lie in (0, 1)");
        if (!poly && !(r.a > 0)) throw InputError(loc.at("delta") + ": must be > 0");
        if (!poly && r.b < 0) throw InputError(loc.at("weight") + ": must be >= 0");
        rows.push_back(r);
      },
      text::ExtraColumns{}, "rows");
  const std::string name = printable(path, 256);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& x, const Row& y) { return x.round < y.round; });
  // An arm's costs given twice in one round: the last row won, silently (a hostile pass).
  {
    std::vector<const Row*> order;
    for (const Row& r : rows) order.push_back(&r);
    std::stable_sort(order.begin(), order.end(), [](const Row* x, const Row* y) {
      return x->round != y->round ? x->round < y->round : x->arm < y->arm;
    });
    for (std::size_t i = 1; i < order.size(); ++i)
      if (order[i]->round == order[i - 1]->round && order[i]->arm == order[i - 1]->arm)
        throw InputError(name + ":" + std::to_string(std::max(order[i]->line, order[i - 1]->line)) +
                         ": round " + std::to_string(order[i]->round) + ", arm " +
                         std::to_string(order[i]->arm) + " is given twice (also line " +
                         std::to_string(std::min(order[i]->line, order[i - 1]->line)) + ")");
  }
  std::size_t arms = 0;
  for (const Row& r : rows)
    if (r.round == 1) arms = std::max<std::size_t>(arms, r.arm + 1);
  if (arms == 0) throw InputError(name + ": round 1 must give every arm's costs (none given)");
  std::vector<char> seen(arms, 0);
  for (const Row& r : rows)
    if (r.round == 1) seen[r.arm] = 1;
  for (std::size_t k = 0; k < arms; ++k)
    if (!seen[k])
      throw InputError(name + ": round 1 must give every arm's costs (arm " + std::to_string(k) +
                       " is missing; arms are numbered from 0)");
  // One instance per round (two columns of doubles per arm each).
  require_memory(40.0 * double(arms) * double(rounds),
                 std::to_string(rounds) + " rounds of " + std::to_string(arms) + " arms' costs");
  Instance cur = base;
  cur.family = family;
  (poly ? cur.mu : cur.delta).assign(arms, 0.0);
  (poly ? cur.p : cur.weight).assign(arms, 0.0);
  if (poly)
    cur.delta.clear(), cur.weight.clear();
  else
    cur.mu.clear(), cur.p.clear();
  std::vector<Instance> out;
  std::size_t next = 0;
  for (uint64_t t = 1; t <= rounds; ++t) {
    for (; next < rows.size() && rows[next].round == t; ++next) {
      const Row& r = rows[next];
      if (r.arm >= arms)
        throw InputError(name + ":" + std::to_string(r.line) + ": field 'arm': arm " +
                         std::to_string(r.arm) + " is not among round 1's " + std::to_string(arms) +
                         " arms");
      (poly ? cur.mu : cur.delta)[r.arm] = r.a;
      (poly ? cur.p : cur.weight)[r.arm] = r.b;
    }
    out.push_back(cur);
  }
  return out;
}

}  // namespace crawleval::sync
