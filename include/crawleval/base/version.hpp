// What this crawleval is: one version string (CMakeLists.txt's project(VERSION), which the
// command line, the JSON and the Python package all report), the git commit it was built from and
// the build's settings (generated at every build by cmake/version.cmake).
#pragma once

namespace crawleval {

const char* version();     ///< e.g. "0.2.0"
const char* git_commit();  ///< 12 hex digits, "-dirty" with uncommitted changes; or "unknown"
const char* build_type();  ///< CMAKE_BUILD_TYPE, e.g. "Release"
const char* compiler();    ///< e.g. "GNU 12.2.0"

}  // namespace crawleval
