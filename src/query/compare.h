// `compatlab diff` as a use case: two sides of a store compared (sweeps or
// stacks), a side checked against a golden expected-status file, or written
// as one. doc/dataset.md ("Diff"), doc/expected-status.md.
#ifndef COMPATLAB_QUERY_COMPARE_H_
#define COMPATLAB_QUERY_COMPARE_H_

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"
#include "query/diff.h"

namespace compatlab {

struct CompareOptions {
  std::filesystem::path db;
  std::string base;  // a side (ParseDiffSide); "" = no comparison
  std::string head;  // the side under test
  bool fail_on_regression = false;
  std::filesystem::path write_expected;  // "" = none: else head's statuses are written there
  std::filesystem::path expected;        // "" = none: else head is checked against it
  DiffThresholds thresholds;
  // The comparison's form: the text report, or the Markdown release report
  // (query/release_report.h) with the knowledge base at `kb_path` explaining new failures.
  bool markdown = false;
  std::filesystem::path kb_path;
};

struct CompareOutcome {
  std::string text;     // what to print: the report, the file written, the mismatches
  bool failed = false;  // a regression with fail_on_regression, or a mismatch with expected
};

// Does what `options` asks, in that order: compare, write, check. Errors:
// InvalidArgument when none of base, expected and write_expected is given, for
// a bad side, an unknown sweep, a side without runs, or an expected file that
// cannot be read or parsed; FailedPrecondition when the store cannot be
// opened; Internal when the store cannot be read or the file cannot be written.
absl::StatusOr<CompareOutcome> Compare(const CompareOptions& options);

}  // namespace compatlab

#endif  // COMPATLAB_QUERY_COMPARE_H_
