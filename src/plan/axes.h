// The test matrix: the axes a model's tests vary along (targets, modes, kinds, dtypes, batch
// sizes, sequence lengths, kind parameters), each made by one step, and their product.
// Knows nothing of where models come from: it multiplies out partial tests, one per model
// (plan/models.h), as the plan (plan/plan.h) hands them over.
#ifndef COMPATLAB_PLAN_AXES_H_
#define COMPATLAB_PLAN_AXES_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/records.h"
#include "plan/input.h"

namespace compatlab {

// One axis: the tests one partial test becomes along it (copies with the axis's fields set).
using Axis = std::function<std::vector<TestSpec>(const TestSpec& partial)>;

// A step making one axis from a plan's input: its values (the override's, else the suite's),
// checked first (InvalidArgument naming a bad value).
using AxisStep = absl::StatusOr<Axis> (*)(const PlanInput& in);

// Each target; Internal when a target has no profile in `in.profiles`.
absl::StatusOr<Axis> TargetAxis(const PlanInput& in);
// Each mode (eager, compile, export); compile takes --backend, else the backend of the
// partial test's target's profile (so this axis comes after TargetAxis).
absl::StatusOr<Axis> ModeAxis(const PlanInput& in);
// Each kind; InvalidArgument for one that is not a model kind.
absl::StatusOr<Axis> KindAxis(const PlanInput& in);
// Each dtype (float32, bfloat16, float16, float64).
absl::StatusOr<Axis> DtypeAxis(const PlanInput& in);
// Each --dynamic value (static, true, mark: doc/suites.md) of a compiled forward test, named
// once each; static is the test as it is, true and mark make one dynamic test (TestSpec::
// dynamic, shapes) of the plan's batch sizes x sequence lengths (at most kMaxDynamicShapes),
// which the shape axes after it leave whole. Every other test passes once, static.
// InvalidArgument for an unknown or repeated value, or true or mark in a plan without
// mode compile or kind forward.
absl::StatusOr<Axis> DynamicAxis(const PlanInput& in);
// Each batch size, from 1 to 1048576.
absl::StatusOr<Axis> BatchSizeAxis(const PlanInput& in);
// Each sequence length, from 1 to 1048576.
absl::StatusOr<Axis> SeqLenAxis(const PlanInput& in);
// --ranks, else the suite's "ranks" (each from 1 to kMaxRanks); a train test over more than
// one rank takes kind_params parallel (--parallel tp|dp, default tp), and with --parallel
// given every one-rank test does (a process group of one, doc/ranks.md).
absl::StatusOr<Axis> RanksAxis(const PlanInput& in);
// Each KindParamVariants of the partial test's kind (so this axis comes after KindAxis),
// added to the kind_params it has (a model's build settings are kept).
absl::StatusOr<Axis> KindParamAxis(const PlanInput& in);

// Every axis of the plan in order, the first varying slowest. Errors: the steps'.
absl::StatusOr<std::vector<Axis>> PlanAxes(const PlanInput& in);

// Every test of `partials` along every axis of `axes`: the partials vary slowest, then the
// first axis, ..., the last fastest, as nested loops in that order would give them.
std::vector<TestSpec> AxisProduct(std::vector<TestSpec> partials, const std::vector<Axis>& axes);

// The kind_params of each test one plan cell of `kind` expands into: one for
// most kinds; for load, single_stream, offline and one server test per rate.
// InvalidArgument for a malformed rate or objective of `overrides`.
absl::StatusOr<std::vector<std::map<std::string, std::string>>> KindParamVariants(
    const std::string& kind, const PlanOverrides& overrides);

}  // namespace compatlab

#endif  // COMPATLAB_PLAN_AXES_H_
