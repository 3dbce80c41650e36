// Policies from the papers as score functions (include/crawleval/function_policies.hpp).
#include "crawleval/function_policies.hpp"

#include "crawleval/model.hpp"

namespace crawleval {

double expiry_paper_index(double x, const SourceParams& p) {
  SourceParams q = p;
  q.u_star = p.x_cap;  // u_i / (1 - alpha_i) with the paper's u_i
  q.expiry = 0;
  q.alpha_e = 0.0;
  return whittle_index(x, q);
}

ScoreFn expiry_paper_index_policy(const Problem& pr) {
  return [&pr](const ScoreRequest& r) {
    for (std::size_t i = 0; i < r.n; ++i)
      r.scores[i] = expiry_paper_index(r.state[i], pr.params.at(i));
  };
}

}  // namespace crawleval
