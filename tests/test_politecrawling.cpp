// The PoliteCrawling importer and the freshness population CSV (fresh_io.hpp): small files in the
// dataset's exact format, good and malformed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "crawleval/base/comm.hpp"
#include "crawleval/base/error.hpp"
#include "crawleval/io/fresh_io.hpp"
#include "crawleval/model/change_rate.hpp"

using namespace crawleval;
namespace fs = std::filesystem;

namespace {

struct Dataset {
  std::string hosts =
      "http://a.example\t10\t1\n"
      "http://b.example\t11\t0\n";
  std::string urls =
      "http://a.example/x\t5\t10\n"
      "http://a.example/y\t7\t10\n"
      "http://b.example/z\t2\t11\n"
      "http://b.example/w\t9\t11\n";
  std::string imp = "5\t120\n7\t3\n2\t48\n";  // 9 has no importance: dropped
  std::string hist =
      "5\t5.5143\t[[1.10397, 0], [1.47311, 1], [0.9, 1], [1.0, 0]]\n"
      "7\t0.25\t[[1.0, 0], [1.0, 0], [2.0, 0]]\n"
      "2\t1.0\t[[1.0, 1], [1.0, 1]]\n"
      "9\t1.0\t[[1.0, 1]]\n";
  std::string co = "2\t0.75\n";

  std::string write(const std::string& name) const {
    const fs::path dir = fs::temp_directory_path() / ("crawleval_pc_" + name);
    fs::remove_all(dir);
    fs::create_directories(dir);
    auto put = [&](const char* file, const std::string& text) {
      std::ofstream(dir / file) << text;
    };
    put("host_hostid_isconstrained.txt", hosts);
    put("url_urlid_hostid.txt", urls);
    put("urlid_imp.txt", imp);
    put("urlid_offset_history.txt", hist);
    put("urlid_chrate_compl_obs_hist.txt", co);
    return dir.string();
  }
};

std::string import_error(const Dataset& d, const std::string& name, uint64_t max_bad = 0) {
  ImportOptions o;
  o.max_bad_rows = max_bad;
  try {
    import_politecrawling(d.write(name), o, nullptr);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(PoliteCrawling, ImportsTheDatasetFormat) {
  const Dataset d;
  ImportReport report;
  const FreshPopulation pop = import_politecrawling(d.write("good"), ImportOptions{}, &report);
  ASSERT_EQ(pop.size(), 3u);  // URL 9 has no importance
  EXPECT_EQ(report.urls, 4u);
  EXPECT_EQ(report.hosts, 2u);
  EXPECT_EQ(report.constrained_hosts, 1u);
  EXPECT_EQ(report.histories, 4u);
  EXPECT_EQ(report.complete, 1u);
  EXPECT_EQ(report.without_importance, 1u);
  EXPECT_EQ(pop.id, (std::vector<uint64_t>{2, 5, 7}));
  EXPECT_EQ(pop.host, (std::vector<uint64_t>{11, 10, 10}));
  EXPECT_EQ(pop.constrained, (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(pop.importance, (std::vector<double>{48, 120, 3}));
  EXPECT_EQ(pop.complete, (std::vector<uint8_t>{1, 0, 0}));
  // URL 5: the estimator on its history; URL 7 never changed: rate 0; URL 2 uses the CO file.
  const double t5[] = {1.10397, 1.47311, 0.9, 1.0};
  const uint8_t c5[] = {0, 1, 1, 0};
  const RateEstimate e5 = estimate_incomplete(t5, c5, 4);
  EXPECT_EQ(pop.rate[1], e5.rate);
  EXPECT_EQ(pop.rate_lo[1], e5.lo);
  EXPECT_EQ(pop.rate_hi[1], e5.hi);
  EXPECT_EQ(pop.observations[1], 4u);
  EXPECT_EQ(pop.changes[1], 2u);
  EXPECT_EQ(pop.rate[2], 0.0);
  EXPECT_EQ(pop.rate[0], 0.75);
  const RateEstimate e2 = estimate_complete(0.75 * 2.0, 2.0);
  EXPECT_EQ(pop.rate_lo[0], e2.lo);
  EXPECT_EQ(pop.rate_hi[0], e2.hi);

  // The CSV round trip is exact.
  const std::string csv = (fs::temp_directory_path() / "crawleval_pc_good.csv").string();
  write_fresh_csv(pop, csv);
  const FreshPopulation back = read_fresh_csv(csv);
  EXPECT_EQ(back.id, pop.id);
  EXPECT_EQ(back.rate, pop.rate);
  EXPECT_EQ(back.rate_lo, pop.rate_lo);
  EXPECT_EQ(back.rate_hi, pop.rate_hi);
  EXPECT_EQ(back.importance, pop.importance);
  EXPECT_EQ(back.complete, pop.complete);
  EXPECT_EQ(back.constrained, pop.constrained);
  EXPECT_EQ(back.host, pop.host);
  EXPECT_EQ(back.observations, pop.observations);
}

TEST(PoliteCrawling, MalformedRowsNameTheFileLineAndField) {
  struct Case {
    const char* name;
    void (*edit)(Dataset&);
    const char* expected;
  };
  const Case cases[] = {
      {"history_bracket", [](Dataset& d) { d.hist = "5\t1.0\t[[1.0, 0], [2.0, 1]\n"; },
       "urlid_offset_history.txt:1: field 'history'"},
      {"history_flag", [](Dataset& d) { d.hist = "5\t1.0\t[[1.0, 0]]\n7\t1\t[[1.0, 2]]\n"; },
       "urlid_offset_history.txt:2: field 'history changed': must be 0 or 1, got '2'"},
      {"history_interval", [](Dataset& d) { d.hist = "5\t1.0\t[[-1.0, 0]]\n"; },
       "urlid_offset_history.txt:1: field 'history interval': must be > 0"},
      {"history_unknown_url", [](Dataset& d) { d.hist = "\n\n99\t1.0\t[[1.0, 0]]\n"; },
       "urlid_offset_history.txt:3: field 'URL_ID': URL 99 is not in url_urlid_hostid.txt"},
      {"imp_number", [](Dataset& d) { d.imp = "5\tlots\n"; },
       "urlid_imp.txt:1: field 'importance': 'lots' is not a number"},
      {"imp_fields", [](Dataset& d) { d.imp = "5 120\n"; },
       "urlid_imp.txt:1: expected 2 tab-separated fields (URL_ID, importance), found 1"},
      {"host_flag", [](Dataset& d) { d.hosts = "http://a.example\t10\tyes\n"; },
       "host_hostid_isconstrained.txt:1: field 'Is_constrained': must be 0 or 1, got 'yes'"},
      {"url_host", [](Dataset& d) { d.urls = "http://c.example/\t5\t12\n"; },
       "url_urlid_hostid.txt:1: field 'Host_ID': host 12 is not in host_hostid_isconstrained.txt"},
      {"co_rate", [](Dataset& d) { d.co = "2\t-0.5\n"; },
       "urlid_chrate_compl_obs_hist.txt:1: field 'change rate': must be >= 0"},
      {"dup_url", [](Dataset& d) { d.urls += "http://a.example/again\t5\t10\n"; },
       "url_urlid_hostid.txt: URL_ID 5 appears twice"},
  };
  for (const Case& c : cases) {
    Dataset d;
    c.edit(d);
    const std::string msg = import_error(d, c.name);
    EXPECT_NE(msg.find(c.expected), std::string::npos) << c.name << ": " << msg;
  }
  // A missing file names itself.
  Dataset d;
  const std::string dir = d.write("missing");
  fs::remove(fs::path(dir) / "urlid_imp.txt");
  try {
    import_politecrawling(dir, ImportOptions{}, nullptr);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("urlid_imp.txt: cannot open"), std::string::npos);
  }
}

TEST(PoliteCrawling, BadRowsCanBeSkippedUpToABudget) {
  Dataset d;
  d.hist =
      "5\t5.5\t[[1.0, 0], [1.0, 1]]\n"
      "7\tx\t[[1.0, 0]]\n"
      "2\t1.0\t[[1.0, 1]\n";
  EXPECT_NE(import_error(d, "skip1", 1).find("more than --max-bad-rows 1"), std::string::npos);
  ImportOptions o;
  o.max_bad_rows = 2;
  std::vector<std::string> warnings;
  o.warn = [&](const std::string& m) { warnings.push_back(m); };
  ImportReport report;
  const FreshPopulation pop = import_politecrawling(d.write("skip2"), o, &report);
  EXPECT_EQ(report.bad_rows, 2u);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("urlid_offset_history.txt:2: field 'offset'"), std::string::npos);
  EXPECT_NE(warnings[1].find("urlid_offset_history.txt:3:"), std::string::npos);
  // URL 7 lost its history (dropped); URL 2 keeps its complete-observation rate.
  EXPECT_EQ(pop.id, (std::vector<uint64_t>{2, 5}));
  EXPECT_EQ(report.without_history, 1u);
  EXPECT_TRUE(std::isnan(pop.rate_lo[0]));  // no history: no observed time for the interval
}

TEST(FreshCsv, ReadsDefaultsAndRejectsBadFields) {
  const FreshPopulation p = parse_fresh_csv("importance,rate\n3,0.5\n1,0\n", "mem.csv");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p.id, (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(p.host, (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(p.cost, (std::vector<double>{1, 1}));
  auto error = [](const std::string& text) {
    try {
      parse_fresh_csv(text, "mem.csv");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error("importance,rate\n3,-1\n").find("mem.csv:2: field 'rate': must be"),
            std::string::npos);
  EXPECT_NE(
      error("rate\n1\n").find("mem.csv:1: missing column(s) importance (the header must name"),
      std::string::npos);
  EXPECT_NE(error("importance,rate,complete\n1,1,2\n").find("field 'complete': must be 0 or 1"),
            std::string::npos);
  EXPECT_NE(error("id,importance,rate\n4,1,1\n4,1,1\n").find("id 4 already used on line 2"),
            std::string::npos);
  EXPECT_NE(error("importance,rate,speed\n").find("unknown column 'speed'"), std::string::npos);
  EXPECT_NE(error("importance,rate,rate_lo,rate_hi\n1,0.5,0.6,1\n")
                .find("mem.csv:2: field 'rate_lo': must be between 0 and the rate"),
            std::string::npos);
  EXPECT_NE(error("importance,rate,rate_lo,rate_hi\n1,0.5,0.1,0.2\n")
                .find("field 'rate_hi': must be at least the rate"),
            std::string::npos);
}

TEST(FreshSynthetic, HasTheDatasetShapeAndIsDeterministic) {
  const FreshPopulation a = synthetic_fresh_population(20000, 3);
  const FreshPopulation b = synthetic_fresh_population(20000, 3);
  EXPECT_EQ(a.rate, b.rate);
  EXPECT_EQ(a.host, b.host);
  double co = 0, constrained = 0;
  for (std::size_t i = 0; i < a.size(); ++i) co += a.complete[i], constrained += a.constrained[i];
  EXPECT_NEAR(co / a.size(), 0.04, 0.01);
  EXPECT_GT(constrained / a.size(), 0.1);
  EXPECT_LT(constrained / a.size(), 0.6);
  // The estimated rates follow the true ones: compare medians with those of the true population.
  FreshPopulation t = synthetic_fresh_population(20000, 3, false);
  std::vector<double> est = a.rate, truth = t.rate;
  std::nth_element(est.begin(), est.begin() + 10000, est.end());
  std::nth_element(truth.begin(), truth.begin() + 10000, truth.end());
  EXPECT_NEAR(est[10000] / truth[10000], 1.0, 0.05);
  EXPECT_NEAR(truth[10000], 0.25, 0.01);
}

// The synthetic population is drawn on the process's cores (default_threads_per_rank), each
// source from its own stream: every column equals the one-thread population's, bit for bit. One
// thread is forced through the MPI launcher's local-size variable (default_threads_per_rank
// divides the cores among that many ranks).
TEST(FreshSynthetic, ThreadsDrawTheOneThreadPopulation) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core: nothing to compare";
  const char* var = "OMPI_COMM_WORLD_LOCAL_SIZE";
  const char* before = std::getenv(var);
  const std::string saved = before ? before : "";
  ::setenv(var, "1000000", 1);
  ASSERT_EQ(crawleval::default_threads_per_rank(), 1);
  const FreshPopulation one = synthetic_fresh_population(30011, 5);
  ::unsetenv(var);
  const bool threaded = crawleval::default_threads_per_rank() >= 2;
  const FreshPopulation many = synthetic_fresh_population(30011, 5);
  if (before) ::setenv(var, saved.c_str(), 1);
  ASSERT_TRUE(threaded);
  EXPECT_EQ(many.id, one.id);
  EXPECT_EQ(many.host, one.host);
  EXPECT_EQ(many.importance, one.importance);
  EXPECT_EQ(many.rate, one.rate);
  EXPECT_EQ(many.cost, one.cost);
  EXPECT_EQ(many.complete, one.complete);
  EXPECT_EQ(many.constrained, one.constrained);
  EXPECT_EQ(many.observations, one.observations);
  EXPECT_EQ(many.changes, one.changes);
  // (NaN bounds compare unequal: compare their bits.)
  ASSERT_EQ(many.rate_lo.size(), one.rate_lo.size());
  EXPECT_EQ(0, std::memcmp(many.rate_lo.data(), one.rate_lo.data(), 8 * one.rate_lo.size()));
  EXPECT_EQ(0, std::memcmp(many.rate_hi.data(), one.rate_hi.data(), 8 * one.rate_hi.size()));
}

TEST(PoliteCrawling, EmptyHistoriesAreNoHistoryAndUnusableOnesAreBadRows) {
  Dataset d;
  d.hist =
      "5\t5.5\t[[1.0, 0], [1.0, 1]]\n"
      "7\t0.0\t[]\n"
      "2\t1.0\t[[1.0, 1]]\n";
  ImportReport report;
  const FreshPopulation pop = import_politecrawling(d.write("empty"), ImportOptions{}, &report);
  EXPECT_EQ(pop.id, (std::vector<uint64_t>{2, 5}));  // 7 observed nothing: dropped
  EXPECT_EQ(report.without_history, 1u);
  d.hist = "5\t5.5\t[[1e200, 1], [1.0, 0]]\n";
  EXPECT_NE(import_error(d, "huge").find("urlid_offset_history.txt:1: field 'history': gives "
                                         "no finite change rate"),
            std::string::npos);
}

// Issue #25: a read error (ENOMEM from getline on a huge line was the case seen) was taken for the
// end of the file, and the rest of the file was dropped with success. A directory in place of a
// file gives a read error (EISDIR) at the first read: the import must fail, naming the file.
TEST(PoliteCrawling, ReadErrorsFailTheImport) {
  Dataset d;
  const std::string dir = d.write("read_error");
  fs::remove(fs::path(dir) / "urlid_offset_history.txt");
  fs::create_directory(fs::path(dir) / "urlid_offset_history.txt");
  try {
    import_politecrawling(dir, ImportOptions{}, nullptr);
    ADD_FAILURE() << "a read error was taken for the end of the file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("urlid_offset_history.txt: read error"), std::string::npos)
        << e.what();
  }
  // A line that would grow without limit (the ENOMEM case: glibc's getline returns -1 without
  // setting the error flag) fails with the file and line, instead of ending the file there.
  {
    Dataset big;
    big.hist = "5\t1.0\t[[1.0, 0]]\n7\t1.0\t[" + std::string(std::size_t(65) << 20, ' ') + "]\n";
    const std::string msg = import_error(big, "huge_line");
    EXPECT_NE(msg.find("urlid_offset_history.txt:2: a line longer than 64 MiB"), std::string::npos)
        << msg.substr(0, 200);
  }
  // A last line without its line end is read, not dropped.
  Dataset e;
  e.co = "2\t0.75";
  const std::string dir2 = e.write("no_final_newline");
  const FreshPopulation pop = import_politecrawling(dir2, ImportOptions{}, nullptr);
  bool found = false;
  for (std::size_t i = 0; i < pop.size(); ++i)
    if (pop.id[i] == 2) found = pop.complete[i] == 1 && pop.rate[i] == 0.75;
  EXPECT_TRUE(found);
}
