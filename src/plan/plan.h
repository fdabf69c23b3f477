// Planning: a suite plus command-line overrides, expanded into the ordered
// list of tests of a sweep. Pure: no processes, no store.
#ifndef COMPATLAB_PLAN_PLAN_H_
#define COMPATLAB_PLAN_PLAN_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/records.h"
#include "plan/axes.h"
#include "plan/input.h"
#include "plan/models.h"

namespace compatlab {

// Kind load's groups: the rows of one model, target, mode, dtype, shape and kind
// parameters but scenario and rate. Their server rows' rates multiply one figure,
// the throughput of the group's offline row (sweep/execute.h); ExpandPlan puts
// it before them. For a server row, the test id of its group's offline row;
// nullopt for every other test.
std::optional<std::string> LoadBaseTestId(const TestSpec& spec);
// True for kind load's offline row (the base of its group's server rows).
bool IsLoadOffline(const TestSpec& spec);
// Kind load's one objective per group: without an explicit objective (kind_params slo,
// --slo), every offline and server row is judged by the goodput objectives of its group's
// single_stream row (sweep/execute.h); ExpandPlan puts that row first. For such a row, the
// test id of its group's single_stream row; nullopt for every other test.
std::optional<std::string> LoadSloTestId(const TestSpec& spec);
// True for kind load's single_stream row (the objective of its group's other rows).
bool IsLoadSingleStream(const TestSpec& spec);

// The target names of the plan, in order (overrides first, else the suite's).
std::vector<std::string> PlanTargets(const Suite& suite, const PlanOverrides& overrides);

// The plan flags that set no axis and choose no model: --new-tokens and --train-steps
// from 1 to 4096, --size reduced or full, neither --size full nor --weights beside a
// checkpoint or code model. InvalidArgument naming the flag.
absl::Status CheckPlanFlags(const PlanOverrides& overrides);

// The partial test of `model` the axes multiply out: its model fields, build settings and
// the deadline `timeout_s`.
TestSpec ModelTest(const ModelChoice& model, double timeout_s);

// The suite's harness tests (no model), each `repeat` times ("rep" in kind_params when more
// than once), with --timeout, else their own, else the suite's deadline.
std::vector<TestSpec> HarnessTests(const Suite& suite, const PlanOverrides& overrides);

// InvalidArgument naming the first test of `plan` whose test id an earlier test has.
absl::Status CheckDistinctTests(const std::vector<TestSpec>& plan);

// Expands the plan in steps: CheckPlanFlags; the axes (plan/axes.h, PlanAxes); the models
// (plan/models.h, PlanModels); each model's tests along every axis in order (targets, modes,
// kinds, dtypes, batch sizes, sequence lengths, kind parameters); harness tests after.
// `catalog` may be null when PlanNeedsCatalog() is false. `profiles` holds the profile of
// every name PlanTargets() returns (compile mode takes its backend from it). Errors name the
// bad input (unknown model type, a kind that is not a model kind, an unknown mode or dtype,
// a duplicate test, an empty plan).
absl::StatusOr<std::vector<TestSpec>> ExpandPlan(
    const Suite& suite, const PlanOverrides& overrides, const ModelCatalog* catalog,
    const std::map<std::string, TargetProfile>& profiles);

// Distinct model types of a plan, in first-seen order (the zygote preloads them).
std::vector<std::string> PlanModelTypes(const std::vector<TestSpec>& plan);

}  // namespace compatlab

#endif  // COMPATLAB_PLAN_PLAN_H_
