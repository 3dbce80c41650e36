// The binary columnar population format (.cpop): exact round trips, slices that equal the whole
// file's, and clear refusals of damaged files.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "crawleval/base/error.hpp"
#include "crawleval/io/columnar.hpp"
#include "crawleval/io/io.hpp"
#include "test_util.hpp"

namespace ce = crawleval;

namespace {

std::string temp(const std::string& name) { return crawleval::testing::test_temp_path(name); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ce::InputError& e) {
    return e.what();
  }
  return "no error";
}

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void put_bytes(const std::string& path, const std::string& b) {
  std::ofstream(path, std::ios::binary) << b;
}

}  // namespace

TEST(Columnar, RoundTripIsExactAndSlicesEqualTheWhole) {
  ce::Population pop = ce::testing::random_population(1000, 3, false, true);
  pop.expiry.resize(pop.size());
  for (std::size_t i = 0; i < pop.size(); ++i) pop.expiry[i] = uint32_t(i % 4);
  for (std::size_t i = 0; i < pop.size(); ++i) pop.id[i] = 10 + 3 * i;  // any ascending ids
  const std::string path = temp("pop.cpop");
  ce::write_columnar(pop, path);
  EXPECT_TRUE(ce::is_columnar_file(path));
  EXPECT_EQ(bytes_of(path).size(), 64u + 1000u * (6 * 8 + 4));
  const ce::Population back = ce::read_columnar(path);
  EXPECT_EQ(back.lambda, pop.lambda);
  EXPECT_EQ(back.xi, pop.xi);
  EXPECT_EQ(back.mu, pop.mu);
  EXPECT_EQ(back.cost, pop.cost);
  EXPECT_EQ(back.x0, pop.x0);
  EXPECT_EQ(back.expiry, pop.expiry);
  EXPECT_EQ(back.id, pop.id);
  for (uint64_t first : {0u, 1u, 499u, 1000u})
    for (uint64_t count : {0u, 1u, 501u}) {
      if (first + count > 1000) continue;
      const ce::Population s = ce::read_columnar(path, first, count);
      ASSERT_EQ(s.size(), count);
      for (uint64_t k = 0; k < count; ++k) {
        EXPECT_EQ(s.mu[k], pop.mu[first + k]);
        EXPECT_EQ(s.x0[k], pop.x0[first + k]);
        EXPECT_EQ(s.expiry[k], pop.expiry[first + k]);
        EXPECT_EQ(s.id[k], pop.id[first + k]);
      }
    }
  // The synthetic generator's CSV and its .cpop hold the same numbers.
  const ce::Population syn = ce::synthetic_population(300, 5, ce::SyntheticCosts::lognormal);
  ce::write_sources_csv(syn, temp("syn.csv"));
  ce::write_columnar(syn, temp("syn.cpop"));
  const ce::Population a = ce::read_sources_csv(temp("syn.csv")),
                       b = ce::read_columnar(temp("syn.cpop"));
  EXPECT_EQ(a.lambda, b.lambda);
  EXPECT_EQ(a.cost, b.cost);
  EXPECT_FALSE(ce::is_columnar_file(temp("syn.csv")));
}

// Header version 2 (issue #28): a slice's first global id is kept, and read by every reader (the
// whole file, a slice of it, a pipe); a population whose first id is 0 is still written as
// version 1, byte for byte what earlier versions wrote, and version 1 files read with first id 0.
TEST(Columnar, FirstGlobalIdIsKeptInVersionTwo) {
  ce::Population pop =
      ce::synthetic_slice(10000000000ull, 2, ce::SyntheticCosts::unit, 5000000000ull, 50);
  const std::string v1 = temp("first0.cpop"), v2 = temp("first5e9.cpop");
  ce::write_columnar(pop, v1);
  EXPECT_EQ(bytes_of(v1)[16], 1);
  EXPECT_EQ(ce::read_columnar(v1).first_id, 0u);
  pop.first_id = 5000000000ull;
  ce::write_columnar(pop, v2);
  const std::string b = bytes_of(v2);
  EXPECT_EQ(b[16], 2);
  uint64_t stored = 0;
  std::memcpy(&stored, b.data() + 24, 8);
  EXPECT_EQ(stored, 5000000000ull);
  EXPECT_EQ(ce::read_columnar_header(v2).first_id, 5000000000ull);
  EXPECT_EQ(ce::read_columnar(v2).first_id, 5000000000ull);
  EXPECT_EQ(ce::read_columnar(v2, 10, 5).first_id, 5000000000ull);  // the population's, not 10's
  EXPECT_EQ(ce::parse_columnar(b, "pipe").first_id, 5000000000ull);
  EXPECT_EQ(ce::read_columnar(v2).lambda, pop.lambda);
}

TEST(Columnar, DamagedFilesAreRefusedWithTheReason) {
  const ce::Population pop = ce::testing::random_population(100, 4, true, false);
  const std::string path = temp("good.cpop");
  ce::write_columnar(pop, path);
  const std::string good = bytes_of(path);

  put_bytes(temp("short.cpop"), good.substr(0, good.size() - 8));
  EXPECT_NE(error_of([&] { ce::read_columnar(temp("short.cpop")); }).find("truncated or damaged"),
            std::string::npos);
  put_bytes(temp("tiny.cpop"), good.substr(0, 10));  // the magic and 2 bytes
  EXPECT_NE(error_of([&] { ce::read_columnar(temp("tiny.cpop")); }).find("the file has 10 bytes"),
            std::string::npos);
  std::string v3 = good;
  v3[16] = 3;  // version
  put_bytes(temp("v3.cpop"), v3);
  EXPECT_NE(error_of([&] {
              ce::read_columnar(temp("v3.cpop"));
            }).find("version 3 (this crawleval reads versions 1 and 2)"),
            std::string::npos);
  // Version 2's first id: a slice whose global ids (first id + n) would pass 2^63 is refused.
  std::string v2 = good;
  v2[16] = 2;
  v2[31] = char(0x80);  // first_id = 2^63
  put_bytes(temp("v2.cpop"), v2);
  EXPECT_NE(error_of([&] { ce::read_columnar(temp("v2.cpop")); }).find("pass 2^63"),
            std::string::npos);
  put_bytes(temp("notpop.cpop"), "lambda,xi,mu\n1,1,1\n");
  EXPECT_NE(error_of([&] { ce::read_columnar(temp("notpop.cpop")); }).find("no CEPOP001 header"),
            std::string::npos);
  EXPECT_NE(error_of([&] { ce::read_columnar(temp("missing.cpop")); }).find("cannot open"),
            std::string::npos);

  // Ids out of order: found in the slice that holds them, and at a slice's first source.
  std::string swapped = good;
  const std::size_t ids = 64 + 4 * 8 * 100;
  std::string id3 = swapped.substr(ids + 8 * 3, 8), id4 = swapped.substr(ids + 8 * 4, 8);
  swapped.replace(ids + 8 * 3, 8, id4);
  swapped.replace(ids + 8 * 4, 8, id3);
  put_bytes(temp("swapped.cpop"), swapped);
  EXPECT_NE(error_of([&] { ce::read_columnar(temp("swapped.cpop")); }).find("strictly ascending"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { ce::read_columnar(temp("swapped.cpop"), 4, 10); }).find("strictly ascending"),
      std::string::npos);
  EXPECT_EQ(error_of([&] { ce::read_columnar(temp("swapped.cpop"), 5, 10); }), "no error");

  // A value the model refuses is named by the source's id.
  ce::Population bad = pop;
  bad.mu[42] = std::nan("");
  ce::write_columnar(bad, temp("nan.cpop"));
  const ce::Population read = ce::read_columnar(temp("nan.cpop"), 40, 10);
  ce::RunConfig cfg;
  EXPECT_NE(
      error_of([&] { ce::validate_sources(read, cfg); }).find("source with id 42, field 'mu'"),
      std::string::npos);
}

// Issue #25: a .cpop that shrank while it was read killed the CLI and Python with SIGBUS (it was
// memory-mapped). It is read with pread now: the shrink is bad input, named.
TEST(Columnar, AFileThatShrinksWhileReadIsRefused) {
  const ce::Population pop = ce::testing::random_population(5000, 6, false, true);
  const std::string path = temp("shrinks.cpop");
  ce::write_columnar(pop, path);
  ce::detail::columnar_after_header = [](const std::string& p) {
    std::filesystem::resize_file(p, 64 + 8 * 100);  // the header and part of lambda
  };
  const std::string msg = error_of([&] { ce::read_columnar(path); });
  ce::detail::columnar_after_header = nullptr;
  EXPECT_NE(msg.find("the file shrank while it was read"), std::string::npos) << msg;
}

// Every reader checks a population the same way (read_population): a .cpop holding NaN, mu 0, a
// negative cost or no source at all is refused as its CSV would be, with the source's id.
TEST(Columnar, ReadPopulationChecksEveryFormatAlike) {
  const ce::Population pop = ce::testing::random_population(50, 8, false, false);
  struct Case {
    const char* name;
    void (*edit)(ce::Population&);
    const char* expected;
  };
  const Case cases[] = {
      {"nan", [](ce::Population& p) { p.lambda[7] = std::nan(""); },
       "source with id 7, field 'lambda'"},
      {"mu0", [](ce::Population& p) { p.mu[8] = 0.0; }, "source with id 8, field 'mu'"},
      {"negcost", [](ce::Population& p) { p.cost[9] = -1.0; }, "source with id 9, field 'cost'"},
      {"empty", [](ce::Population& p) { p = ce::Population{}; }, "the population is empty"},
  };
  for (const Case& c : cases) {
    ce::Population bad = pop;
    c.edit(bad);
    const std::string path = temp(std::string("bad_") + c.name + ".cpop");
    ce::write_columnar(bad, path);
    const std::string msg = error_of([&] { ce::read_population(path, 0); });
    EXPECT_NE(msg.find(c.expected), std::string::npos) << c.name << ": " << msg;
  }
  const std::string good = temp("good_read.cpop");
  ce::write_columnar(pop, good);
  EXPECT_EQ(ce::read_population(good, 0).lambda, pop.lambda);
}

// Issue #25: --sources from a pipe regressed when .cpop arrived (the format sniff consumed the
// pipe's first bytes and the CSV reader reopened it). A FIFO is read once, whatever it holds.
TEST(Columnar, PipesAreReadOnceInEitherFormat) {
  const ce::Population pop = ce::testing::random_population(300, 9, false, true);
  ce::write_columnar(pop, temp("pipe_src.cpop"));
  ce::write_sources_csv(pop, temp("pipe_src.csv"));
  for (const char* src : {"pipe_src.cpop", "pipe_src.csv"}) {
    const std::string fifo = temp("pipe.fifo");
    std::filesystem::remove(fifo);
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const std::string bytes = bytes_of(temp(src));
    std::thread writer([&] { put_bytes(fifo, bytes); });
    const ce::Population got = ce::read_population(fifo, 0);
    writer.join();
    EXPECT_EQ(got.lambda, pop.lambda) << src;
    EXPECT_EQ(got.x0, pop.x0) << src;
    EXPECT_FALSE(ce::is_columnar_file(fifo));  // never sniffed (that would consume it)
  }
}
