// What a plan is made from: a suite, the command line's overrides of it, the model catalog
// and the targets' profiles. The steps of ExpandPlan (plan/plan.h) each read a PlanInput.
#ifndef COMPATLAB_PLAN_INPUT_H_
#define COMPATLAB_PLAN_INPUT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan/catalog.h"
#include "plan/hub.h"
#include "plan/suite.h"
#include "plan/target.h"

namespace compatlab {

// A code model as planning knows it: its id, its spec ("ABSOLUTE_FILE.py:FUNCTION", the
// tests' model_path) and what the probe described.
struct PlannedCodeModel {
  std::string id;
  std::string spec;
  CodeModelInfo info;
};

struct PlanOverrides {
  // Model types (llama or hf:llama) and hub:ORG/NAME[@REVISION] ids replacing the suite's list.
  std::vector<std::string> models;
  std::vector<std::string> kinds;  // model kinds replacing the suite's list
  // Each, when not empty, replaces the suite's list.
  std::vector<std::string> targets;
  std::vector<std::string> modes;
  std::vector<std::string> dtypes;
  std::vector<int64_t> batch_sizes;
  std::vector<int64_t> seq_lens;
  // --ranks: processes of one group per test (doc/ranks.md); --parallel: train's split over
  // them, "tp" (the default) or "dp" (kind_params parallel of a train test over ranks).
  std::vector<int64_t> ranks;
  std::string parallel;
  // --dynamic: static, true, mark (plan/axes.h, DynamicAxis).
  std::vector<std::string> dynamic;
  std::string backend;                 // compile backend instead of the profiles' ("" = theirs)
  std::optional<int64_t> new_tokens;   // generate (default kDefaultNewTokens)
  std::optional<int64_t> train_steps;  // train (default kDefaultTrainSteps)
  // Kind load (doc/probe.md, "Kind load"): the server scenario's arrival rates as
  // multiples of the offline throughput ("0.9x"; empty: kDefaultLoadRates), the
  // objective "ttft=S,itl=S" ("": from the test's single_stream run) and the
  // requests of each test (default kDefaultLoadRequests).
  std::vector<std::string> load_rates;
  std::string load_slo;
  std::optional<int64_t> load_requests;
  std::optional<double> timeout_s;  // every test's deadline
  // A local checkpoint replacing the suite's models: its directory, content
  // hash and what the probe read from its config.
  std::string checkpoint_dir;
  std::string checkpoint_hash;
  std::optional<CheckpointInfo> checkpoint;
  // --trust-remote-code: a checkpoint whose config names custom code (auto_map) may run it.
  bool trust_remote_code = false;
  // A code model replacing the suite's models (--model-code): its id, its spec
  // ("ABSOLUTE_FILE.py:FUNCTION", the tests' model_path) and what the probe described.
  std::string code_model_id;
  std::string code_model_spec;
  std::optional<CodeModelInfo> code_model;
  // The suite's own code models (its `code_models`, doc/suites.md), in its order; planned
  // in place of its `models` unless an own model or --models replaces them.
  std::vector<PlannedCodeModel> suite_code_models;
  // --baseline: models (types, hf: or hub: ids) planned beside the variant (the checkpoint,
  // the code model or --models) with the same targets, modes, kinds, dtypes and shapes.
  std::vector<std::string> baseline;
  // What the Hub resolver answered for each hub: entry of the plan's models.
  std::map<std::string, HubModelInfo> hub_models;
  // --size: "" or "reduced" (the default), or "full" (kind_params size=full);
  // --weights: the Hub repo's own weights (kind_params weights=pretrained).
  std::string size;
  bool weights = false;
  // --heads: empty or {"rule"} (the head rule's class), {"all"} (every head class the type
  // registers, each its own test), or class names.
  std::vector<std::string> heads;
};

inline constexpr int64_t kDefaultNewTokens = 16;
inline constexpr int64_t kDefaultTrainSteps = 3;
inline constexpr int64_t kDefaultLoadRequests = 32;
// One server row each, so that one rate is past saturation by construction.
inline const std::vector<std::string> kDefaultLoadRates = {"0.5x", "0.9x", "1.5x"};

// One plan's input, as ExpandPlan's steps read it. `catalog` may be null when
// PlanNeedsCatalog() is false; `profiles` holds the profile of every target the plan names.
struct PlanInput {
  const Suite& suite;
  const PlanOverrides& overrides;
  const ModelCatalog* catalog;
  const std::map<std::string, TargetProfile>& profiles;
};

// The override list when it is not empty, else the suite's.
template <typename T>
const std::vector<T>& Either(const std::vector<T>& override_list,
                             const std::vector<T>& suite_list) {
  return override_list.empty() ? suite_list : override_list;
}

}  // namespace compatlab

#endif  // COMPATLAB_PLAN_INPUT_H_
