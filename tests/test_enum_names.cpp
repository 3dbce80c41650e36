// The enums' name tables (enum_names.hpp): every enum prints, parses and lists its choices as its
// hand-written switches did, from one table.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "crawleval/base/enum_names.hpp"
#include "crawleval/evaluate/driver.hpp"
#include "crawleval/learn/syncbandit.hpp"
#include "crawleval/model/fresh_config.hpp"
#include "crawleval/model/population.hpp"
#include "crawleval/model/problem.hpp"

namespace ce = crawleval;

namespace {

/// Every name parses back to its value, no name is given twice, and the message lists them all.
template <class E>
void expect_round_trip(const std::string& choices) {
  std::set<std::string> seen;
  for (const ce::EnumName<E>& e : ce::EnumNames<E>::table) {
    SCOPED_TRACE(e.name);
    EXPECT_TRUE(seen.insert(e.name).second) << "a name given twice";
    EXPECT_EQ(ce::enum_parse<E>(e.name), e.value);
    EXPECT_STREQ(ce::enum_name(e.value), e.name);
  }
  EXPECT_EQ(ce::enum_choices<E>(), choices);
  EXPECT_EQ(ce::enum_names<E>().size(), seen.size());
}

}  // namespace

TEST(EnumNames, TinyTable) {
  EXPECT_STREQ(ce::enum_name(ce::Start::given), "given");
  EXPECT_EQ(ce::enum_parse<ce::Start>("fresh"), ce::Start::fresh);
  EXPECT_EQ(ce::enum_parse<ce::Start>("Fresh"), std::nullopt);  // exact, case-sensitive
  EXPECT_EQ(ce::enum_parse<ce::Start>(""), std::nullopt);
  EXPECT_STREQ(ce::enum_name(ce::Start(17)), "?");
  EXPECT_EQ(ce::enum_choices<ce::Start>(" | "), "empty | fresh | full | given");
  try {
    ce::enum_parse_or_throw<ce::Start>("stale\x1b[0m", "--start");
    FAIL() << "no error";
  } catch (const ce::InputError& e) {
    EXPECT_STREQ(e.what(), "--start 'stale\\x1b[0m' is not one of: empty, fresh, full, given");
  }
}

// The strings of the hand-written switches these tables replaced, in the order their messages
// listed them.
TEST(EnumNames, EveryEnumKeepsItsNames) {
  expect_round_trip<ce::Model>("deterministic, stochastic");
  expect_round_trip<ce::Policy>("whittle, greedy, round_robin, random, static, lip");
  expect_round_trip<ce::Observe>("full, belief");
  expect_round_trip<ce::Start>("empty, fresh, full, given");
  expect_round_trip<ce::UtilityLaw>(
      "deterministic, exponential, lognormal, pareto, gamma, empirical");
  expect_round_trip<ce::Backend>("auto, cpu, reference, cuda");
  expect_round_trip<ce::FreshPolicy>(
      "index, greedy, lambda-crawl, lambda-crawl-approx, binary-lambda-crawl, uniform, "
      "proportional, random, nutch-adaptive, custom");
  expect_round_trip<ce::Objective>("harmonic, binary");
  expect_round_trip<ce::FreshStart>("steady, fresh");
  expect_round_trip<ce::SyntheticCosts>("unit, lognormal");
  expect_round_trip<ce::sync::Family>("polynomial, poisson");
  expect_round_trip<ce::sync::Algorithm>("mirrorsync, async-mirrorsync, async-psgd");
  expect_round_trip<ce::sync::Gradient>("mean, first");
  expect_round_trip<ce::sync::Rule>("public-code, paper");
  // The public names callers use.
  EXPECT_STREQ(ce::to_string(ce::Policy::static_rate), "static");
  EXPECT_EQ(ce::parse_policy("lip"), ce::Policy::lip);
  EXPECT_STREQ(ce::to_string(ce::Backend::automatic), "auto");
  EXPECT_EQ(ce::parse_backend("automatic"), std::nullopt);
  EXPECT_STREQ(ce::to_string(ce::FreshPolicy::binary_lambda_crawl), "binary-lambda-crawl");
  EXPECT_EQ(ce::parse_objective("binary"), ce::Objective::binary);
  EXPECT_STREQ(ce::sync::to_string(ce::sync::Algorithm::async_psgd), "async-psgd");
  EXPECT_EQ(ce::utility_choices(),
            "deterministic, exponential, lognormal:SIGMA, pareto:A, gamma:K, empirical:FILE");
  EXPECT_STREQ(ce::utility_law_shape(ce::UtilityLaw::pareto), "tail index a");
  EXPECT_EQ(ce::utility_law_shape(ce::UtilityLaw::exponential), nullptr);
  EXPECT_EQ(ce::to_string(*ce::parse_utility("gamma:0.5")), "gamma:0.5");
}
