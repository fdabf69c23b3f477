// Hub models (`hub:ORG/NAME[@REVISION]`, doc/model-factory.md, "Hub models"): ids, and
// what the probe's resolver (`python -m compatlab_probe.models.hub`) answers about them. The
// resolver downloads config.json through huggingface_hub's own download and cache code
// (or finds it in the Hub cache) and pins the revision to its commit; a repo that cannot
// be had (missing, gated, no network) is an answer with the reason, planned anyway so
// that its tests are fail_to_load rows.
#ifndef COMPATLAB_PLAN_HUB_H_
#define COMPATLAB_PLAN_HUB_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "plan/catalog.h"

namespace compatlab {

inline constexpr char kHubPrefix[] = "hub:";

// What the resolver found for one `hub:` entry of a plan.
struct HubModelInfo {
  std::string model_id;  // hub:ORG/NAME@COMMIT, or hub:ORG/NAME@REVISION when error is set
  std::string repo_id;
  std::string commit;
  std::string config_hash;
  std::string model_type;
  std::string head_class;
  std::string head_kind;
  std::vector<std::string> head_classes;  // every head class transformers registers for the type
  std::string error;                      // the reason it cannot be had; "" when found
};

bool IsHubId(const std::string& model);
// OK for hub:ORG/NAME or hub:ORG/NAME@REVISION as the Hub spells them; InvalidArgument
// naming the entry otherwise.
absl::Status CheckHubId(const std::string& model);
// "hub:Qwen/Qwen3-0.6B" matches every "hub:Qwen/Qwen3-0.6B@..." (case-insensitively, as
// the Hub's repo ids are); a query with @REVISION matches that id only.
bool HubIdMatches(const std::string& query, const std::string& model_id);

// The resolver's answer: {"models": {SPEC: {...}}}.
absl::StatusOr<std::map<std::string, HubModelInfo>> ParseHubModels(const std::string& json_text);

// Runs the resolver for `specs` with the caller's environment (HF_HUB_OFFLINE, HF_ENDPOINT,
// HF_HUB_CACHE/HF_HOME as the user set them); `weights`: fetch the weight files too.
absl::StatusOr<std::map<std::string, HubModelInfo>> ResolveHubModels(
    const ProbeEnv& env, const std::vector<std::string>& specs, bool weights);

// Hub ids from huggingface_hub's list API (`python -m compatlab_probe.models.hub list`).
// Unavailable with the reason when the Hub cannot be reached.
struct HubListRequest {
  std::string task;                // a pipeline tag (text-generation); "" for every task
  std::string sort = "downloads";  // downloads or trending
  int64_t limit = 20;
};
absl::StatusOr<std::vector<std::string>> ListHubModels(const ProbeEnv& env,
                                                       const HubListRequest& request);
// A suite file (doc/suites.md) testing `repo_ids` as hub: models, named `name`.
std::string HubSuiteJson(const std::string& name, const std::vector<std::string>& repo_ids);

}  // namespace compatlab

#endif  // COMPATLAB_PLAN_HUB_H_
