#include "plan/models.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/hash.h"

namespace compatlab {
namespace {

constexpr char kHfModelPrefix[] = "hf:";

// Any name: the catalog's types are the last named source.
bool TakesAnyModelName(const std::string&) { return true; }

// The sources of a model given in place of the suite's, the first given one choosing
// (the command line gives at most one): a new such source is one step and one line here.
constexpr OwnModelSource kOwnModelSources[] = {
    {[](const PlanOverrides& o) { return o.checkpoint.has_value(); }, CheckpointModel},
    {[](const PlanOverrides& o) { return o.code_model.has_value(); }, CodeModel},
};

// The sources of named models, the first that takes a name choosing its model: a new kind
// of model id is one step and one line here.
constexpr NamedModelSource kNamedModelSources[] = {
    {IsHubId, HubModel},           // hub:ORG/NAME[@REVISION]
    {TakesAnyModelName, HfModel},  // llama, hf:llama
};

// The steps from the chosen models to those the plan's tests are made of, in order: a new
// one is one step and one line here.
constexpr ModelStep kModelSteps[] = {ExpandHeads, ApplyBuildSettings, DistinctModels};

// The plan's own models before --baseline: --models, else the suite's (none for a
// checkpoint or code model, which replace them).
std::vector<std::string> VariantModels(const Suite& suite, const PlanOverrides& overrides) {
  if (HasOwnModel(overrides)) return {};
  return overrides.models.empty() ? suite.models : overrides.models;
}

// The end of HfModel's unknown-type error for a name that means another kind of model.
std::string OtherModelHint(const std::string& type) {
  if (type.starts_with("ckpt:")) return "; a checkpoint is swept with --model-path DIR";
  if (IsCodeModelId(type)) return "; a code model is swept with --model-code FILE.py:FUNCTION";
  if (type.find('/') == std::string::npos) return "";
  return absl::StrCat("; a Hub model is hub:", type, ": --models hub:", type);
}

// The classes --heads chooses among for `m`: every class of its type, else its own.
std::vector<std::string> HeadClassesOf(const ModelChoice& m) {
  if (m.head_classes.empty() && !m.model_class.empty()) return {m.model_class};
  return m.head_classes;
}

// `m` once per class of it that `heads` names (every class for `all`), appended to `out`;
// InvalidArgument when it has none of them.
absl::Status AppendHeadClasses(const ModelChoice& m, const std::vector<std::string>& heads,
                               std::vector<ModelChoice>* out) {
  const bool all = heads == std::vector<std::string>{"all"};
  const std::vector<std::string> classes = HeadClassesOf(m);
  const size_t before = out->size();
  for (const std::string& c : classes) {
    if (all || std::find(heads.begin(), heads.end(), c) != heads.end()) {
      out->push_back(m);
      out->back().model_class = c;
    }
  }
  if (out->size() > before) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--heads ", absl::StrJoin(heads, ","), ": ", m.model_id, " (", m.model_type,
                   ") registers none of them (its classes: ", absl::StrJoin(classes, ", "), ")"));
}

}  // namespace

absl::StatusOr<ModelChoice> CheckpointModel(const PlanOverrides& overrides) {
  const CheckpointInfo& ckpt = *overrides.checkpoint;
  if (ckpt.custom_code && !overrides.trust_remote_code) {
    return absl::InvalidArgumentError(
        absl::StrCat("--model-path ", overrides.checkpoint_dir,
                     ": its config.json names custom code (auto_map); it runs only with "
                     "--trust-remote-code"));
  }
  ModelChoice m{absl::StrCat("ckpt:", overrides.checkpoint_hash),
                ckpt.model_type,
                ckpt.head_class,
                overrides.checkpoint_dir,
                {},
                {}};
  if (ckpt.custom_code) m.kind_params["trust_remote_code"] = "true";
  return m;
}

absl::StatusOr<ModelChoice> CodeModel(const PlanOverrides& overrides) {
  return ModelChoice{overrides.code_model_id,
                     overrides.code_model->model_type,
                     overrides.code_model->model_class,
                     overrides.code_model_spec,
                     {},
                     {}};
}

absl::StatusOr<ModelChoice> HubModel(const std::string& name, const PlanInput& in) {
  if (absl::Status s = CheckHubId(name); !s.ok()) return s;
  auto hub = in.overrides.hub_models.find(name);
  if (hub == in.overrides.hub_models.end()) {
    return absl::InternalError(absl::StrCat("the Hub model ", name, " was not resolved"));
  }
  const HubModelInfo& info = hub->second;
  // A repo that cannot be had is planned too: its tests fail_to_load with the reason.
  return ModelChoice{info.model_id,
                     info.model_type,
                     info.error.empty() ? info.head_class : "",
                     "",
                     info.head_classes,
                     {}};
}

absl::StatusOr<ModelChoice> HfModel(const std::string& name, const PlanInput& in) {
  if (in.catalog == nullptr) return absl::InternalError("the model catalog is needed");
  const std::string type = HfModelType(name);
  auto it = in.catalog->models.find(type);
  if (it == in.catalog->models.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown model type '", type, "' (transformers ",
                     in.catalog->transformers_version, " registers ", in.catalog->models.size(),
                     " types; `compatlab suites hf-all` lists them", OtherModelHint(type), ")"));
  }
  return ModelChoice{absl::StrCat(kHfModelPrefix, type),
                     type,
                     it->second.head_class,
                     "",
                     it->second.head_classes,
                     {}};
}

bool HasOwnModel(const PlanOverrides& overrides) {
  return std::any_of(std::begin(kOwnModelSources), std::end(kOwnModelSources),
                     [&](const OwnModelSource& source) { return source.given(overrides); });
}

absl::StatusOr<std::vector<std::string>> ModelNames(const PlanInput& in) {
  std::vector<std::string> names = VariantModels(in.suite, in.overrides);
  if (!HasOwnModel(in.overrides) && in.overrides.models.empty() && in.suite.all_models) {
    if (in.catalog == nullptr) return absl::InternalError("the model catalog is needed");
    names.clear();
    for (const auto& [type, entry] : in.catalog->models) names.push_back(type);
  }
  names.insert(names.end(), in.overrides.baseline.begin(), in.overrides.baseline.end());
  return names;
}

bool PlansSuiteCodeModels(const PlanOverrides& overrides) {
  return !HasOwnModel(overrides) && overrides.models.empty();
}

absl::StatusOr<std::vector<ModelChoice>> ChooseModels(const PlanInput& in) {
  std::vector<ModelChoice> models;
  if (PlansSuiteCodeModels(in.overrides)) {
    for (const PlannedCodeModel& c : in.overrides.suite_code_models) {
      models.push_back({c.id, c.info.model_type, c.info.model_class, c.spec, {}, {}});
    }
  }
  for (const OwnModelSource& source : kOwnModelSources) {
    if (!source.given(in.overrides)) continue;
    absl::StatusOr<ModelChoice> m = source.choose(in.overrides);
    if (!m.ok()) return m.status();
    models.push_back(*std::move(m));
    break;
  }
  absl::StatusOr<std::vector<std::string>> names = ModelNames(in);
  if (!names.ok()) return names.status();
  for (const std::string& name : *names) {
    const NamedModelSource& source =
        *std::find_if(std::begin(kNamedModelSources), std::end(kNamedModelSources),
                      [&](const NamedModelSource& s) { return s.takes(name); });
    absl::StatusOr<ModelChoice> m = source.choose(name, in);
    if (!m.ok()) return m.status();
    models.push_back(*std::move(m));
  }
  return models;
}

absl::StatusOr<std::vector<ModelChoice>> ExpandHeads(std::vector<ModelChoice> models,
                                                     const PlanInput& in) {
  const std::vector<std::string>& heads = in.overrides.heads;
  if (heads.empty() || heads == std::vector<std::string>{"rule"}) return models;
  for (const std::string& h : heads) {
    if ((h == "all" || h == "rule") && heads.size() > 1) {
      return absl::InvalidArgumentError("--heads: rule and all stand alone");
    }
  }
  std::vector<ModelChoice> out;
  for (const ModelChoice& m : models) {
    if (m.model_type.empty()) {  // a Hub repo that cannot be had: its one failing row
      out.push_back(m);
      continue;
    }
    if (absl::Status s = AppendHeadClasses(m, heads, &out); !s.ok()) return s;
  }
  return out;
}

absl::StatusOr<std::vector<ModelChoice>> ApplyBuildSettings(std::vector<ModelChoice> models,
                                                            const PlanInput& in) {
  for (ModelChoice& m : models) {
    if (in.overrides.weights && !IsHubId(m.model_id)) {
      return absl::InvalidArgumentError(absl::StrCat("--weights loads a Hub repo's own weights; ",
                                                     m.model_id, " is not a hub: model"));
    }
    if (in.overrides.size == "full") m.kind_params["size"] = "full";
    if (in.overrides.weights) m.kind_params["weights"] = "pretrained";
  }
  return models;
}

absl::StatusOr<std::vector<ModelChoice>> DistinctModels(std::vector<ModelChoice> models,
                                                        const PlanInput&) {
  std::set<std::pair<std::string, std::string>> seen;
  std::erase_if(models, [&](const ModelChoice& m) {
    return !seen.insert({m.model_id, m.model_class}).second;
  });
  return models;
}

absl::StatusOr<std::vector<ModelChoice>> PlanModels(const PlanInput& in) {
  absl::StatusOr<std::vector<ModelChoice>> models = ChooseModels(in);
  for (ModelStep step : kModelSteps) {
    if (!models.ok()) break;
    models = step(*std::move(models), in);
  }
  return models;
}

std::string HfModelType(const std::string& name) {
  return name.starts_with(kHfModelPrefix) ? name.substr(sizeof(kHfModelPrefix) - 1) : name;
}

std::vector<std::string> PlanHubModels(const Suite& suite, const PlanOverrides& overrides) {
  std::vector<std::string> hub;
  std::vector<std::string> models = VariantModels(suite, overrides);
  models.insert(models.end(), overrides.baseline.begin(), overrides.baseline.end());
  for (const std::string& m : models) {
    if (IsHubId(m) && std::find(hub.begin(), hub.end(), m) == hub.end()) hub.push_back(m);
  }
  return hub;
}

bool PlanNeedsCatalog(const Suite& suite, const PlanOverrides& overrides) {
  if (!HasOwnModel(overrides) && suite.all_models && overrides.models.empty()) return true;
  std::vector<std::string> models = VariantModels(suite, overrides);
  models.insert(models.end(), overrides.baseline.begin(), overrides.baseline.end());
  return std::any_of(models.begin(), models.end(),
                     [](const std::string& m) { return !IsHubId(m); });
}

std::string CodeModelId(const std::string& file, const std::string& function,
                        const std::string& sha256) {
  return absl::StrCat("code:", std::filesystem::path(file).stem().string(), ".", function, "@",
                      sha256.substr(0, kCodeIdHashChars));
}

std::string CodeFilesDigest(std::vector<CodeFile> files) {
  if (files.size() == 1) return files[0].sha256;
  std::sort(files.begin(), files.end(),
            [](const CodeFile& a, const CodeFile& b) { return a.rel < b.rel; });
  std::string manifest;
  for (const CodeFile& f : files) absl::StrAppend(&manifest, f.rel, "\n", f.sha256, "\n");
  return Sha256Hex(manifest);
}

absl::StatusOr<std::pair<std::string, std::string>> SplitModelCode(const std::string& spec) {
  const size_t colon = spec.rfind(':');
  const std::string file = colon == std::string::npos ? spec : spec.substr(0, colon);
  const std::string function = colon == std::string::npos ? "" : spec.substr(colon + 1);
  const bool identifier = !function.empty() && !absl::ascii_isdigit(function[0]) &&
                          std::all_of(function.begin(), function.end(),
                                      [](char c) { return absl::ascii_isalnum(c) || c == '_'; });
  if (file.empty() || !file.ends_with(".py") || !identifier) {
    return absl::InvalidArgumentError(
        absl::StrCat("--model-code ", spec,
                     ": not FILE.py:FUNCTION (a function returning a model, or a "
                     "PreTrainedModel subclass)"));
  }
  return std::make_pair(file, function);
}

bool IsCodeModelId(const std::string& model_id) { return model_id.starts_with("code:"); }

}  // namespace compatlab
