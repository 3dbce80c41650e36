// The binary columnar population format (.cpop): exact round trips, slices that equal the whole
// file's, and clear refusals of damaged files.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include "crawleval/columnar.hpp"
#include "crawleval/error.hpp"
#include "crawleval/io.hpp"
#include "test_util.hpp"

namespace ce = crawleval;

namespace {

std::string temp(const std::string& name) { return ::testing::TempDir() + "/" + name; }

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
  std::string v2 = good;
  v2[16] = 2;  // version
  put_bytes(temp("v2.cpop"), v2);
  EXPECT_NE(error_of([&] { ce::read_columnar(temp("v2.cpop")); }).find("version 2"),
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
