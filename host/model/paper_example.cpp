#include "crawleval/model/population.hpp"

namespace crawleval {

Population paper_example() {
  Population pop;
  pop.origin = "paper example (Table 1)";
  pop.lambda = {250.0, 250.0, 250.0, 250.0};
  pop.xi = {1.0, 0.7, 0.2, 0.08};
  pop.mu = {0.7, 0.35, 0.7, 0.21};
  pop.cost = {1.0, 1.0, 1.0, 1.0};
  pop.id = {1, 2, 3, 4};  // the papers number the sources from 1
  return pop;
}

}  // namespace crawleval
