// Regression diff between two sets of runs (two sweeps, two stacks): for each
// test_id the current run of each side (query/current.h) is compared. The command is
// `compatlab diff`; the rules are in doc/dataset.md ("Diff").
#ifndef COMPATLAB_QUERY_DIFF_H_
#define COMPATLAB_QUERY_DIFF_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/records.h"
#include "query/current.h"
#include "store/store.h"

namespace compatlab {

// The runs of one side of a diff: a sweep, or stack versions (every run of
// every sweep on that stack). Empty members match anything.
struct DiffSide {
  std::string sweep_id;
  std::string torch_version;
  std::string transformers_version;

  // "sweep=ID", "torch=2.13.0+cpu,transformers=5.23.0": the set members.
  std::string Describe() const;
  // The store filter that selects the side's runs.
  RunFilter Filter() const;
};

// Parses a side: "SWEEP_ID", or comma-separated key=value pairs with keys
// sweep, torch and transformers ("torch=2.12.0", "torch=X,transformers=Y").
// InvalidArgument for an unknown key, an empty value, a key given twice, or
// nothing at all.
absl::StatusOr<DiffSide> ParseDiffSide(std::string_view text);

// Relative increases that count as a regression (0.05 = +5%).
struct DiffThresholds {
  double steady = 0.05;   // steady_median_s
  double prepare = 0.10;  // prepare_s
  double memory = 0.20;   // host_peak_rss_bytes
};

enum class ChangeKind {
  kNewlyFailing,      // pass in base, anything else in head (a regression)
  kNewlyPassing,      // anything else in base, pass in head
  kStatusChanged,     // one status other than pass to another
  kSignatureChanged,  // the same failing status, another error signature
  kSlowerSteady,      // steady_median_s beyond threshold and spread (a regression)
  kSlowerPrepare,     // prepare_s beyond threshold (a regression)
  kMoreMemory,        // host_peak_rss_bytes beyond threshold (a regression)
  kDifferentCpu,      // cpu_model differs: timings and memory not compared
  kDifferentStack,    // stack_versions differ (mode export): timings and memory not compared
  kOnlyInBase,        // no run of the test in head
  kOnlyInHead,        // no run of the test in base
};

// "newly failing", "newly passing", ...: the section titles of the report.
std::string_view ChangeKindName(ChangeKind kind);
bool IsRegression(ChangeKind kind);

struct Change {
  ChangeKind kind = ChangeKind::kNewlyFailing;
  int base = -1;       // index into DiffReport::base; -1 for kOnlyInHead
  int head = -1;       // index into DiffReport::head; -1 for kOnlyInBase
  std::string detail;  // one line: the figures or the error signature
};

struct DiffReport {
  std::vector<RunRecord> base;  // latest run of each test of the base side, by test_id
  std::vector<RunRecord> head;  // the same for head
  std::vector<Change> changes;  // by test_id, then in ChangeKind order
  int64_t compared = 0;         // tests with a run on both sides

  int64_t Count(ChangeKind kind) const;
  int64_t Regressions() const;
};

// Compares the latest run of each test_id of `base_runs` and `head_runs`:
//   - status: newly failing, newly passing, or changed between two non-pass
//     statuses; the same non-pass status with another stored error_signature
//     is a changed signature.
//   - when both sides have the same status and the same cpu_model: a metric
//     present on both sides regressed when head > base * (1 + threshold) and,
//     for steady_median_s, the increase also exceeds the run-to-run spread
//     (steady_p90_s - steady_median_s) of each side.
//   - a different cpu_model is flagged (kDifferentCpu), its metrics not compared;
//     so are different stack_versions (kDifferentStack: the target stack's packages).
DiffReport DiffRuns(std::vector<RunRecord> base_runs, std::vector<RunRecord> head_runs,
                    const DiffThresholds& thresholds = {});

// The report for people: a table per kind of change (tests listed by
// model), then one summary line
//   "summary: N compared, ...; R regressions"
// Ends in '\n'.
std::string FormatDiffReport(const DiffReport& report, const std::string& base_name,
                             const std::string& head_name);

}  // namespace compatlab

#endif  // COMPATLAB_QUERY_DIFF_H_
