// Named columns, one rule for every reader (column_names.hpp): names in any case, a near miss of a
// known name refused (it would run with the column's default), a name that is not UTF-8 refused,
// other names ignored with a note; the writers and settings checks that share the readers' words.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include "crawleval/base/error.hpp"
#include "crawleval/io/column_names.hpp"
#include "crawleval/io/fresh_io.hpp"
#include "crawleval/io/io.hpp"
#include "crawleval/io/output_file.hpp"
#include "crawleval/model/change_rate.hpp"
#include "test_util.hpp"

namespace ce = crawleval;

namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = crawleval::testing::test_temp_path(name);
  std::ofstream(path) << text;
  return path;
}

/// The sources CSV's verdict on `header` followed by one row of as many ones: "" when read
/// (with the notes in *notes), else the error.
std::string sources(const std::string& header, std::vector<std::string>* notes = nullptr) {
  std::string row = "1";
  for (char c : header)
    if (c == ',') row += ",1";
  ce::SourcesCsvOptions o;
  o.note = [&](const std::string& n) {
    if (notes) notes->push_back(n);
  };
  try {
    ce::read_sources_csv(write_temp("names.csv", header + "\n" + row + "\n"), o);
  } catch (const ce::InputError& e) {
    return e.what();
  }
  return "";
}

std::string fresh(const std::string& header) {
  std::string row = "1";
  for (char c : header)
    if (c == ',') row += ",1";
  try {
    ce::parse_fresh_csv(header + "\n" + row + "\n", "f.csv");
  } catch (const ce::InputError& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST(ColumnNames, NearMissesAreRefusedWithTheNameMeant) {
  // A plural, one edit of a short name, two of a longer one, a swap, accents and case folded.
  EXPECT_TRUE(has(sources("lambda,xi,mu,costs"), "unknown column 'costs'; did you mean 'cost'?"))
      << sources("lambda,xi,mu,costs");
  EXPECT_TRUE(has(sources("lambda,xi,mu,cots"), "did you mean 'cost'?"));
  EXPECT_TRUE(has(sources("lambda,xi,mu,Coût"), "did you mean 'cost'?"));
  EXPECT_TRUE(has(sources("lambda,xi,mu,COU\xcc\x82T"), "did you mean 'cost'?"));  // decomposed
  EXPECT_TRUE(has(sources("lamdba,xi,mu"), "did you mean 'lambda'?"));
  EXPECT_TRUE(has(sources("lambda,xi,mu,expiries"), "did you mean 'expiry'?"));
  EXPECT_TRUE(has(sources("lambda,xi,mu,ids"), "did you mean 'id'?"));
  EXPECT_TRUE(has(sources("lambda,xi,mu,observ"), "did you mean 'observe'?"));
  EXPECT_TRUE(has(sources("\xce\xbb,xi,mu"), "did you mean 'lambda'?"));  // a Greek lambda
  // Refused whatever --strict-columns says, naming the file and line.
  EXPECT_TRUE(has(sources("lambda,xi,mu,costs"), "names.csv:1: "));
  // Not UTF-8 (a Latin-1 "coût"): refused, saying what it resembles.
  const std::string latin1 = sources("lambda,xi,mu,co\xfbt");
  EXPECT_TRUE(has(latin1, "unknown column 'co\\xfbt' (its name is not valid UTF-8")) << latin1;
  EXPECT_TRUE(has(latin1, "did you mean 'cost'?")) << latin1;
  EXPECT_TRUE(has(sources("lambda,xi,mu,\xff\xfe"), "not valid UTF-8"));
  // Distances count code points: a Cyrillic 'о' (two bytes) in "cоst" is one edit of "cost".
  EXPECT_TRUE(has(sources("lambda,xi,mu,c\xd0\xbest"), "did you mean 'cost'?"));
  // Fullwidth letters fold to ASCII, zero-width characters inside a name vanish.
  EXPECT_TRUE(has(sources("lambda,xi,mu,\xef\xbd\x83\xef\xbd\x8f\xef\xbd\x93\xef\xbd\x94s"),
                  "did you mean 'cost'?"));
  EXPECT_TRUE(has(sources("lambda,xi,mu,co\xe2\x80\x8bsts"), "did you mean 'cost'?"));
}

TEST(ColumnNames, WideBlanksAroundANameAreTrimmed) {
  // A no-break space, a zero-width space or a byte-order mark where a space would be: the name.
  std::vector<std::string> notes;
  EXPECT_EQ(sources("lambda,xi,mu,\xc2\xa0"
                    "cost\xc2\xa0",
                    &notes),
            "");
  EXPECT_EQ(sources("\xef\xbb\xbflambda,xi\xe2\x80\x8b,mu", &notes), "");
  EXPECT_TRUE(notes.empty());
}

TEST(ColumnNames, KnownNamesMatchInAnyCaseAndOthersAreNoted) {
  std::vector<std::string> notes;
  EXPECT_EQ(sources("LAMBDA,Xi,mu,Cost,ID,X0,Expiry", &notes), "");
  EXPECT_TRUE(notes.empty());
  // R's write.csv quotes every name (and its row names' column is "").
  EXPECT_EQ(sources("\"\",\"lambda\",\"xi\",\"mu\",\"cost\"", &notes), "");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(has(notes[0], "ignoring column '' (not one of")) << notes[0];
  notes.clear();
  EXPECT_TRUE(has(sources("lambda,xi,mu,\"costs\""), "did you mean 'cost'?"));
  // Unrelated names, and the freshness model's own (host is one edit from cost, but a name some
  // reader knows is never a near miss): a note naming every column a sources CSV knows.
  EXPECT_EQ(sources("lambda,xi,mu,url,host,rate,,Unnamed: 0", &notes), "");
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(has(notes[0],
                  "ignoring columns 'url', 'host', 'rate', '', 'Unnamed: 0' (not one "
                  "of lambda, xi, mu, cost, id, x0, expiry, observe; --strict-columns"))
      << notes[0];
  // No known name is a near miss of another, in either model.
  for (const ce::ColumnSchema* s : {&ce::sources_columns(), &ce::fresh_columns()})
    for (std::size_t c = 0; c < s->names.size(); ++c) {
      const ce::ColumnName m = ce::classify_column_name(s->names[c], s->names);
      EXPECT_EQ(m.kind, ce::ColumnNameKind::known) << s->names[c];
      EXPECT_EQ(m.column, int(c)) << s->names[c];
    }
}

TEST(ColumnNames, TheFreshnessReaderHasItsOwnNames) {
  EXPECT_EQ(fresh("id,host,importance,rate,rate_lo,rate_hi,complete,constrained,cost,"
                  "observations,changes"),
            "");
  EXPECT_EQ(fresh("Importance,RATE,Host"), "");
  EXPECT_TRUE(has(fresh("importance,rates"), "unknown column 'rates'; did you mean 'rate'?"));
  EXPECT_TRUE(has(fresh("importance,rate,hosts"), "did you mean 'host'?"));
  EXPECT_TRUE(has(fresh("importance,rate,rate_low"), "did you mean 'rate_lo'?"));
  EXPECT_TRUE(has(fresh("importance,rate,costs"), "did you mean 'cost'?"));
  EXPECT_TRUE(has(fresh("importance,rate,observation"), "did you mean 'observations'?"));
  // Unrelated names stay refused by this reader (it is strict), without a guess.
  const std::string lambda = fresh("importance,rate,lambda");
  EXPECT_TRUE(has(lambda, "unknown column 'lambda' (the header must name")) << lambda;
  EXPECT_FALSE(has(lambda, "did you mean"));
}

TEST(Settings, AUtilityLawIsForTheStochasticModelOnly) {
  const ce::Population pop = ce::paper_example();
  ce::RunConfig cfg;
  cfg.budget = 1;
  ce::set_utility(cfg, "lognormal:2");
  try {
    ce::validate(pop, cfg);
    ADD_FAILURE() << "a utility law with the deterministic model was accepted";
  } catch (const ce::InputError& e) {
    EXPECT_TRUE(has(e.what(),
                    "--utility applies to the stochastic model only; the deterministic "
                    "model uses each source's mean xi"))
        << e.what();
  }
  cfg.model = ce::Model::stochastic;
  EXPECT_NO_THROW(ce::validate(pop, cfg));
  cfg.model = ce::Model::deterministic;
  for (const char* law : {"exponential", "deterministic"}) {
    ce::set_utility(cfg, law);
    EXPECT_NO_THROW(ce::validate(pop, cfg)) << law;
  }
}

TEST(Writers, ASliceIsWrittenOnlyWhereItsFirstIdIsKept) {
  ce::Population pop = ce::synthetic_slice(100, 1, ce::SyntheticCosts::unit, 40, 10);
  pop.first_id = 40;
  const std::string csv = ::testing::TempDir() + "/slice.csv";
  std::remove(csv.c_str());
  try {
    ce::write_population(pop, csv, "path=");
    ADD_FAILURE() << "a slice was written as a CSV";
  } catch (const ce::InputError& e) {
    EXPECT_TRUE(has(e.what(), "path= ")) << e.what();
    EXPECT_TRUE(has(e.what(), "a CSV cannot keep a slice's first global id (40")) << e.what();
  }
  struct stat st;
  EXPECT_NE(::stat(csv.c_str(), &st), 0);  // nothing written
  const std::string cpop = ::testing::TempDir() + "/slice.cpop";
  ce::write_population(pop, cpop);
  EXPECT_EQ(ce::read_population(cpop, 56).first_id, 40u);
}

TEST(Writers, AMissingDirectoryIsBadInput) {
  const std::string path = ::testing::TempDir() + "/no/such/dir/out.csv";
  try {
    ce::write_sources_csv(ce::paper_example(), path);
    ADD_FAILURE() << "written into a missing directory";
  } catch (const ce::InputError& e) {
    EXPECT_TRUE(has(e.what(), "--out '" + path + "': cannot create files in")) << e.what();
  }
}

TEST(ChangeRate, AHistoryWithoutAFiniteRateIsNoRate) {
  const double days[] = {1e200, 1e200};
  const uint8_t changed[] = {1, 1};
  EXPECT_FALSE(ce::has_finite_rate(ce::estimate_incomplete(days, changed, 2)));
  const double usual[] = {1.0, 2.0};
  EXPECT_TRUE(ce::has_finite_rate(ce::estimate_incomplete(usual, changed, 2)));
  const uint8_t none[] = {0, 0};
  EXPECT_TRUE(ce::has_finite_rate(ce::estimate_incomplete(days, none, 2)));  // rate 0 is a rate
}
