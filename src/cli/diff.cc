#include "cli/diff.h"

#include <iostream>

#include "cli/common.h"
#include "fmt/format.h"
#include "query/expected_status.h"
#include "util/fs.h"

namespace compatlab {
namespace {

// The runs of side `text` ("--base"/"--head" in messages), or the exit code.
absl::StatusOr<std::vector<RunRecord>> SideRuns(Store& store, const std::string& option,
                                                const std::string& text, DiffSide* side) {
  absl::StatusOr<DiffSide> parsed = ParseDiffSide(text);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: {}", option, std::string(parsed.status().message())));
  }
  *side = *parsed;
  if (!side->sweep_id.empty()) {
    if (absl::Status s = store.GetSweep(side->sweep_id).status(); !s.ok()) {
      return absl::InvalidArgumentError(fmt::format("{}: {}", option, std::string(s.message())));
    }
  }
  auto runs = store.QueryRuns(side->Filter());
  if (!runs.ok()) return runs.status();
  if (runs->empty()) {
    return absl::InvalidArgumentError(
        fmt::format("{} {}: no runs in {}", option, side->Describe(), store.path().string()));
  }
  return runs;
}

}  // namespace

int RunDiff(const DiffFlags& flags) {
  if (flags.base.empty() && flags.expected.empty() && flags.write_expected.empty()) {
    return Fail(kExitBadInput, "diff: give --base (compare), --expected or --write-expected");
  }
  std::vector<ExpectedStatus> expected;
  if (!flags.expected.empty()) {
    auto text = ReadFile(flags.expected);
    if (!text.ok()) return Fail(kExitBadInput, text.status());
    auto parsed = ParseExpectedStatus(*text, flags.expected);
    if (!parsed.ok()) return Fail(kExitBadInput, parsed.status());
    expected = *std::move(parsed);
  }
  auto store = Store::Open(flags.db, OpenMode::kReadOnly);
  if (!store.ok()) return Fail(kExitBadInput, store.status());
  DiffSide head_side;
  auto head = SideRuns(**store, "--head", flags.head, &head_side);
  if (!head.ok()) {
    return Fail(
        head.status().code() == absl::StatusCode::kInvalidArgument ? kExitBadInput : kExitFailure,
        head.status());
  }
  std::vector<RunRecord> base;
  DiffSide base_side;
  if (!flags.base.empty()) {
    auto runs = SideRuns(**store, "--base", flags.base, &base_side);
    if (!runs.ok()) {
      return Fail(
          runs.status().code() == absl::StatusCode::kInvalidArgument ? kExitBadInput : kExitFailure,
          runs.status());
    }
    base = *std::move(runs);
  }

  int exit_code = kExitOk;
  const std::vector<RunRecord> latest = LatestPerTest(*head);
  if (!flags.base.empty()) {
    DiffReport report = DiffRuns(std::move(base), *std::move(head), flags.thresholds);
    std::cout << FormatDiffReport(report, base_side.Describe(), head_side.Describe());
    if (flags.fail_on_regression && report.Regressions() > 0) exit_code = kExitFailure;
  }
  if (!flags.write_expected.empty()) {
    if (absl::Status s = WriteFileAtomic(flags.write_expected, FormatExpectedStatus(latest));
        !s.ok()) {
      return Fail(kExitFailure, s);
    }
    std::cout << fmt::format("wrote {} ({} tests of {})\n", flags.write_expected, latest.size(),
                             head_side.Describe());
  }
  if (!flags.expected.empty()) {
    const std::vector<ExpectedMismatch> mismatches = CheckExpectedStatus(expected, latest);
    std::cout << FormatExpectedMismatches(mismatches, expected.size());
    if (!mismatches.empty()) exit_code = kExitFailure;
  }
  return exit_code;
}

}  // namespace compatlab
