// One error vocabulary for the whole program.
//
//  * InputError: the user gave something invalid (file, field, flag). The CLI prints the message
//  and
//    exits with code 2. The message names the file, line and field when there is one.
//  * Error: anything else that went wrong (I/O failure, CUDA error, ...): exit code 1.
//
// CE_EXPECTS(cond, msg) is the precondition check that produces a user-facing InputError.
#pragma once

#include <stdexcept>
#include <string>

namespace crawleval {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class InputError : public Error {
 public:
  using Error::Error;
};

/// Exit codes of the CLI.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

}  // namespace crawleval

#define CE_EXPECTS(cond, msg)                                     \
  do {                                                            \
    if (!(cond)) throw ::crawleval::InputError(std::string(msg)); \
  } while (0)
