// `compatlab ops` below the CLI (doc/ops.md): PyTorch's OpInfo database run on
// one target and mode, batch by batch in test children forked from the zygote
// (the runner of sweeps: supervisor, deadlines, memory limits, statuses), each
// (op, variant, dtype) case stored in the op_results table as it comes back.
// A child that crashes or hangs costs the op it was running; the rest of its
// batch runs again in a new child.
#ifndef COMPATLAB_OPS_OPS_H_
#define COMPATLAB_OPS_OPS_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/op_records.h"
#include "ops/op_plan.h"
#include "plan/catalog.h"
#include "runner/decide_status.h"

namespace compatlab {

struct OpsOptions {
  std::string db = "compatlab.db";
  std::filesystem::path home;  // the project home (targets/)
  std::string target = "cpu";  // a profile name, or a path with allow_profile_paths
  bool allow_profile_paths = false;
  std::string mode = "eager";  // eager or compile (the profile's backend)
  std::string backend;         // compile mode: replaces the profile's backend
  std::vector<std::string> dtypes = {"float32"};
  OpSelection selection;
  int64_t max_samples = 8;   // sample inputs per (op, dtype)
  int64_t batch_size = 16;   // ops per test child
  double op_timeout_s = 60;  // one case's limit (the child's timer); a batch's
                             // deadline is this times its ops plus kBatchStartS
  double grace_s = 2;
  int64_t mem_limit_bytes = int64_t{8} << 30;
  int jobs = 1;
  bool check_skips = false;  // run skipped cases anyway (doc/ops.md, "Stale skips")
  ProbeEnv probe;
  std::string command_line;
};

// A batch's deadline beyond its ops' own: the child's start (the target's
// imports, inductor's first compile).
inline constexpr double kBatchStartS = 120;

// How `compatlab ops` ended; `status` carries a failure's one-line message.
enum class OpsEnd { kDone, kFailed, kBadInput, kInterrupted };
struct OpsOutcome {
  OpsEnd end = OpsEnd::kDone;
  absl::Status status;
  std::string op_sweep_id;
};

// Runs the op sweep: progress on stderr, the summary (doc/ops.md, "Report") on
// stdout. Bad input (nothing written): options out of range, an unknown
// target, mode or dtype, an op key not in the installed torch's op_db.
OpsOutcome RunOps(const OpsOptions& options);

// What one finished batch came to: a result for every key it ran, and the
// keys it never reached (after a child that died) as a new batch.
struct BatchSettlement {
  std::vector<OpResult> results;
  std::optional<OpBatch> rest;
};
// Settles `batch` of `op_sweep_id` from its child's facts: each op_case line
// is a result; the op the child had started when it died (op_start without
// op_case) gets the batch's status (timeout, crash, oom) and message; the ops
// after it are `rest`. A batch whose child reported no op at all gives every
// op its status (a target that is unavailable here: skipped with its reason);
// an op whose line was refused (op_lines.h), or too many lines, is harness_error. Cases of an
// excluded op (run under check_skips) carry the exclusion as their skip.
BatchSettlement SettleBatch(const OpBatch& batch, const ExitFacts& facts,
                            const std::string& op_sweep_id,
                            const std::map<std::string, OpExclusion>& excluded);

}  // namespace compatlab

#endif  // COMPATLAB_OPS_OPS_H_
