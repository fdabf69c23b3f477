// Where a plan's models come from, before the test matrix (plan/axes.h) multiplies them
// out: the model sources, each a step returning ModelChoices (a checkpoint, a code model,
// the catalog's hf: types, Hub repos), then the model steps (head classes, build settings,
// duplicates). Model ids: hf:TYPE, hub:ORG/NAME@COMMIT, ckpt:HASH, code:NAME@HASH.
#ifndef COMPATLAB_PLAN_MODELS_H_
#define COMPATLAB_PLAN_MODELS_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "plan/catalog.h"
#include "plan/input.h"

namespace compatlab {

// One model of a plan: what each of its tests carries of it.
struct ModelChoice {
  std::string model_id;
  std::string model_type;
  std::string model_class;
  std::string model_path;
  std::vector<std::string> head_classes;  // every head class of the type (--heads)
  // How the model is built, in each of its tests' kind_params (size=full,
  // weights=pretrained, trust_remote_code=true).
  std::map<std::string, std::string> kind_params;
};

// A source of the model the command line gives in place of the suite's (--model-path,
// --model-code): whether it is given, and its model.
struct OwnModelSource {
  bool (*given)(const PlanOverrides& overrides);
  absl::StatusOr<ModelChoice> (*choose)(const PlanOverrides& overrides);
};

// A source of named models (--models, --baseline, a suite's list): whether it takes a name,
// and the model the name stands for.
struct NamedModelSource {
  bool (*takes)(const std::string& name);
  absl::StatusOr<ModelChoice> (*choose)(const std::string& name, const PlanInput& in);
};

// One step from a plan's models to the models its tests are made of.
using ModelStep = absl::StatusOr<std::vector<ModelChoice>> (*)(std::vector<ModelChoice> models,
                                                               const PlanInput& in);

// The local checkpoint (--model-path) as ckpt:HASH; trust_remote_code=true when its config
// names custom code, which InvalidArgument refuses without --trust-remote-code.
absl::StatusOr<ModelChoice> CheckpointModel(const PlanOverrides& overrides);
// The code model (--model-code) as its code:NAME@HASH id.
absl::StatusOr<ModelChoice> CodeModel(const PlanOverrides& overrides);
// A hub: entry as the Hub resolver answered it (its commit's id; a repo that cannot be had
// is planned with no class, for its tests to fail_to_load with the reason). InvalidArgument
// for a malformed id, Internal when it was not resolved.
absl::StatusOr<ModelChoice> HubModel(const std::string& name, const PlanInput& in);
// A model type of the catalog, named "llama" or "hf:llama", as hf:TYPE with the type's head
// rule's class. InvalidArgument for a type the catalog does not hold; Internal without it.
absl::StatusOr<ModelChoice> HfModel(const std::string& name, const PlanInput& in);

// True when the command line gives a model in place of the suite's (a checkpoint, a code model).
bool HasOwnModel(const PlanOverrides& overrides);
// True when the suite's own code models are planned: no own model, no --models.
bool PlansSuiteCodeModels(const PlanOverrides& overrides);
// The names of the plan's models in order: --models, else the suite's (every type of the
// catalog for a suite of all models; none beside an own model), then --baseline. Internal
// when every type is wanted without the catalog.
absl::StatusOr<std::vector<std::string>> ModelNames(const PlanInput& in);
// Every model of the plan in order: the own model when given, else the suite's code models
// (without --models), then each name's model from the first named source that takes it. Errors: the
// sources'.
absl::StatusOr<std::vector<ModelChoice>> ChooseModels(const PlanInput& in);

// The models of `models`, one per head class --heads asks for (doc/suites.md, "--heads"):
// rule (or nothing): the chosen class; all: every class the type registers; else the named
// classes each model's type registers (a model with none of them is bad input).
absl::StatusOr<std::vector<ModelChoice>> ExpandHeads(std::vector<ModelChoice> models,
                                                     const PlanInput& in);
// --size full and --weights into each model's kind_params; InvalidArgument when --weights
// names a model that is not a hub: one.
absl::StatusOr<std::vector<ModelChoice>> ApplyBuildSettings(std::vector<ModelChoice> models,
                                                            const PlanInput& in);
// The first of each (model id, class) in order (--models llama,hf:llama plans llama once).
absl::StatusOr<std::vector<ModelChoice>> DistinctModels(std::vector<ModelChoice> models,
                                                        const PlanInput& in);
// The models a plan's tests are made of: ChooseModels, then each model step in order.
absl::StatusOr<std::vector<ModelChoice>> PlanModels(const PlanInput& in);

// The model type a name of an hf: model stands for: "hf:llama" and "llama" are "llama".
std::string HfModelType(const std::string& name);

// The hub: entries of the plan's models (overrides first, else the suite's), in order.
std::vector<std::string> PlanHubModels(const Suite& suite, const PlanOverrides& overrides);

// True when planning `suite` with `overrides` needs the model catalog.
bool PlanNeedsCatalog(const Suite& suite, const PlanOverrides& overrides);

// The model id of a code model: "code:NAME@" + the first 16 hex digits of `sha256`, its
// code files' CodeFilesDigest (a change of any of its files is a new model). NAME is FILE's
// stem and FUNCTION, "attn.build".
inline constexpr size_t kCodeIdHashChars = 16;
std::string CodeModelId(const std::string& file, const std::string& function,
                        const std::string& sha256);
// The hash of a code model's files (doc/probe.md, "Own code"; code_model.files_digest in the
// probe computes the same): FILE's own SHA-256 when it is the only file, else the SHA-256 of
// "REL\nSHA256\n" for each file in order of rel.
std::string CodeFilesDigest(std::vector<CodeFile> files);
// Splits "FILE.py:FUNCTION" (the last colon); InvalidArgument naming the flag when either
// part is empty, FILE does not end in .py, or FUNCTION is not an identifier.
absl::StatusOr<std::pair<std::string, std::string>> SplitModelCode(const std::string& spec);
// True for code:NAME@HASH ids.
bool IsCodeModelId(const std::string& model_id);

}  // namespace compatlab

#endif  // COMPATLAB_PLAN_MODELS_H_
