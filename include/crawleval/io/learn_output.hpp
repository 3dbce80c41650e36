// The results of the learners and of the relaxed problem's policies as the CLI's JSON gives them
// (`crawleval learn lspe --json`, `crawleval relaxed --json`), built once for the CLI and Python.
#pragma once

#include <nlohmann/json.hpp>

#include "crawleval/analysis/relaxed_policy.hpp"
#include "crawleval/learn/lspe.hpp"
#include "crawleval/model/population.hpp"

namespace crawleval {

/// The LSPE(0) experiment on `pop` (lspe_experiment) and what it is measured against: the
/// Whittle policy with known parameters (deterministic model) at M = 1 and at the operating
/// policy's N0, and the Lagrangian bound at the learner's mean crawl rate. The fields of
/// `learn lspe --json` except tool, version and context. `ex`, when given, receives the
/// experiment (replication 0's trace with cfg.trace).
nlohmann::json lspe_report(const Population& pop, const LspeConfig& cfg,
                           LspeExperiment* ex = nullptr);

/// The average-budget policy on `pop` with cfg's budget, epochs, burn-in, replications and seed
/// (average_budget_policy, simulate_average_budget), and with `dual` the online dual descent over
/// cfg.epochs epochs (its curve in `curve` when given). The fields of `relaxed --json` except
/// tool, version and context.
nlohmann::json relaxed_report(const Population& pop, const RunConfig& cfg,
                              const DualDescentConfig* dual = nullptr,
                              DualDescentRun* curve = nullptr);

}  // namespace crawleval
