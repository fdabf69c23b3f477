// Small pieces the commands share.
#ifndef COMPATLAB_CLI_COMMON_H_
#define COMPATLAB_CLI_COMMON_H_

#include <string>

#include "absl/status/status.h"
#include "plan/catalog.h"

namespace compatlab {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInterrupted = 130;

// Prints "compatlab: error: <message>" on one line to stderr and returns `code`.
int Fail(int code, const absl::Status& status);
int Fail(int code, const std::string& message);

// Prints "compatlab: warning: <message>" on one line to stderr.
void Warn(const std::string& message);

// The exit code of a use case's error: kExitBadInput for InvalidArgument,
// NotFound, FailedPrecondition and AlreadyExists (the use cases return these
// for what the user gave), kExitFailure for every other code.
int ExitCodeOf(const absl::Status& status);

// The interpreter and probe directory: `python_flag`, else $COMPATLAB_PYTHON,
// else <project home>/.venv/bin/python; probe/ under the project home.
ProbeEnv ResolveProbeEnv(const std::string& python_flag);

// "default" when `python` is the project's own interpreter (<project home>/.venv/bin/python,
// the stack `default` of doc/stacks.md), else "" (an interpreter given by path).
std::string DefaultStackOf(const std::string& python);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_COMMON_H_
