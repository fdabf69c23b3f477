// Op coverage records (`compatlab ops`, doc/ops.md): an op sweep (one target and
// mode over PyTorch's OpInfo database) and one result per (op, variant, dtype) of
// it. The core's vocabulary for the ops, store, export and server modules; JSON
// appears only at their edges.
#ifndef COMPATLAB_CORE_OP_RECORDS_H_
#define COMPATLAB_CORE_OP_RECORDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/records.h"

namespace compatlab {

// One op sweep: a target and mode over the op_db of one torch, at `dtypes`.
struct OpSweepInfo {
  std::string op_sweep_id;
  std::string created_at;
  std::string finished_at;  // "" while it runs (or when it was interrupted)
  std::string target;
  std::string mode;     // kModeEager or kModeCompile
  std::string backend;  // compile backend; "" in eager mode
  std::string dtypes;   // comma-separated, in run order
  int64_t max_samples = 0;
  bool check_skips = false;  // skipped cases were run anyway (doc/ops.md, "Stale skips")
  std::string torch_version;
  std::string python_version;
  std::string host;
  std::string args;      // the command line
  int64_t planned = 0;   // (op, dtype) cases planned
  int64_t recorded = 0;  // results stored (filled by readers)
};

// Where a skip comes from (doc/ops.md, "Skips"): PyTorch's own OpInfo data, the
// target profile's op_exclusions, or compatlab's limits.
inline constexpr std::string_view kSkipSourcePytorch = "pytorch";
inline constexpr std::string_view kSkipSourceTarget = "target";
inline constexpr std::string_view kSkipSourceCompatlab = "compatlab";

// One (op, variant, dtype) case of an op sweep.
struct OpResult {
  std::string op_sweep_id;
  std::string op;       // OpInfo.name ("nn.functional.conv2d")
  std::string variant;  // OpInfo.variant_test_name ("" for the default)
  std::string dtype;
  // Of the op sweep (not stored per row; filled by readers).
  std::string target;
  std::string mode;
  std::string torch_version;

  TestStatus status = TestStatus::kHarnessError;
  std::string detail;  // why skipped, or what ended the case
  int64_t samples = 0;
  int64_t passed = 0;
  int64_t failed = 0;
  int64_t errored = 0;
  int64_t timed_out = 0;
  std::string first_failure;  // the first failed sample's message (bounded)
  std::string error_type;
  std::string signature;  // FailureSignature of the first failure ("" on a pass)
  std::optional<double> max_abs_err;
  std::optional<double> max_rel_err;
  std::optional<double> atol;
  std::optional<double> rtol;
  std::string tol_source;      // toleranceOverride, precisionOverride, test_compare_cpu
  std::string ref_dtype;       // the CPU reference's dtype
  std::string fallback_audit;  // audited, not_applicable, unavailable: REASON, "" not run
  std::string aten_ops;        // JSON array text: the overloads one passed call executed
  std::string fallback_ops;    // JSON object text {op: calls} that ran through the CPU fallback
  std::string skip_source;     // "" or kSkipSource*: the case has a skip (run anyway under
                               // check_skips, else status skipped)
  std::string skip_kind;       // skip, xfail (PyTorch's expectedFailure), exclude (target)
  std::string skip_reason;
  double wall_s = 0;

  // "name" or "name:variant": the exact key of doc/ops.md, "Op keys".
  std::string Key() const { return variant.empty() ? op : op + ":" + variant; }
};

// What a case came to, for counting (doc/ops.md, "Categories").
enum class OpCategory {
  kNative,    // passed, nothing through the CPU fallback (or no fallback to audit: cpu)
  kFallback,  // passed, some executed op ran through the CPU fallback
  kFail,      // fail_accuracy: a sample's outputs differ from the reference
  kError,     // fail_to_run, fail_to_compile, harness_error
  kTimeout,
  kCrash,  // crash or oom: the child died on this op
  kSkipped,
};
OpCategory CategoryOf(const OpResult& r);
// "native", "fallback", "fail", "error", "timeout", "crash", "skipped".
std::string_view OpCategoryName(OpCategory c);
// Every category, in declaration order.
const std::vector<OpCategory>& AllOpCategories();
// Inverse of OpCategoryName; InvalidArgument for another name.
absl::StatusOr<OpCategory> ParseOpCategory(std::string_view name);

// True when a skipped case was run anyway (check_skips) and passed: its skip is stale.
bool IsStaleSkip(const OpResult& r);

// OK when `key` is an op key: "name" or "name:variant", each of [A-Za-z0-9_.-]
// (name non-empty, at most 200 bytes); InvalidArgument naming it otherwise.
absl::Status CheckOpKey(std::string_view key);

}  // namespace compatlab

#endif  // COMPATLAB_CORE_OP_RECORDS_H_
