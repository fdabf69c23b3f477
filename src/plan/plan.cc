#include "plan/plan.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"

namespace compatlab {
namespace {

// True for a kind load model test of `scenario`.
bool IsLoadScenario(const TestSpec& spec, std::string_view scenario) {
  auto it = spec.kind_params.find("scenario");
  return spec.kind == "load" && !spec.IsHarness() && it != spec.kind_params.end() &&
         it->second == scenario;
}

// The test id of the row of `spec`'s load group that runs `scenario`.
std::string LoadGroupRowId(const TestSpec& spec, std::string_view scenario) {
  TestSpec row = spec;
  row.kind_params["scenario"] = std::string(scenario);
  row.kind_params.erase("rate");
  return row.TestId();
}

// The model tests of `in`: every model (PlanModels) along every axis (PlanAxes).
absl::StatusOr<std::vector<TestSpec>> ModelTests(const PlanInput& in) {
  absl::StatusOr<std::vector<Axis>> axes = PlanAxes(in);
  if (!axes.ok()) return axes.status();
  absl::StatusOr<std::vector<ModelChoice>> models = PlanModels(in);
  if (!models.ok()) return models.status();
  const double timeout = in.overrides.timeout_s.value_or(in.suite.timeout_s);
  std::vector<TestSpec> partials;
  for (const ModelChoice& m : *models) partials.push_back(ModelTest(m, timeout));
  return AxisProduct(std::move(partials), *axes);
}

}  // namespace

std::optional<std::string> LoadBaseTestId(const TestSpec& spec) {
  if (!IsLoadScenario(spec, "server")) return std::nullopt;
  return LoadGroupRowId(spec, "offline");
}

bool IsLoadOffline(const TestSpec& spec) { return IsLoadScenario(spec, "offline"); }

std::optional<std::string> LoadSloTestId(const TestSpec& spec) {
  if (!IsLoadScenario(spec, "offline") && !IsLoadScenario(spec, "server")) return std::nullopt;
  if (spec.kind_params.count("slo")) return std::nullopt;  // --slo: every row's own, given
  return LoadGroupRowId(spec, "single_stream");
}

bool IsLoadSingleStream(const TestSpec& spec) { return IsLoadScenario(spec, "single_stream"); }

std::vector<std::string> PlanTargets(const Suite& suite, const PlanOverrides& overrides) {
  return Either(overrides.targets, suite.targets);
}

absl::Status CheckPlanFlags(const PlanOverrides& overrides) {
  for (const std::optional<int64_t>& n : {overrides.new_tokens, overrides.train_steps}) {
    if (n.has_value() && (*n < 1 || *n > 4096)) {
      return absl::InvalidArgumentError("--new-tokens and --train-steps must be from 1 to 4096");
    }
  }
  if (!overrides.size.empty() && overrides.size != "reduced" && overrides.size != "full") {
    return absl::InvalidArgumentError(
        absl::StrCat("--size ", overrides.size, ": not reduced or full"));
  }
  if ((overrides.size == "full" || overrides.weights) && HasOwnModel(overrides)) {
    return absl::InvalidArgumentError(
        "--size and --weights apply to hf: and hub: models; a checkpoint or code model runs as "
        "its own files build it");
  }
  return absl::OkStatus();
}

TestSpec ModelTest(const ModelChoice& model, double timeout_s) {
  TestSpec s;
  s.model_id = model.model_id;
  s.model_type = model.model_type;
  s.model_class = model.model_class;
  s.model_path = model.model_path;
  s.kind_params = model.kind_params;
  s.timeout_s = timeout_s;
  return s;
}

std::vector<TestSpec> HarnessTests(const Suite& suite, const PlanOverrides& overrides) {
  std::vector<TestSpec> tests;
  for (const HarnessTest& t : suite.tests) {
    for (int64_t rep = 0; rep < t.repeat; ++rep) {
      TestSpec s;
      s.model_id = kHarnessModelId;
      s.kind = t.kind;
      s.kind_params = t.kind_params;
      s.ranks = t.ranks;
      if (t.repeat > 1) s.kind_params["rep"] = std::to_string(rep);
      s.timeout_s = overrides.timeout_s.value_or(t.timeout_s.value_or(suite.timeout_s));
      tests.push_back(std::move(s));
    }
  }
  return tests;
}

absl::Status CheckDistinctTests(const std::vector<TestSpec>& plan) {
  std::set<std::string> seen;
  for (const TestSpec& spec : plan) {
    if (seen.insert(spec.TestId()).second) continue;
    return absl::InvalidArgumentError(
        absl::StrCat("the plan holds the same test twice (", spec.model_id, " ", spec.kind,
                     "); give repeated harness tests a 'repeat' instead"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<TestSpec>> ExpandPlan(
    const Suite& suite, const PlanOverrides& overrides, const ModelCatalog* catalog,
    const std::map<std::string, TargetProfile>& profiles) {
  if (absl::Status s = CheckPlanFlags(overrides); !s.ok()) return s;
  const PlanInput in{suite, overrides, catalog, profiles};
  absl::StatusOr<std::vector<TestSpec>> plan = ModelTests(in);
  if (!plan.ok()) return plan.status();
  for (TestSpec& harness : HarnessTests(suite, overrides)) plan->push_back(std::move(harness));
  if (absl::Status s = CheckDistinctTests(*plan); !s.ok()) return s;
  if (plan->empty()) return absl::InvalidArgumentError("the plan is empty");
  return plan;
}

std::vector<std::string> PlanModelTypes(const std::vector<TestSpec>& plan) {
  std::vector<std::string> types;
  std::set<std::string> seen;
  for (const TestSpec& s : plan) {
    if (!s.model_type.empty() && seen.insert(s.model_type).second) types.push_back(s.model_type);
  }
  return types;
}

}  // namespace compatlab
