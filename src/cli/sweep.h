// `compatlab sweep`: its flags, turned into SweepOptions (src/sweep/sweep.h).
#ifndef COMPATLAB_CLI_SWEEP_H_
#define COMPATLAB_CLI_SWEEP_H_

#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "sweep/resolve.h"

namespace compatlab {

// Unset or empty means "not given": a resume takes the stored plan's value.
struct SweepFlags {
  std::string db = "compatlab.db";
  // plan.python "" = $COMPATLAB_PYTHON or <home>/.venv/bin/python.
  PlanFlags plan;
  std::optional<double> timeout_s;
  std::optional<std::string> mem_limit;  // default 8G
  std::optional<int> jobs;               // default 1
  bool resume = false;
  std::string resume_id;          // "" = the latest unfinished sweep
  std::optional<double> grace_s;  // default 2
  std::string command_line;
  bool allow_profile_paths = false;  // a suite may name target profiles by path
  bool no_rerun_reduced = false;     // --no-rerun-reduced: no reduction reruns
  int remeasure_noisy = 3;           // --remeasure-noisy
  double remeasure_wait_s = 60;      // --remeasure-wait-s
  std::string cache_from;            // --cache-from REMOTE (doc/compile-cache.md)
  bool no_keep_compile = false;      // --no-keep-compile
  bool allow_stored_code = false;    // --allow-stored-code: a resume runs the stored plan's code
  std::string plan_file;             // --plan FILE: run a shard of a plan file
  std::string shard;                 // --shard I/N, as given
  std::vector<std::string> stacks;   // --stacks: run the plan on each named stack
};

// Adds the `sweep` subcommand to `app`; its options fill `flags`.
CLI::App* AddSweepCommand(CLI::App& app, SweepFlags& flags);

// The options that say what to plan, shared by `sweep` and `plan`, in their
// --help order: --suite, the model options, the axis options and the run
// options that are part of the plan (deadline, measurement budget, memory
// limit, grace, interpreter); `sweep` adds --jobs and --no-rerun-reduced
// among them (`execution_policy`).
void AddPlanOptions(CLI::App& cmd, SweepFlags& flags, bool execution_policy);

// The plan request of `flags` (the suite, default smoke; the overrides; the
// probe), or the one-line error of a bad --mem-limit or --max-measure-s.
absl::StatusOr<PlanRequest> PlanRequestOf(const SweepFlags& flags);

// Runs a sweep; returns the process exit code (0 done, 1 harness failure,
// 2 bad input, 130 interrupted).
int RunSweep(const SweepFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_SWEEP_H_
