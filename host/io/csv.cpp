// Sources CSV reader and writer.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <numeric>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "crawleval/base/enum_names.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/base/monitor.hpp"
#include "crawleval/io/column_names.hpp"
#include "crawleval/io/columnar.hpp"
#include "crawleval/io/io.hpp"
#include "crawleval/io/output_file.hpp"
#include "crawleval/model/problem.hpp"
#include "crawleval/model/resources.hpp"
#include "io/text_fields.hpp"

namespace crawleval {

// ---- reading -------------------------------------------------------------------------------

namespace {

// In the order of sources_columns() (column_names.hpp).
enum Column { kLambda, kXi, kMu, kCost, kId, kX0, kExpiry, kObserve, kColumns };

using text::Location;
using text::lower;
using text::parse_number;
using text::shown;
using text::trim;

uint64_t parse_id(std::string_view t, const Location& loc) {
  return text::parse_uint(t, loc, "id");
}

}  // namespace

void require_regular_file(const std::string& path, const std::string& what, int processes) {
  struct stat st;
  if (processes <= 1 || ::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return;
  throw InputError(what + " " + printable(path, 256) +
                   ": under mpirun every process reads this file itself, so it must be a regular "
                   "file (a pipe, a FIFO or /dev/stdin gives its bytes to one process alone): "
                   "save it to a file first");
}

std::string read_text_file(const std::string& path) {
  const std::string name = printable(path, 256);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(name + ": cannot open: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  // A regular file's size is known: refuse it before reading if it cannot fit. A pipe or a device
  // is read in chunks, its memory checked as it grows.
  if (regular) require_memory(double(st.st_size), "reading " + name);
  std::string data;
  if (regular) data.reserve(std::size_t(st.st_size));
  std::size_t checked = std::size_t(64) << 20;  // the next size at which memory is checked
  std::size_t line_start = 0;                   // where the current line began
  bool binary = false, sniffed = false;
  char buf[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) {
      check_interrupt();
      continue;
    }
    if (got < 0) throw InputError(name + ": read error (" + std::strerror(errno) + ")");
    if (got == 0) break;
    const std::size_t before = data.size();
    if (!regular && before + std::size_t(got) > checked) {
      require_memory(2.0 * double(checked), "reading " + name + " (a stream; " +
                                                std::to_string(before) + " bytes so far)");
      checked *= 2;
    }
    data.append(buf, std::size_t(got));
    if (!sniffed && data.size() >= 8) sniffed = true, binary = columnar_magic(data);
    if (!binary) {
      // Text: no line may grow without limit (a stream without line ends, such as /dev/zero).
      const void* nl = ::memrchr(data.data() + before, '\n', std::size_t(got));
      if (nl) line_start = std::size_t(static_cast<const char*>(nl) - data.data()) + 1;
      if (data.size() - line_start > kMaxLineBytes)
        throw InputError(
            name + ": line " +
            std::to_string(1 + std::count(data.begin(), data.begin() + long(line_start), '\n')) +
            " is longer than " + std::to_string(kMaxLineBytes >> 20) +
            " MiB (not a text file with one source per line?)");
    }
    if ((data.size() >> 20) != (before >> 20)) check_interrupt();
  }
  return data;
}

Population read_population(const std::string& path, double bytes_per_source,
                           const SourcesCsvOptions& csv) {
  const std::string name = printable(path, 256);
  Population pop;
  if (is_columnar_file(path)) {
    const ColumnarHeader h = read_columnar_header(path);
    require_memory(double(h.n) * bytes_per_source, std::to_string(h.n) + " sources from " + name);
    pop = read_columnar(path);
  } else {
    std::string data = read_text_file(path);
    const std::string ext = ".cpop";
    const bool named_cpop =
        path.size() >= ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
    if (columnar_magic(data)) {  // a .cpop through a pipe
      pop = parse_columnar(data, path);
    } else if (named_cpop) {  // not read as a CSV: its messages would be about unknown columns
      throw InputError(name + ": not a crawleval columnar population (no CEPOP001 header)");
    } else {
      const double rows = double(std::count(data.begin(), data.end(), '\n')) + 1.0;
      require_memory(
          double(data.size()) + rows * bytes_per_source,
          "a population of up to " + std::to_string(uint64_t(rows)) + " sources from " + name);
      pop = parse_sources_csv(std::move(data), path, csv);
    }
  }
  // Every reader's sources are checked the same way (a CSV's fields were already, as it was read).
  if (pop.size() == 0) throw InputError(name + ": the population is empty");
  validate_sources(pop, RunConfig{});
  return pop;
}

Population read_sources_csv(const std::string& path, const SourcesCsvOptions& options) {
  return parse_sources_csv(read_text_file(path), path, options);
}

Population parse_sources_csv(std::string data, const std::string& path,
                             const SourcesCsvOptions& options) {
  Population pop;
  pop.origin = path;
  bool has_id = false;
  std::vector<std::string> ignored;
  const ColumnSchema& schema = sources_columns();
  CE_EXPECTS(schema.names.size() == kColumns, "internal: the sources CSV's columns");
  text::read_csv_rows(
      data, path, schema.names.data(), kColumns, {kLambda, kXi, kMu}, schema.help,
      [&](const std::vector<std::string_view>& fields, const std::vector<int>& position,
          const Location& loc) {
        has_id = position[kId] >= 0;
        const double lambda = parse_number(fields[position[kLambda]], loc, "lambda");
        const double xi = parse_number(fields[position[kXi]], loc, "xi");
        const double mu = parse_number(fields[position[kMu]], loc, "mu");
        const double cost =
            position[kCost] >= 0 ? parse_number(fields[position[kCost]], loc, "cost") : 1.0;
        if (lambda < 0)
          throw InputError(loc.at("lambda") + ": must be >= 0, got " +
                           shown(trim(fields[position[kLambda]])));
        if (xi < 0)
          throw InputError(loc.at("xi") + ": must be >= 0, got " +
                           shown(trim(fields[position[kXi]])));
        if (mu <= 0)
          throw InputError(loc.at("mu") + ": must be > 0, got " +
                           shown(trim(fields[position[kMu]])));
        if (cost <= 0)
          throw InputError(loc.at("cost") + ": must be > 0, got " +
                           shown(trim(fields[position[kCost]])));
        if (!std::isfinite(lambda * xi / mu))
          throw InputError(loc.at("lambda") + ": lambda * xi / mu overflows");
        if (!std::isfinite(lambda * xi / mu / cost))
          throw InputError(loc.at("cost") +
                           ": lambda * xi / mu / cost (the value of a crawl per unit "
                           "of cost) overflows");
        pop.lambda.push_back(lambda);
        pop.xi.push_back(xi);
        pop.mu.push_back(mu);
        pop.cost.push_back(cost);
        if (position[kX0] >= 0) {
          const double x0 = parse_number(fields[position[kX0]], loc, "x0");
          if (x0 < 0)
            throw InputError(loc.at("x0") + ": must be >= 0, got " +
                             shown(trim(fields[position[kX0]])));
          pop.x0.push_back(x0);
        }
        if (position[kExpiry] >= 0) {  // epochs; "inf" (or infinity) for content that never expires
          const std::string_view text = trim(fields[position[kExpiry]]);
          const std::string low = lower(text);
          if (low == "inf" || low == "infinity") {
            pop.expiry.push_back(0);
          } else {
            const double e = parse_number(text, loc, "expiry");
            if (!(e >= 1) || e != std::floor(e) || e > double(AgeState::kMaxAge))
              throw InputError(loc.at("expiry") + ": must be a whole number of epochs from 1 to " +
                               std::to_string(AgeState::kMaxAge) + ", or inf, got " + shown(text));
            pop.expiry.push_back(uint32_t(e));
          }
        }
        if (position[kObserve] >= 0) {  // mixed observation: full or belief
          const std::string_view text = trim(fields[position[kObserve]]);
          const std::optional<Observe> o = enum_parse<Observe>(lower(text));
          if (!o)
            throw InputError(loc.at("observe") + ": must be " + enum_choices<Observe>(" or ") +
                             ", got " + shown(text));
          pop.observe.push_back(*o == Observe::full ? 1 : 0);
        }
        pop.id.push_back(position[kId] >= 0 ? parse_id(fields[position[kId]], loc) : pop.id.size());
        pop.line.push_back(loc.line);
      },
      text::ExtraColumns{options.strict_columns, &ignored});
  if (!ignored.empty()) {
    const std::string note =
        ignored_columns_note(path, ignored, schema, "; --strict-columns refuses them");
    if (options.note)
      options.note(note);
    else
      std::fprintf(stderr, "crawleval: note: %s\n", note.c_str());
  }

  if (has_id) sort_by_id(pop, IdPositions::lines);  // ids must be unique
  return pop;
}

void write_population(const Population& pop, const std::string& path, const std::string& option) {
  const std::string ext = ".cpop";
  if (path.size() >= ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0)
    write_columnar(pop, path);
  else if (pop.first_id != 0)
    throw InputError(option + " " + printable(path, 256) +
                     ": a CSV cannot keep a slice's first global id (" +
                     std::to_string(pop.first_id) +
                     "; runs on it would draw as ids 0, 1, ...): write FILE.cpop");
  else
    write_sources_csv(pop, path);
}

void write_sources_csv(const Population& pop, const std::string& path) {
  OutputFile file(path, "--out");
  std::ostream& os = file.stream();
  os << "id,lambda,xi,mu,cost" << (pop.x0.empty() ? "" : ",x0")
     << (pop.expiry.empty() ? "" : ",expiry") << (pop.observe.empty() ? "" : ",observe") << '\n';
  // Shortest round-trip text (to_chars): the file reads back bit for bit.
  std::string buf;
  auto put = [&](auto v, char sep) { text::append_field(buf, v, sep); };
  for (std::size_t i = 0; i < pop.size(); ++i) {
    put(pop.id[i], ',');
    put(pop.lambda[i], ',');
    put(pop.xi[i], ',');
    put(pop.mu[i], ',');
    put(pop.cost[i], pop.x0.empty() && pop.expiry.empty() && pop.observe.empty() ? '\n' : ',');
    if (!pop.x0.empty()) put(pop.x0[i], pop.expiry.empty() && pop.observe.empty() ? '\n' : ',');
    const char end = pop.observe.empty() ? '\n' : ',';
    if (!pop.expiry.empty()) {
      if (pop.expiry[i])
        put(pop.expiry[i], end);
      else
        buf.append("inf").push_back(end);
    }
    if (!pop.observe.empty()) buf.append(pop.observe[i] ? "full\n" : "belief\n");
    if (buf.size() > (1u << 20)) os.write(buf.data(), std::streamsize(buf.size())), buf.clear();
  }
  os.write(buf.data(), std::streamsize(buf.size()));
  file.commit();
}

}  // namespace crawleval
