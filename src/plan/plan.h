// Planning: a suite plus command-line overrides, expanded into the ordered
// list of tests of a sweep. Pure: no processes, no store.
#ifndef COMPATLAB_PLAN_PLAN_H_
#define COMPATLAB_PLAN_PLAN_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/records.h"
#include "plan/catalog.h"
#include "plan/suite.h"

namespace compatlab {

struct PlanOverrides {
  std::vector<std::string> models;  // model types replacing the suite's list
  std::vector<std::string> kinds;   // model kinds replacing the suite's list
  std::optional<double> timeout_s;  // every test's deadline
  // A local checkpoint replacing the suite's models: its directory, content
  // hash and what the probe read from its config.
  std::string checkpoint_dir;
  std::string checkpoint_hash;
  std::optional<CheckpointInfo> checkpoint;
};

// True when planning `suite` with `overrides` needs the model catalog.
bool PlanNeedsCatalog(const Suite& suite, const PlanOverrides& overrides);

// Expands the matrix in a fixed order: models, then targets, modes, kinds,
// dtypes, batch sizes, sequence lengths; harness tests after. `catalog` may
// be null when PlanNeedsCatalog() is false. Errors name the bad input
// (unknown model type, a kind that is not a model kind, a duplicate test).
absl::StatusOr<std::vector<TestSpec>> ExpandPlan(const Suite& suite, const PlanOverrides& overrides,
                                                 const ModelCatalog* catalog);

// Distinct model types of a plan, in first-seen order (the zygote preloads them).
std::vector<std::string> PlanModelTypes(const std::vector<TestSpec>& plan);

}  // namespace compatlab

#endif  // COMPATLAB_PLAN_PLAN_H_
