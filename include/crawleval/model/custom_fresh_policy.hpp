// `--policy custom` of the freshness model: the header CMake's CRAWLEVAL_FRESH_POLICY names
// (default examples/custom_fresh_policy.hpp, which states the contract), included under one name
// by the engines that compile it in (the CPU engine, the reference, a GPU per rank's host twin,
// and the GPU engines unless CRAWLEVAL_FRESH_POLICY_ON_GPU is OFF).
#pragma once

#if !defined(CRAWLEVAL_FRESH_POLICY_HEADER)
#error \
    "CRAWLEVAL_FRESH_POLICY_HEADER: the build defines it for the files that score --policy custom"
#endif
#include CRAWLEVAL_FRESH_POLICY_HEADER

namespace crawleval::custom {
/// The header compiled in, as CMake gave it (tests check the example's numbers only when it is
/// the example).
inline const char* fresh_policy_header() { return CRAWLEVAL_FRESH_POLICY_HEADER; }
}  // namespace crawleval::custom
