// The papers' policies given as score functions (function_policies.hpp): hand-checked values and
// their runs through the function engine.
#include <gtest/gtest.h>

#include <cmath>

#include "crawleval/driver.hpp"
#include "crawleval/function_policies.hpp"
#include "crawleval/io.hpp"
#include "crawleval/model.hpp"
#include "crawleval/rollout.hpp"

namespace ce = crawleval;

// The learning paper's expiry index (eqs. 4-5) is Theorem 1's with u* replaced by
// u*' = u* (1 - alpha^E). With E = 2 the belief states are u (age 1) and u (1 + alpha) = u*'
// (age >= 2). At u: eta = ceil(log_alpha(alpha / (1 + alpha))) = 2 for alpha = e^-0.7, so the
// index is L_2(u) = u*' (1 - alpha^2) - 2 (1 - alpha)(u*' - u) = u (1 - alpha)(1 + alpha^2), where
// crawleval's expiry index is L_1(u) = (1 - alpha) u; at age >= 2 both are u*' / C.
TEST(FunctionPolicies, ExpiryPaperIndexByHand) {
  const ce::SourceParams p = ce::derive_params(250, 1.0, 0.7, 2.0, 1.0, 2);
  const double a = p.alpha, u = ce::drift(p);
  EXPECT_NEAR(ce::expiry_paper_index(u, p), u * (1 - a) * (1 + a * a) / 2.0, 1e-12 * u);
  double om;
  const double x1 = ce::AgeState::value(1, 5, 0.0, p, &om);
  EXPECT_NEAR(ce::AgeState::index(1, x1, om, p), (1 - a) * u / 2.0, 1e-12 * u);
  const double x2 = ce::AgeState::value(7, 9, 0.0, p, &om);
  EXPECT_NEAR(x2, u * (1 + a), 1e-12 * u);
  EXPECT_NEAR(ce::expiry_paper_index(x2, p), x2 / 2.0, 1e-12 * u);
  EXPECT_NEAR(ce::AgeState::index(7, x2, om, p), x2 / 2.0, 1e-12 * u);
  // Without expiry the paper's index is Theorem 1's.
  const ce::SourceParams q = ce::derive_params(250, 1.0, 0.7, 2.0, 1.0, 0);
  for (double x : {0.0, 10.0, 179.0, 300.0, 400.0})
    EXPECT_EQ(ce::expiry_paper_index(x, q), ce::whittle_index(x, q));
}

// Without expiry the paper's expiry policy is the Whittle policy, bit for bit, under belief.
TEST(FunctionPolicies, ExpiryPaperPolicyIsWhittleWithoutExpiry) {
  const ce::Population pop = ce::paper_example();
  ce::RunConfig cfg;
  cfg.model = ce::Model::stochastic;
  cfg.observe = ce::Observe::belief;
  cfg.budget = 2;
  cfg.epochs = 300;
  cfg.replications = 3;
  const ce::Problem pr = ce::make_problem(pop, cfg);
  const ce::RolloutOutput a = ce::function_rollout(pr, ce::expiry_paper_index_policy(pr), "paper");
  const ce::RolloutOutput b = ce::rollout(pr, ce::Policy::whittle, ce::Backend::cpu);
  EXPECT_EQ(a.replication_reward, b.replication_reward);
}
