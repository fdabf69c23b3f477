// `compatlab sweep` below the CLI: a new sweep is resolved (resolve.h) and
// stored with its plan; a resume reads the stored plan and replays it exactly;
// then the tests still to run are executed (execute.h) through the real
// launcher (a Python zygote) and the sweep is summed up (summary.h).
#ifndef COMPATLAB_SWEEP_SWEEP_H_
#define COMPATLAB_SWEEP_SWEEP_H_

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "sweep/plan_file.h"
#include "sweep/resolve.h"

namespace compatlab {

struct SweepOptions {
  std::string db = "compatlab.db";
  std::filesystem::path home;  // the project home (suites/, targets/)
  // A new sweep: what to plan (request.base holds the interpreter, warm,
  // measurement, grace and memory limit of every test).
  PlanRequest request;
  // A shard: of the plan file `plan_file` (its tests, never planned here), else
  // of the plan resolved from `request`, by StableShardOf (sweep/plan_file.h).
  std::optional<ShardSpec> shard;
  // A plan file (`compatlab plan --out`): the sweep runs its shard `shard`; a
  // sweep of that plan and shard in the store already is resumed. Its tests
  // run only this installation's code unless allow_stored_code, as a resume's.
  std::string plan_file;
  // A resume: the stored plan replayed; the plan flags given must equal it.
  bool resume = false;
  std::string resume_id;  // "" = the latest unfinished sweep
  PlanFlags given;
  ProbeEnv probe;  // this installation's interpreter (--python or the default) and probe
  // Runs stored code (or a plan file's) that is not this installation's own
  // (sweep/stored_trust.h).
  bool allow_stored_code = false;
  // Given with --resume or a plan file, these replace the stored values for the tests run now.
  std::optional<double> timeout_s;
  std::optional<double> grace_s;
  std::optional<int64_t> mem_limit_bytes;
  std::optional<int> jobs;  // unset: 1, or on resume the sweep's stored jobs
  // A reduced model's failure reruns once at full size or a milder reduction
  // (ExecuteOptions::rerun_reduced; an execution policy, given again on resume).
  bool rerun_reduced = true;
  // Noisy tests measured again at the end (ExecuteOptions::remeasure_noisy and
  // remeasure_wait_s; --remeasure-noisy, --remeasure-wait-s: execution policy).
  int remeasure_noisy = 3;
  double remeasure_wait_s = 60;
  std::string command_line;
  // The compile store (doc/compile-cache.md): the local store (empty: cache::LocalStoreDir())
  // keeps every model-cold compiled pass's entry unless no_keep_compile; cache_from, a
  // remote (a directory or hub:ORG/NAME), has its entries of the plan's tests pulled into
  // the local store before the tests start, and each cold compile loads its key's entry.
  std::filesystem::path compile_store;
  std::string cache_from;
  bool no_keep_compile = false;
};

// How a sweep ended; `status` carries the one-line message of a failure.
enum class SweepEnd { kDone, kFailed, kBadInput, kInterrupted };
struct SweepOutcome {
  SweepEnd end = SweepEnd::kDone;
  absl::Status status;
};

// Runs the sweep, printing its lines on stderr and its summary table on
// stdout. Bad input (nothing written): a flag out of range, a bad suite,
// profile, model or store, a resume whose plan flags differ from the stored
// plan, whose plan was stored by an older compatlab (no execution settings),
// or whose stored interpreter no longer exists. Interrupted: a signal
// stopped it (the resume command is printed).
SweepOutcome Sweep(const SweepOptions& options);

// A named stack's interpreter (stack/stack.h; doc/stacks.md).
struct NamedInterpreter {
  std::string stack;
  std::string python;
};

// `sweep --stacks`: the new sweep of `options` once per stack, in order, each on the stack's
// interpreter (its own zygote) with the stack's name in every planned test's execution
// settings and so in every run. Stops at the first sweep that does not end done.
SweepOutcome SweepStacks(const SweepOptions& options, const std::vector<NamedInterpreter>& stacks);

}  // namespace compatlab

#endif  // COMPATLAB_SWEEP_SWEEP_H_
