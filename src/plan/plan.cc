#include "plan/plan.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "util/hash.h"

namespace compatlab {
namespace {

struct ModelChoice {
  std::string model_id;
  std::string model_type;
  std::string model_class;
  std::string model_path;
  std::vector<std::string> head_classes;  // every head class of the type (--heads)
};

// The models of `models`, one per head class `heads` asks for (doc/suites.md, "--heads"):
// rule (or nothing): the chosen class; all: every class the type registers; else the named
// classes each model's type registers (a model with none of them is bad input).
absl::StatusOr<std::vector<ModelChoice>> ExpandHeads(const std::vector<ModelChoice>& models,
                                                     const std::vector<std::string>& heads) {
  if (heads.empty() || heads == std::vector<std::string>{"rule"}) return models;
  const bool all = heads == std::vector<std::string>{"all"};
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
    std::vector<std::string> classes = m.head_classes;
    if (classes.empty() && !m.model_class.empty()) classes = {m.model_class};
    size_t before = out.size();
    for (const std::string& c : classes) {
      if (all || std::find(heads.begin(), heads.end(), c) != heads.end()) {
        out.push_back(m);
        out.back().model_class = c;
      }
    }
    if (out.size() == before) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--heads ", absl::StrJoin(heads, ","), ": ", m.model_id, " (", m.model_type,
          ") registers none of them (its classes: ", absl::StrJoin(classes, ", "), ")"));
    }
  }
  return out;
}

const std::set<std::string> kModes = {std::string(kModeEager), std::string(kModeCompile),
                                      std::string(kModeExport)};
const std::set<std::string> kDtypes = {"float32", "bfloat16", "float16", "float64"};

template <typename T>
const std::vector<T>& Either(const std::vector<T>& override_list,
                             const std::vector<T>& suite_list) {
  return override_list.empty() ? suite_list : override_list;
}

// A positive finite number of at most `max` from `text`, else nullopt.
std::optional<double> ParsePositive(const std::string& text, double max) {
  double value = 0;
  if (!absl::SimpleAtod(text, &value) || !std::isfinite(value) || value <= 0 || value > max) {
    return std::nullopt;
  }
  return value;
}

// "0.90x" -> "0.9x": a multiple of the offline throughput, canonical.
absl::StatusOr<std::string> CanonicalLoadRate(const std::string& rate) {
  std::optional<double> value;
  if (rate.size() > 1 && rate.back() == 'x') {
    value = ParsePositive(rate.substr(0, rate.size() - 1), 1000);
  }
  if (!value) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rates: '", rate,
                     "' is not a multiple of the offline throughput above 0 and at most "
                     "1000 followed by x (like 0.9x)"));
  }
  return absl::StrCat(*value, "x");
}

// "itl=0.05,ttft=0.5" -> "ttft=0.5,itl=0.05": both objectives in seconds, canonical.
absl::StatusOr<std::string> CanonicalLoadSlo(const std::string& slo) {
  std::map<std::string, double> parts;
  const std::vector<std::string> given = absl::StrSplit(slo, ',');
  for (const std::string& part : given) {
    std::pair<std::string, std::string> kv = absl::StrSplit(part, absl::MaxSplits('=', 1));
    std::optional<double> value = ParsePositive(kv.second, 604800);
    if ((kv.first != "ttft" && kv.first != "itl") || !value || parts.count(kv.first)) {
      parts.clear();
      break;
    }
    parts[kv.first] = *value;
  }
  if (parts.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("--slo: '", slo, "' is not ttft=SECONDS,itl=SECONDS (both above 0)"));
  }
  return absl::StrCat("ttft=", parts["ttft"], ",itl=", parts["itl"]);
}

}  // namespace

absl::StatusOr<std::vector<std::map<std::string, std::string>>> KindParamVariants(
    const std::string& kind, const PlanOverrides& overrides) {
  using Params = std::map<std::string, std::string>;
  const std::string new_tokens = std::to_string(overrides.new_tokens.value_or(kDefaultNewTokens));
  std::vector<Params> variants(1);
  if (kind == "generate") variants[0]["new_tokens"] = new_tokens;
  if (kind == "train") {
    variants[0]["steps"] = std::to_string(overrides.train_steps.value_or(kDefaultTrainSteps));
  }
  if (kind != "load") return variants;
  variants.clear();
  const int64_t requests = overrides.load_requests.value_or(kDefaultLoadRequests);
  if (requests < 1 || requests > 4096) {
    return absl::InvalidArgumentError("--load-requests must be from 1 to 4096");
  }
  Params base = {{"new_tokens", new_tokens}, {"requests", std::to_string(requests)}};
  if (!overrides.load_slo.empty()) {
    absl::StatusOr<std::string> slo = CanonicalLoadSlo(overrides.load_slo);
    if (!slo.ok()) return slo.status();
    base["slo"] = *slo;
  }
  for (const char* scenario : {"single_stream", "offline"}) {
    variants.push_back(base);
    variants.back()["scenario"] = scenario;
  }
  std::set<std::string> seen;
  for (const std::string& given :
       overrides.load_rates.empty() ? kDefaultLoadRates : overrides.load_rates) {
    absl::StatusOr<std::string> rate = CanonicalLoadRate(given);
    if (!rate.ok()) return rate.status();
    if (!seen.insert(*rate).second) continue;  // --rates 0.5x,0.50x
    variants.push_back(base);
    variants.back()["scenario"] = "server";
    variants.back()["rate"] = *rate;
  }
  return variants;
}

namespace {

bool IsLoadScenario(const TestSpec& spec, std::string_view scenario) {
  auto it = spec.kind_params.find("scenario");
  return spec.kind == "load" && !spec.IsHarness() && it != spec.kind_params.end() &&
         it->second == scenario;
}

// The plan's own models before --baseline: --models, else the suite's (none for a
// checkpoint or code model, which replace them).
std::vector<std::string> VariantModels(const Suite& suite, const PlanOverrides& overrides) {
  if (overrides.checkpoint.has_value() || overrides.code_model.has_value()) return {};
  return overrides.models.empty() ? suite.models : overrides.models;
}

}  // namespace

namespace {

// The test id of the row of `spec`'s load group that runs `scenario`.
std::string LoadGroupRowId(const TestSpec& spec, std::string_view scenario) {
  TestSpec row = spec;
  row.kind_params["scenario"] = std::string(scenario);
  row.kind_params.erase("rate");
  return row.TestId();
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
  const bool own = overrides.checkpoint.has_value() || overrides.code_model.has_value();
  if (!own && suite.all_models && overrides.models.empty()) return true;
  std::vector<std::string> models = VariantModels(suite, overrides);
  models.insert(models.end(), overrides.baseline.begin(), overrides.baseline.end());
  return std::any_of(models.begin(), models.end(),
                     [](const std::string& m) { return !IsHubId(m); });
}

absl::StatusOr<std::vector<TestSpec>> ExpandPlan(
    const Suite& suite, const PlanOverrides& overrides, const ModelCatalog* catalog,
    const std::map<std::string, TargetProfile>& profiles) {
  const std::vector<std::string>& targets = Either(overrides.targets, suite.targets);
  const std::vector<std::string>& modes = Either(overrides.modes, suite.modes);
  const std::vector<std::string>& dtypes = Either(overrides.dtypes, suite.dtypes);
  const std::vector<int64_t>& batch_sizes = Either(overrides.batch_sizes, suite.batch_sizes);
  const std::vector<int64_t>& seq_lens = Either(overrides.seq_lens, suite.seq_lens);
  for (const std::string& t : targets) {
    if (!profiles.count(t)) return absl::InternalError(absl::StrCat("no profile for target ", t));
  }
  for (const std::string& m : modes) {
    if (!kModes.count(m)) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown mode '", m, "' (eager, compile, export)"));
    }
  }
  for (const std::string& d : dtypes) {
    if (!kDtypes.count(d)) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown dtype '", d, "' (float32, bfloat16, float16, float64)"));
    }
  }
  for (const std::vector<int64_t>* sizes : {&batch_sizes, &seq_lens}) {
    for (int64_t v : *sizes) {
      if (v < 1 || v > (int64_t{1} << 20)) {
        return absl::InvalidArgumentError(
            absl::StrCat("batch sizes and sequence lengths must be from 1 to 1048576, not ", v));
      }
    }
  }
  for (const std::optional<int64_t>& n : {overrides.new_tokens, overrides.train_steps}) {
    if (n.has_value() && (*n < 1 || *n > 4096)) {
      return absl::InvalidArgumentError("--new-tokens and --train-steps must be from 1 to 4096");
    }
  }
  std::vector<ModelChoice> models;
  const bool own = overrides.checkpoint.has_value() || overrides.code_model.has_value();
  if (overrides.checkpoint.has_value()) {
    if (overrides.checkpoint->custom_code && !overrides.trust_remote_code) {
      return absl::InvalidArgumentError(
          absl::StrCat("--model-path ", overrides.checkpoint_dir,
                       ": its config.json names custom code (auto_map); it runs only with "
                       "--trust-remote-code"));
    }
    models.push_back({absl::StrCat("ckpt:", overrides.checkpoint_hash),
                      overrides.checkpoint->model_type,
                      overrides.checkpoint->head_class,
                      overrides.checkpoint_dir,
                      {}});
  } else if (overrides.code_model.has_value()) {
    models.push_back({overrides.code_model_id,
                      overrides.code_model->model_type,
                      overrides.code_model->model_class,
                      overrides.code_model_spec,
                      {}});
  }
  {
    std::vector<std::string> types =
        own ? std::vector<std::string>{} : VariantModels(suite, overrides);
    if (!own && overrides.models.empty() && suite.all_models) {
      if (catalog == nullptr) return absl::InternalError("the model catalog is needed");
      types.clear();
      for (const auto& [type, entry] : catalog->models) types.push_back(type);
    }
    types.insert(types.end(), overrides.baseline.begin(), overrides.baseline.end());
    for (const std::string& type : types) {
      if (IsHubId(type)) {
        if (absl::Status s = CheckHubId(type); !s.ok()) return s;
        auto hub = overrides.hub_models.find(type);
        if (hub == overrides.hub_models.end()) {
          return absl::InternalError(absl::StrCat("the Hub model ", type, " was not resolved"));
        }
        // A repo that cannot be had is planned too: its tests fail_to_load with the reason.
        models.push_back({hub->second.model_id, hub->second.model_type,
                          hub->second.error.empty() ? hub->second.head_class : "", "",
                          hub->second.head_classes});
        continue;
      }
      if (catalog == nullptr) return absl::InternalError("the model catalog is needed");
      auto it = catalog->models.find(type);
      if (it == catalog->models.end()) {
        const std::string hint =
            type.find('/') != std::string::npos
                ? absl::StrCat("; a Hub model is hub:", type, ": --models hub:", type)
                : "";
        return absl::InvalidArgumentError(
            absl::StrCat("unknown model type '", type, "' (transformers ",
                         catalog->transformers_version, " registers ", catalog->models.size(),
                         " types; `compatlab suites hf-all` lists them", hint, ")"));
      }
      models.push_back(
          {absl::StrCat("hf:", type), type, it->second.head_class, "", it->second.head_classes});
    }
  }
  if (absl::StatusOr<std::vector<ModelChoice>> expanded = ExpandHeads(models, overrides.heads);
      expanded.ok()) {
    models = *std::move(expanded);
  } else {
    return expanded.status();
  }
  if (!overrides.size.empty() && overrides.size != "reduced" && overrides.size != "full") {
    return absl::InvalidArgumentError(
        absl::StrCat("--size ", overrides.size, ": not reduced or full"));
  }
  if ((overrides.size == "full" || overrides.weights) && own) {
    return absl::InvalidArgumentError(
        "--size and --weights apply to hf: and hub: models; a checkpoint or code model runs as "
        "its own files build it");
  }
  if (overrides.weights) {
    for (const ModelChoice& m : models) {
      if (!IsHubId(m.model_id)) {
        return absl::InvalidArgumentError(absl::StrCat("--weights loads a Hub repo's own weights; ",
                                                       m.model_id, " is not a hub: model"));
      }
    }
  }
  std::vector<std::string> kinds = overrides.kinds.empty() ? suite.kinds : overrides.kinds;
  for (const std::string& k : kinds) {
    if (!IsModelKind(k)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", k, "' is not a model kind (forward, generate, train, load)"));
    }
  }
  std::map<std::string, std::vector<std::map<std::string, std::string>>> variants;
  for (const std::string& k : kinds) {
    absl::StatusOr<std::vector<std::map<std::string, std::string>>> v =
        KindParamVariants(k, overrides);
    if (!v.ok()) return v.status();
    variants[k] = *std::move(v);
  }
  std::vector<TestSpec> plan;
  std::set<std::string> seen;
  auto add = [&](TestSpec spec) -> absl::Status {
    if (!seen.insert(spec.TestId()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("the plan holds the same test twice (", spec.model_id, " ", spec.kind,
                       "); give repeated harness tests a 'repeat' instead"));
    }
    plan.push_back(std::move(spec));
    return absl::OkStatus();
  };
  double timeout = overrides.timeout_s.value_or(suite.timeout_s);
  std::set<std::string> seen_types;
  for (const ModelChoice& m : models) {
    // --models llama,llama
    if (!seen_types.insert(absl::StrCat(m.model_id, " ", m.model_class)).second) continue;
    for (const std::string& target : targets) {
      for (const std::string& mode : modes) {
        for (const std::string& kind : kinds) {
          for (const std::string& dtype : dtypes) {
            for (int64_t batch : batch_sizes) {
              for (int64_t seq : seq_lens) {
                for (const std::map<std::string, std::string>& params : variants[kind]) {
                  TestSpec s;
                  s.model_id = m.model_id;
                  s.model_type = m.model_type;
                  s.model_class = m.model_class;
                  s.model_path = m.model_path;
                  s.target = target;
                  s.mode = mode;
                  if (mode == kModeCompile) {
                    s.backend =
                        overrides.backend.empty() ? profiles.at(target).backend : overrides.backend;
                  }
                  s.kind = kind;
                  s.kind_params = params;
                  if (overrides.size == "full") s.kind_params["size"] = "full";
                  if (overrides.weights) s.kind_params["weights"] = "pretrained";
                  if (overrides.checkpoint.has_value() && overrides.checkpoint->custom_code &&
                      m.model_id.starts_with("ckpt:")) {
                    s.kind_params["trust_remote_code"] = "true";
                  }
                  s.dtype = dtype;
                  s.batch_size = batch;
                  s.seq_len = seq;
                  s.timeout_s = timeout;
                  if (absl::Status st = add(std::move(s)); !st.ok()) return st;
                }
              }
            }
          }
        }
      }
    }
  }
  for (const HarnessTest& t : suite.tests) {
    for (int64_t rep = 0; rep < t.repeat; ++rep) {
      TestSpec s;
      s.model_id = kHarnessModelId;
      s.kind = t.kind;
      s.kind_params = t.kind_params;
      if (t.repeat > 1) s.kind_params["rep"] = std::to_string(rep);
      s.timeout_s = overrides.timeout_s.value_or(t.timeout_s.value_or(suite.timeout_s));
      if (absl::Status st = add(std::move(s)); !st.ok()) return st;
    }
  }
  if (plan.empty()) return absl::InvalidArgumentError("the plan is empty");
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
