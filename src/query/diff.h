// Regression diff between two sets of runs (two sweeps, two stacks): for each
// test_id the current run of each side (query/current.h) is compared. The command is
// `compatlab diff`; the rules are in doc/dataset.md ("Diff").
#ifndef COMPATLAB_QUERY_DIFF_H_
#define COMPATLAB_QUERY_DIFF_H_

#include <cstdint>
#include <optional>
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
  std::string stack;  // a named stack (doc/stacks.md): the runs whose `stack` field is it

  // "sweep=ID", "torch=2.13.0+cpu,transformers=5.23.0", "stack=t5": the set members.
  std::string Describe() const;
  // The store filter that selects the side's runs.
  RunFilter Filter() const;
};

// Parses a side: "SWEEP_ID", or comma-separated key=value pairs with keys
// sweep, torch, transformers and stack ("torch=2.12.0", "torch=X,transformers=Y",
// "stack=t5").
// InvalidArgument for an unknown key, an empty value, a key given twice, or
// nothing at all.
absl::StatusOr<DiffSide> ParseDiffSide(std::string_view text);

// Relative differences a change needs (0.05 = 5%): of the steady medians beyond their
// intervals' non-overlap; of the one-sample figures (prepare_s, memory) by the one-sample rule.
struct DiffThresholds {
  double steady = 0.05;   // steady_median_s
  double prepare = 0.25;  // prepare_s: one sample (query/one_sample.h), beyond kPrepareFloorS
  double memory = 0.20;   // host_peak_rss_bytes
};

enum class ChangeKind {
  kNewlyFailing,      // pass in base, anything else in head (a regression)
  kNewlyPassing,      // anything else in base, pass in head
  kStatusChanged,     // one status other than pass to another
  kSignatureChanged,  // the same failing status, another error signature
  kSlowerSteady,      // steady intervals apart, head slower (a regression)
  kSlowerPrepare,     // prepare_s intervals apart, head slower (a regression)
  kMoreMemory,        // host memory beyond threshold (a regression)
  kFasterSteady,      // steady intervals apart, head faster (an improvement)
  kFasterPrepare,     // prepare_s intervals apart, head faster (an improvement)
  kLessMemory,        // host memory below threshold (an improvement)
  kDifferentCpu,      // cpu_model differs: timings and memory not compared
  kDifferentStack,    // stack_versions differ (mode export): timings and memory not compared
  kOnlyInBase,        // no run of the test in head
  kOnlyInHead,        // no run of the test in base
};

// Where a timing lies (doc/dataset.md, "Diff"): for steady_median_s its
// stored 95% confidence interval (rows before schema 11: median -/+ the
// p90-median spread); for prepare_s the figure itself. A noisy row's interval
// is widened by kNoisyWidening on both sides (low / k, high * k), never dropped.
struct TimingInterval {
  double low = 0;
  double high = 0;
};
inline constexpr double kNoisyWidening = 2.0;

// The interval of a row's steady_median_s, widened when the row is noisy;
// nullopt when the row has no steady figure.
std::optional<TimingInterval> SteadyInterval(const RunResult& r);

// The interval of a row's prepare_s (the figure itself, widened when its first
// call was noisy: prepare_noisy, or noisy for a row before schema 13); nullopt
// when the row has no prepare figure. For ratio intervals (compare); diff judges
// prepare_s by the one-sample rule (query/one_sample.h).
std::optional<TimingInterval> PrepareInterval(const RunResult& r);

enum class TimingChange { kNone, kSlower, kFaster };

// Diff's one rule for "is this a change" of steady time, for every caller
// (diff, compare): kSlower when head's interval lies wholly above base's and
// head's median exceeds base's by more than `min_relative`; kFaster the other
// way round; else (overlap, a figure missing) kNone.
TimingChange SteadyChange(const RunResult& base, const RunResult& head, double min_relative = 0.05);

// "newly failing", "newly passing", ...: the section titles of the report.
std::string_view ChangeKindName(ChangeKind kind);
bool IsRegression(ChangeKind kind);
// Newly passing, faster steady or prepare, less memory.
bool IsImprovement(ChangeKind kind);

struct Change {
  ChangeKind kind = ChangeKind::kNewlyFailing;
  int base = -1;       // index into DiffReport::base; -1 for kOnlyInHead
  int head = -1;       // index into DiffReport::head; -1 for kOnlyInBase
  std::string detail;  // one line: the figures or the error signature
  std::string rule;    // which rule decided it, in words (doc/dataset.md, "Diff": the rule column)
};

struct DiffReport {
  std::vector<RunRecord> base;  // latest run of each test of the base side, by test_id
  std::vector<RunRecord> head;  // the same for head
  std::vector<Change> changes;  // by test_id, then in ChangeKind order
  int64_t compared = 0;         // tests with a run on both sides
  int64_t prepare_not_judged =
      0;  // compared tests whose prepare_s a noisy first call left unjudged

  int64_t Count(ChangeKind kind) const;
  int64_t Regressions() const;
  int64_t Improvements() const;
};

// Compares the latest run of each test_id of `base_runs` and `head_runs`:
//   - status: newly failing, newly passing, or changed between two non-pass
//     statuses; the same non-pass status with another stored error_signature
//     is a changed signature.
//   - when both sides have the same status and the same cpu_model: steady time
//     changed (slower: a regression; faster: an improvement) when its intervals
//     (TimingInterval: noisy rows widened) do not overlap and the medians differ
//     by more than the threshold; prepare time and memory, one sample each, by the
//     one-sample rule (query/one_sample.h). Each Change names its rule.
//   - a different cpu_model is flagged (kDifferentCpu), its metrics not compared;
//     so are different stack_versions (kDifferentStack: the target stack's packages).
DiffReport DiffRuns(std::vector<RunRecord> base_runs, std::vector<RunRecord> head_runs,
                    const DiffThresholds& thresholds = {});

// The report for people: a table per kind of change (tests listed by
// model), then one summary line
//   "summary: N compared, ...; R regressions, I improvements"
// after the pass rate of each side (passes over its runs blamed on the model,
// core/blame.h: a run compatlab could not test does not lower it)
//   "pass rate: base 50.0% (1 of 2 runs ...); head ..."
// Ends in '\n'.
std::string FormatDiffReport(const DiffReport& report, const std::string& base_name,
                             const std::string& head_name);

}  // namespace compatlab

#endif  // COMPATLAB_QUERY_DIFF_H_
