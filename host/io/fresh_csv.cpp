// Freshness populations in files: the CSV reader and writer (the populations themselves:
// host/model/fresh_population.cpp).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <numeric>
#include <ostream>
#include <random>

#include "crawleval/base/comm.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/io/column_names.hpp"
#include "crawleval/io/fresh_io.hpp"
#include "crawleval/io/io.hpp"
#include "crawleval/io/output_file.hpp"
#include "crawleval/model/change_rate.hpp"
#include "crawleval/model/problem.hpp"
#include "crawleval/model/resources.hpp"
#include "crawleval/model/rng.hpp"
#include "io/text_fields.hpp"

namespace crawleval {

namespace {

// In the order of fresh_columns() (column_names.hpp).
enum Column {
  kId,
  kHost,
  kImportance,
  kRate,
  kRateLo,
  kRateHi,
  kComplete,
  kConstrained,
  kCost,
  kObservations,
  kChanges,
  kColumns
};

}  // namespace

FreshPopulation read_fresh_csv(const std::string& path) {
  const std::string data = read_text_file(path);
  // The population and a run's state per source, before parsing (as `run` estimates its own).
  const double rows = double(std::count(data.begin(), data.end(), '\n')) + 1.0;
  require_memory(double(data.size()) + rows * kFreshBytesPerSource,
                 "the freshness model on up to " + std::to_string(uint64_t(rows)) +
                     " sources from " + printable(path, 256));
  return parse_fresh_csv(data, path);
}

FreshPopulation parse_fresh_csv(const std::string& data, const std::string& path) {
  using namespace text;
  FreshPopulation pop;
  pop.origin = path;
  const ColumnSchema& schema = fresh_columns();
  CE_EXPECTS(schema.names.size() == kColumns, "internal: the freshness CSV's columns");
  const char* const* names = schema.names.data();
  read_csv_rows(
      data, path, names, kColumns, {kImportance, kRate}, schema.help,
      [&](const std::vector<std::string_view>& fields, const std::vector<int>& position,
          const Location& loc) {
        auto number = [&](Column c, double fallback) {
          if (position[c] < 0) return fallback;
          const std::string_view t = trim(fields[position[c]]);
          const std::string low = lower(t);
          if ((c == kRateHi) && (low == "inf" || low == "infinity"))
            return std::numeric_limits<double>::infinity();
          if ((c == kRateLo || c == kRateHi) && (low == "nan" || t.empty()))
            return std::numeric_limits<double>::quiet_NaN();
          return parse_number(t, loc, names[c]);
        };
        auto flag = [&](Column c) -> uint8_t {
          if (position[c] < 0) return 0;
          const std::string_view t = trim(fields[position[c]]);
          if (t == "0") return 0;
          if (t == "1") return 1;
          throw InputError(loc.at(names[c]) + ": must be 0 or 1, got " + shown(t));
        };
        auto count = [&](Column c) -> uint32_t {
          if (position[c] < 0) return 0;
          const uint64_t v = parse_uint(fields[position[c]], loc, names[c]);
          if (v > 0xFFFFFFFFull) throw InputError(loc.at(names[c]) + ": too large");
          return uint32_t(v);
        };
        const std::size_t row = pop.size();
        pop.id.push_back(position[kId] >= 0 ? parse_uint(fields[position[kId]], loc, "id") : row);
        pop.host.push_back(position[kHost] >= 0 ? parse_uint(fields[position[kHost]], loc, "host")
                                                : pop.id.back());
        pop.importance.push_back(number(kImportance, 0.0));
        pop.rate.push_back(number(kRate, 0.0));
        pop.rate_lo.push_back(number(kRateLo, std::numeric_limits<double>::quiet_NaN()));
        pop.rate_hi.push_back(number(kRateHi, std::numeric_limits<double>::quiet_NaN()));
        pop.cost.push_back(number(kCost, 1.0));
        pop.complete.push_back(flag(kComplete));
        pop.constrained.push_back(flag(kConstrained));
        pop.observations.push_back(count(kObservations));
        pop.changes.push_back(count(kChanges));
        pop.line.push_back(loc.line);
      });
  validate_fresh(pop);
  sort_fresh_by_id(pop);
  return pop;
}

void write_fresh_csv(const FreshPopulation& pop, const std::string& path) {
  if (pop.first != 0)  // its rows would draw as rows 0, 1, ... when read back
    throw InputError(printable(path, 256) + ": a CSV cannot keep a slice's first global id (" +
                     std::to_string(pop.first) + ")");
  OutputFile file(path, "--out");
  std::ostream& os = file.stream();
  os << "id,host,importance,rate,rate_lo,rate_hi,complete,constrained,cost,observations,changes\n";
  std::string buf;
  auto put = [&](auto v, char sep) { text::append_field(buf, v, sep); };
  auto put_bound = [&](double v) {
    if (std::isnan(v))
      buf.append("nan,");
    else if (std::isinf(v))
      buf.append("inf,");
    else
      put(v, ',');
  };
  for (std::size_t i = 0; i < pop.size(); ++i) {
    put(pop.id[i], ',');
    put(pop.host[i], ',');
    put(pop.importance[i], ',');
    put(pop.rate[i], ',');
    put_bound(pop.rate_lo[i]);
    put_bound(pop.rate_hi[i]);
    put(int(pop.complete[i]), ',');
    put(int(pop.constrained[i]), ',');
    put(pop.cost[i], ',');
    put(pop.observations[i], ',');
    put(pop.changes[i], '\n');
    if (buf.size() > (1u << 20)) os.write(buf.data(), std::streamsize(buf.size())), buf.clear();
  }
  os.write(buf.data(), std::streamsize(buf.size()));
  file.commit();
}

}  // namespace crawleval
