// What an op sweep came to (doc/ops.md, "Report" and "Diff"): counts by
// category and skip source, the stale skips, the table of cases weighted by
// the stored models that use their ops, and two op sweeps compared.
#ifndef COMPATLAB_OPS_OP_REPORT_H_
#define COMPATLAB_OPS_OP_REPORT_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/op_records.h"
#include "store/store.h"

namespace compatlab {

struct OpCounts {
  std::map<OpCategory, int64_t> by_category;
  std::map<std::string, int64_t> skipped_by_source;  // "" for a skip without a source
  int64_t stale = 0;                                 // IsStaleSkip
  int64_t total = 0;
};
OpCounts CountOps(const std::vector<OpResult>& results);
// "3 native, 1 fallback, 2 skipped" (categories with cases only; "none" when empty).
std::string CountsInline(const OpCounts& counts);

// Aten op overload ("aten::tanh") -> the model ids whose stored runs name it
// in fallback_ops: the models known to run it, on a target whose fallback
// audit saw it fall back (the only per-op record a run keeps).
using OpUsers = std::map<std::string, std::set<std::string>>;
absl::StatusOr<OpUsers> FallbackUsers(Store& store);
// The distinct models of `users` that use one of the overloads `r` executed
// (its aten_ops and fallback_ops).
int64_t ModelsUsing(const OpResult& r, const OpUsers& users);

// The whole report of a finished op sweep: its line, the counts by category and
// skip source, the stale skips, wall time.
std::string OpSweepReport(const OpSweepInfo& sweep, const std::vector<OpResult>& results,
                          double wall_s);

// The rows `compatlab ops show` prints: cases of `categories` (all when empty),
// most models first, then by key; at most `limit` (0: all).
struct OpTableOptions {
  std::set<OpCategory> categories;
  size_t limit = 0;
};
struct OpRow {
  const OpResult* result;
  int64_t models = 0;
};
std::vector<OpRow> OpRows(const std::vector<OpResult>& results, const OpUsers& users,
                          const OpTableOptions& options);
std::string OpTableText(const std::vector<OpRow>& rows);

// Two op sweeps of one target and mode compared case by case (by op, variant
// and dtype). Supported: native or fallback; failing: fail, error, timeout, crash.
struct OpChange {
  std::string key;
  std::string dtype;
  std::string base;  // category name, "absent" when the side has no such case
  std::string head;
  std::string detail;  // head's first failure or skip reason
};
struct OpDiff {
  std::vector<OpChange> newly_supported;
  std::vector<OpChange> newly_failing;  // supported in base: a regression
  std::vector<OpChange> newly_skipped;
  std::vector<OpChange> still_excluded;  // skipped on both sides
  std::vector<OpChange> stale_skips;     // head: skipped, run anyway, passed
  std::vector<OpChange> other;           // every other change of category
  int64_t unchanged = 0;
};
OpDiff DiffOps(const std::vector<OpResult>& base, const std::vector<OpResult>& head);
std::string OpDiffText(const OpDiff& diff, const OpSweepInfo& base, const OpSweepInfo& head);

// The op sweeps a side of `ops diff` names in `store`: an op sweep id, or
// "torch=VERSION" (the latest finished op sweep of each target and mode with
// that torch). NotFound when none matches; InvalidArgument for another form.
absl::StatusOr<std::vector<OpSweepInfo>> ResolveOpSide(Store& store, const std::string& selector);

// `ops diff`: every pair of op sweeps of the two sides with the same target and
// mode, diffed; the report's text and the number of newly failing cases.
// InvalidArgument when the sides share no target and mode; their resolution's
// errors (ResolveOpSide).
struct OpSidesDiff {
  std::string text;
  int64_t regressions = 0;
};
absl::StatusOr<OpSidesDiff> DiffOpSides(Store& base_store, const std::string& base,
                                        Store& head_store, const std::string& head);

}  // namespace compatlab

#endif  // COMPATLAB_OPS_OP_REPORT_H_
