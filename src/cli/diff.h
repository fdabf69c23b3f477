// `compatlab diff`: regressions between two sides (sweeps or stacks), and
// golden expected-status files. doc/dataset.md ("Diff"), doc/expected-status.md.
#ifndef COMPATLAB_CLI_DIFF_H_
#define COMPATLAB_CLI_DIFF_H_

#include <string>

#include "CLI/CLI.hpp"
#include "query/diff.h"

namespace compatlab {

struct DiffFlags {
  std::string db = "compatlab.db";
  std::string base;
  std::string head;
  bool fail_on_regression = false;
  std::string write_expected;
  std::string expected;
  DiffThresholds thresholds;
  std::string format = "text";  // text or markdown (the release report)
  std::string kb;               // knowledge file ("" = the project's)
};

// Adds diff's change thresholds (--steady-, --prepare-, --memory-threshold)
// to `cmd`, their help texts after `lead` (compare's too).
void AddDiffThresholds(CLI::App& cmd, DiffThresholds& thresholds, const std::string& lead);

// Adds the `diff` subcommand to `app`; its options fill `flags`.
CLI::App* AddDiffCommand(CLI::App& app, DiffFlags& flags);

// Exit codes: 0 done; 1 --fail-on-regression and a regression, or --expected
// and any change; 2 bad input (an unknown sweep, a side without runs, a
// malformed expected file).
int RunDiff(const DiffFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_DIFF_H_
