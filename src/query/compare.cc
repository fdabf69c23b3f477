#include "query/compare.h"

#include <utility>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "query/expected_status.h"
#include "query/release_report.h"
#include "util/fs.h"
#include "util/status.h"

namespace compatlab {
namespace {

// The runs of side `text` ("--base"/"--head" in messages).
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
      // A bare side that names no sweep names a stack (doc/stacks.md): `--base default`.
      if (text.find('=') != std::string::npos || !absl::IsNotFound(s)) {
        return absl::InvalidArgumentError(fmt::format("{}: {}", option, std::string(s.message())));
      }
      side->stack = std::exchange(side->sweep_id, "");
    }
  }
  auto runs = store.QueryRuns(side->Filter());
  if (!runs.ok()) return Recode(runs.status(), absl::StatusCode::kInternal);
  if (runs->empty() && text.find('=') == std::string::npos) {
    return absl::InvalidArgumentError(
        fmt::format("{}: no sweep or stack named {} in {}", option, text, store.path().string()));
  }
  if (runs->empty()) {
    return absl::InvalidArgumentError(
        fmt::format("{} {}: no runs in {}", option, side->Describe(), store.path().string()));
  }
  return runs;
}

}  // namespace

absl::StatusOr<CompareOutcome> Compare(const CompareOptions& options) {
  if (options.base.empty() && options.expected.empty() && options.write_expected.empty()) {
    return absl::InvalidArgumentError(
        "diff: give --base (compare), --expected or --write-expected");
  }
  std::vector<ExpectedStatus> expected;
  if (!options.expected.empty()) {
    auto text = ReadFile(options.expected);
    if (!text.ok()) return Recode(text.status(), absl::StatusCode::kInvalidArgument);
    auto parsed = ParseExpectedStatus(*text, options.expected.string());
    if (!parsed.ok()) return Recode(parsed.status(), absl::StatusCode::kInvalidArgument);
    expected = *std::move(parsed);
  }
  auto store = Store::Open(options.db, OpenMode::kReadOnly);
  if (!store.ok()) return Recode(store.status(), absl::StatusCode::kFailedPrecondition);
  DiffSide head_side;
  auto head = SideRuns(**store, "--head", options.head, &head_side);
  if (!head.ok()) return head.status();
  std::vector<RunRecord> base;
  DiffSide base_side;
  if (!options.base.empty()) {
    auto runs = SideRuns(**store, "--base", options.base, &base_side);
    if (!runs.ok()) return runs.status();
    base = *std::move(runs);
  }

  CompareOutcome outcome;
  const std::vector<RunRecord> latest = LatestPerTest(*head);
  if (!options.base.empty()) {
    DiffReport report = DiffRuns(std::move(base), *std::move(head), options.thresholds);
    if (options.markdown) {
      absl::StatusOr<ErrorKnowledgeBase> kb = ErrorKnowledgeBase::Load(options.kb_path);
      if (!kb.ok() && !absl::IsNotFound(kb.status())) {
        return Recode(kb.status(), absl::StatusCode::kInvalidArgument);
      }
      outcome.text += FormatReleaseReport(report, base_side.Describe(), head_side.Describe(),
                                          kb.ok() ? &*kb : nullptr);
    } else {
      outcome.text += FormatDiffReport(report, base_side.Describe(), head_side.Describe());
    }
    if (options.fail_on_regression && report.Regressions() > 0) outcome.failed = true;
  }
  if (!options.write_expected.empty()) {
    if (absl::Status s = WriteFileAtomic(options.write_expected, FormatExpectedStatus(latest));
        !s.ok()) {
      return Recode(s, absl::StatusCode::kInternal);
    }
    outcome.text += fmt::format("wrote {} ({} tests of {})\n", options.write_expected.string(),
                                latest.size(), head_side.Describe());
  }
  if (!options.expected.empty()) {
    const std::vector<ExpectedMismatch> mismatches = CheckExpectedStatus(expected, latest);
    outcome.text += FormatExpectedMismatches(mismatches, expected, latest);
    if (!mismatches.empty()) outcome.failed = true;
  }
  return outcome;
}

}  // namespace compatlab
