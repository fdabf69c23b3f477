// Golden expected-status files: the status of every test of a sweep, kept in
// the repository, so that CI fails on any change (doc/expected-status.md).
#ifndef COMPATLAB_QUERY_EXPECTED_STATUS_H_
#define COMPATLAB_QUERY_EXPECTED_STATUS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/blame.h"
#include "core/records.h"

namespace compatlab {

// One line of the file.
struct ExpectedStatus {
  std::string test_id;
  std::string model_id;
  std::string kind;
  std::string mode;
  std::string target;
  TestStatus status = TestStatus::kPass;
  // Whose failure it is (core/blame.h); format 1 files have none: model.
  std::string blame = "model";
};

// The file for `runs` (one run per test_id, e.g. LatestPerTest's): a header
// comment with the pass rate (passes over the tests blamed on the model,
// core/blame.h), then one tab-separated line per test
//   test_id  model_id  kind  mode  target  status  blame
// sorted by model_id, kind, mode, target, test_id. Ends in '\n'.
std::string FormatExpectedStatus(const std::vector<RunRecord>& runs);

// Parses a file. Blank lines and lines starting with '#' are skipped. Errors
// (InvalidArgument, "<name>:<line>: <why>"): not 7 tab-separated fields (6 in
// a format 1 file: blame model), an unknown status or blame, a test_id that is
// not 32 hex digits or appears twice.
absl::StatusOr<std::vector<ExpectedStatus>> ParseExpectedStatus(std::string_view text,
                                                                const std::string& name);

// One difference between the file and the runs.
struct ExpectedMismatch {
  enum What { kChanged, kMissing, kUnexpected };
  What what = kChanged;
  ExpectedStatus expected;  // for kUnexpected: the run's line
  std::string actual;       // the run's status (and blame when not model); "" for kMissing
};

// The pass rate of the file's lines (core/blame.h: passes over the lines blamed on the model).
PassRate ExpectedPassRate(const std::vector<ExpectedStatus>& expected);

// Every difference between `expected` and `runs` (one run per test_id): a
// test whose status or blame differs, an expected test without a run, a run
// of a test the file does not list. Sorted as the file is.
std::vector<ExpectedMismatch> CheckExpectedStatus(const std::vector<ExpectedStatus>& expected,
                                                  const std::vector<RunRecord>& runs);

// The mismatches for people, one line each, then
//   "expected status: N tests, C changed, M missing, U unexpected"
//   "pass rate: expected 50.0% (...); actual ..."   (PassRate::Describe)
// Ends in '\n'.
std::string FormatExpectedMismatches(const std::vector<ExpectedMismatch>& mismatches,
                                     const std::vector<ExpectedStatus>& expected,
                                     const std::vector<RunRecord>& runs);

}  // namespace compatlab

#endif  // COMPATLAB_QUERY_EXPECTED_STATUS_H_
