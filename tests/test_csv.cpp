// Sources CSV: column order, optional columns, ids, round trip, and messages that name the line.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "crawleval/base/error.hpp"
#include "crawleval/io/io.hpp"
#include "test_util.hpp"

namespace ce = crawleval;

namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = crawleval::testing::test_temp_path(name);
  std::ofstream(path) << text;
  return path;
}

std::string error_of(const std::string& text, bool strict = false) {
  try {
    ce::SourcesCsvOptions o;
    o.strict_columns = strict;
    ce::read_sources_csv(write_temp("bad.csv", text), o);
  } catch (const ce::InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(Csv, AnyColumnOrderAndDefaults) {
  const ce::Population p = ce::read_sources_csv(
      write_temp("a.csv", "# comment\nmu, XI ,lambda\r\n0.7,1.0,250\n\n0.35,0.7,250\n"));
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p.lambda[1], 250.0);
  EXPECT_EQ(p.xi[1], 0.7);
  EXPECT_EQ(p.mu[0], 0.7);
  EXPECT_EQ(p.cost[0], 1.0);
  EXPECT_EQ(p.id[1], 1u);
  EXPECT_TRUE(p.x0.empty());
}

TEST(Csv, IdsOrderThePopulation) {
  const ce::Population p = ce::read_sources_csv(
      write_temp("b.csv", "id,lambda,xi,mu,cost,x0\n7,1,1,1,2,0.5\n3,2,2,2,1,0\n"));
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p.id[0], 3u);
  EXPECT_EQ(p.lambda[0], 2.0);
  EXPECT_EQ(p.cost[1], 2.0);
  EXPECT_EQ(p.x0[1], 0.5);
}

TEST(Csv, ExtraColumnsAreIgnoredWithANote) {
  // pandas' df.to_csv() index (an unnamed first column) and a url column.
  ce::SourcesCsvOptions o;
  std::vector<std::string> notes;
  o.note = [&](const std::string& n) { notes.push_back(n); };
  const std::string path =
      write_temp("extra.csv", ",url,lambda,xi,mu,cost\n0,http://a,1,2,3,4\n1,http://b,5,6,7,8\n");
  const ce::Population p = ce::read_sources_csv(path, o);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p.lambda, (std::vector<double>{1, 5}));
  EXPECT_EQ(p.cost, (std::vector<double>{4, 8}));
  EXPECT_EQ(p.id, (std::vector<uint64_t>{0, 1}));  // the index column is not an id
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0], path +
                          ": ignoring columns '', 'url' (not one of lambda, xi, mu, cost, id, "
                          "x0, expiry, observe; --strict-columns refuses them)");
  // Rows still need as many fields as the header; a repeated known column is still an error.
  EXPECT_NE(error_of("lambda,xi,mu,url\n1,2,3\n").find(":2: expected 4 fields, found 3"),
            std::string::npos);
  EXPECT_EQ(error_of("lambda,xi,mu,url,url\n1,2,3,a,b\n"), "no error");
  EXPECT_NE(error_of("lambda,xi,mu,mu,url\n1,2,3,4,a\n").find("column 'mu' appears twice"),
            std::string::npos);
}

TEST(Csv, RoundTripIsExact) {
  const ce::Population a = ce::synthetic_population(1000, 5, ce::SyntheticCosts::lognormal);
  const std::string path = ::testing::TempDir() + "/round.csv";
  ce::write_sources_csv(a, path);
  const ce::Population b = ce::read_sources_csv(path);
  EXPECT_EQ(a.lambda, b.lambda);
  EXPECT_EQ(a.xi, b.xi);
  EXPECT_EQ(a.mu, b.mu);
  EXPECT_EQ(a.cost, b.cost);
  EXPECT_EQ(a.id, b.id);
}

TEST(Csv, ErrorsNameTheFileLineAndField) {
  EXPECT_NE(error_of("").find("empty file"), std::string::npos);
  EXPECT_NE(error_of("lambda,xi,mu\n").find("no sources"), std::string::npos);
  EXPECT_NE(error_of("lambda,xi\n1,2\n").find("missing column(s) mu"), std::string::npos);
  EXPECT_NE(error_of("lambda,xi,mu,speed\n1,2,3,4\n", true).find("unknown column 'speed'"),
            std::string::npos);
  EXPECT_NE(error_of("lambda,xi,mu,mu\n1,2,3,4\n").find("appears twice"), std::string::npos);
  EXPECT_NE(error_of("lambda,xi,mu\n1,2,3\n1,2\n").find(":3: expected 3 fields, found 2"),
            std::string::npos);
  EXPECT_NE(error_of("lambda,xi,mu\n1,abc,3\n").find(":2: field 'xi': 'abc' is not a number"),
            std::string::npos);
  EXPECT_NE(error_of("lambda,xi,mu\n1,2,nan\n").find("field 'mu': 'nan' is not a finite number"),
            std::string::npos);
  EXPECT_NE(error_of("lambda,xi,mu\n1,2,inf\n").find("not a finite number"), std::string::npos);
  EXPECT_NE(error_of("lambda,xi,mu\n1,2,0\n").find("field 'mu': must be > 0"), std::string::npos);
  EXPECT_NE(error_of("lambda,xi,mu\n1,2,-1\n").find("field 'mu': must be > 0"), std::string::npos);
  EXPECT_NE(error_of("lambda,xi,mu\n-1,2,1\n").find("field 'lambda': must be >= 0"),
            std::string::npos);
  EXPECT_NE(error_of("lambda,xi,mu\n1,-2,1\n").find("field 'xi': must be >= 0"), std::string::npos);
  EXPECT_NE(error_of("lambda,xi,mu,cost\n1,2,1,0\n").find("field 'cost': must be > 0"),
            std::string::npos);
  EXPECT_NE(error_of("lambda,xi,mu,id\n1,2,1,4\n1,2,1,4\n")
                .find(":3: field 'id': id 4 already used on line 2"),
            std::string::npos);
  EXPECT_NE(error_of("lambda,xi,mu,id\n1,2,1,x\n").find("field 'id'"), std::string::npos);
  EXPECT_NE(error_of("lambda,xi,mu\n1,,1\n").find("field 'xi' is empty"), std::string::npos);
}

// Issue #25: messages must never break their caller. A Latin-1 byte, or a UTF-8 character cut by
// the 80-byte limit, made Python raise UnicodeDecodeError instead of InputError: printable()
// returns valid UTF-8 whatever it is given, and numbers print as typed.
TEST(Messages, PrintableIsValidUtf8AndCutsOnCharacters) {
  using crawleval::printable;
  EXPECT_EQ(printable("caf\xe9"), "caf\\xe9");         // Latin-1
  EXPECT_EQ(printable("caf\xc3\xa9"), "caf\xc3\xa9");  // UTF-8 kept
  EXPECT_EQ(printable("\x1b[31m"), "\\x1b[31m");       // C0 control
  EXPECT_EQ(printable("a\xc2\x9b"
                      "b"),
            "a\\xc2\\x9bb");                                // C1 control (CSI)
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(printable("\xe2\x82"), "\\xe2\\x82");           // a cut sequence
  // The limit falls inside the two-byte 'é' at bytes 79-80: cut before it, and say so.
  const std::string s = std::string(79, 'x') + "\xc3\xa9" + "tail";
  EXPECT_EQ(printable(s), std::string(79, 'x') + "... (85 bytes)");
  // Every output is valid UTF-8: no byte above 0x7F outside a well-formed sequence.
  std::string all;
  for (int b = 0; b < 256; ++b) all += char(b);
  const std::string out = printable(all, 1000);
  for (std::size_t k = 0; k < out.size();) {
    const unsigned char c = static_cast<unsigned char>(out[k]);
    const std::size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    ASSERT_TRUE(c < 0x80 || (c >= 0xC2 && c <= 0xF4)) << k;
    for (std::size_t j = 1; j < len; ++j)
      ASSERT_EQ(static_cast<unsigned char>(out[k + j]) & 0xC0, 0x80) << k;
    k += len;
  }
  EXPECT_EQ(crawleval::shown_number(1e-300), "1e-300");
  EXPECT_EQ(crawleval::shown_number(1e300), "1e+300");
  EXPECT_EQ(crawleval::shown_number(0.1), "0.1");
}
