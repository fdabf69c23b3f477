// Plan resolution: a suite, the command line's overrides, the target profiles
// and the model catalog become a ResolvedPlan, whose tests carry everything
// needed to run them exactly (core/resolved_test.h). ResolvePlan and
// CheckResumeFlags are pure; LoadPlan reads the files and asks the probe.
#ifndef COMPATLAB_SWEEP_RESOLVE_H_
#define COMPATLAB_SWEEP_RESOLVE_H_

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/resolved_test.h"
#include "plan/catalog.h"
#include "plan/plan.h"
#include "plan/suite.h"
#include "plan/target.h"

namespace compatlab {

struct ResolvedPlan {
  std::string suite;  // the suite's name, + kModelsSuffix when --models replaced its models
  std::vector<ResolvedTest> tests;
};

// Expands `suite` with `overrides` (plan/plan.h, ExpandPlan) and resolves each
// test: `base` (interpreter, measurement, warm, grace, memory limit) with the
// content of its target's profile and, in compile mode, the profile's compile
// options. Compile options are decided over the whole plan: when the plan's
// model tests have more than one (batch size, sequence length) shape, every
// static compiled test gets "dynamic": false (each shape compiles on its own); a
// dynamic test (--dynamic) gets its own (plan/target.h, CompileOptionsFor).
// Harness tests get neither profile nor compile options. Errors: those of
// ExpandPlan.
// Appended to the stored suite name when --models replaced the suite's models
// ("smoke+models"): the sweep did not run the suite's own models.
inline constexpr std::string_view kModelsSuffix = "+models";

absl::StatusOr<ResolvedPlan> ResolvePlan(const Suite& suite, const PlanOverrides& overrides,
                                         const TestExecution& base, const ModelCatalog* catalog,
                                         const std::map<std::string, TargetProfile>& profiles);

// What the command line asks to plan, before any file is read.
struct PlanRequest {
  std::string suite = "smoke";  // name under <home>/suites, or a .json path
  PlanOverrides overrides;      // `targets` may hold names or .json paths; no checkpoint
  std::string model_path;       // "" or a local checkpoint directory
  std::string model_code;       // "" or FILE.py:FUNCTION (--model-code)
  TestExecution base;           // see ResolvePlan; base.python runs the probe
  // A profile is code (doc/targets.md): a suite file may name one by path
  // only when this is set (--allow-profile-paths); by name it is one of targets/.
  bool allow_profile_paths = false;
};

// Loads the suite and profiles from `home` (suites/, targets/), hashes and
// inspects the checkpoint and loads the catalog through the probe when the
// plan needs them, then ResolvePlan. Errors: InvalidArgument, NotFound and
// the like for bad input; Internal when the probe could not answer.
absl::StatusOr<ResolvedPlan> LoadPlan(const PlanRequest& request,
                                      const std::filesystem::path& home);

// The command line's plan flags as given (each unset or empty when not
// given): what a new sweep plans from, and what a resume must agree with.
struct PlanFlags {
  std::string suite;
  std::vector<std::string> models;
  std::string model_path;
  std::string model_code;             // --model-code, as given
  bool trust_remote_code = false;     // --trust-remote-code
  std::vector<std::string> baseline;  // --baseline, as given
  std::vector<std::string> kinds;
  std::vector<std::string> targets;
  std::vector<std::string> modes;
  std::string backend;
  std::vector<std::string> dtypes;
  std::vector<int64_t> batch_sizes;
  std::vector<int64_t> seq_lens;
  std::vector<int64_t> ranks;        // --ranks, as given
  std::string parallel;              // --parallel tp|dp, as given
  std::vector<std::string> dynamic;  // --dynamic static|true|mark, as given
  std::optional<int64_t> new_tokens;
  std::optional<int64_t> train_steps;
  std::vector<std::string> load_rates;  // --rates, as given
  std::string load_slo;                 // --slo, as given
  std::optional<int64_t> load_requests;
  std::string size;                // --size reduced|full, as given
  std::vector<std::string> heads;  // --heads rule|all|CLASS,..., as given
  bool weights = false;            // --weights
  bool warm = false;
  std::string profile;  // --profile: "steady" or "prepare"; "" not given
  std::string python;
  std::string mem_limit_method;
  // --max-measure-s: the measurement's budget (MeasureOptions::max_time_s).
  std::optional<double> max_measure_s;
};

// OK when every flag given equals the stored plan (`suite` is the sweep's
// suite name, `plan` its whole stored plan); else InvalidArgument naming the
// first flag that differs, with the stored value. A target given as a path
// matches the profile name equal to its file's stem; --rates and --slo are
// compared in their canonical form (plan/plan.h, KindParamVariants); --heads
// against the head classes planned per model (a class list must be the plan's
// classes, rule means one per model, all is refused where every model has one
// class, since only the catalog could tell it from rule). REQUIRES: every test of
// `plan` has its execution settings.
absl::Status CheckResumeFlags(const PlanFlags& flags, const std::string& suite,
                              const std::vector<ResolvedTest>& plan);

}  // namespace compatlab

#endif  // COMPATLAB_SWEEP_RESOLVE_H_
