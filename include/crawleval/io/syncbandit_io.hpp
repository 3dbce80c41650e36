// Sync-bandit instances in files (syncbandit.hpp): per-arm CSVs and round-varying costs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "crawleval/learn/syncbandit.hpp"

namespace crawleval::sync {

/// Per-arm CSV (columns mu,p or delta,weight; optional arm column). The family is read from the
/// columns; `expected`, when given, must match it. Errors name file, line, field.
Instance read_instance_csv(const std::string& path, std::optional<Family> expected = std::nullopt);
void write_instance_csv(const Instance& inst, const std::string& path);

/// Round-varying costs from a CSV: columns round (1, 2, ...), arm and the family's parameters
/// (mu,p or delta,weight). Round 1 must give every arm; a later round lists only the arms whose
/// costs change (the others keep theirs); rounds after the last one listed repeat it. Returns
/// one instance per round up to `rounds` (the constraints from `base`, not validated: the caller
/// sets them and validates). Errors name file, line, field.
std::vector<Instance> read_round_costs_csv(const std::string& path, Family family,
                                           const Instance& base, uint32_t rounds);

}  // namespace crawleval::sync
