#include "cli/diff.h"

#include <iostream>

#include "cli/common.h"
#include "query/compare.h"

namespace compatlab {

int RunDiff(const DiffFlags& flags) {
  CompareOptions options;
  options.db = flags.db;
  options.base = flags.base;
  options.head = flags.head;
  options.fail_on_regression = flags.fail_on_regression;
  options.write_expected = flags.write_expected;
  options.expected = flags.expected;
  options.thresholds = flags.thresholds;
  absl::StatusOr<CompareOutcome> outcome = Compare(options);
  if (!outcome.ok()) return Fail(ExitCodeOf(outcome.status()), outcome.status());
  std::cout << outcome->text;
  return outcome->failed ? kExitFailure : kExitOk;
}

}  // namespace compatlab
