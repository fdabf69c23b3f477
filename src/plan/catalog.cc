#include "plan/catalog.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "util/subprocess.h"

namespace compatlab {
namespace {

using nlohmann::json;

std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

absl::StatusOr<std::string> RunProbe(const ProbeEnv& env, std::vector<std::string> args,
                                     const std::vector<std::string>& pythonpath = {}) {
  std::vector<std::string> argv = {env.python, "-m", "compatlab_probe.catalog"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> path = pythonpath;
  path.push_back(env.probe_dir);
  absl::StatusOr<CommandResult> r = RunCommand(argv,
                                               {{"PYTHONPATH", absl::StrJoin(path, ":")},
                                                {"HF_HUB_OFFLINE", "1"},
                                                {"TRANSFORMERS_OFFLINE", "1"}},
                                               300);
  if (!r.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot run the probe with ", env.python, ": ", r.status().message()));
  }
  if (r->exit_code != 0) {
    json err = json::parse(r->stdout_text, nullptr, false);
    if (!err.is_discarded() && err.is_object() && err.contains("error")) {
      return absl::InvalidArgumentError(Str(err, "error"));
    }
    std::string tail = r->stderr_text.size() > 400
                           ? r->stderr_text.substr(r->stderr_text.size() - 400)
                           : r->stderr_text;
    return absl::FailedPreconditionError(
        absl::StrCat("the probe's catalog failed (exit ", r->exit_code, "): ", tail));
  }
  return r->stdout_text;
}

}  // namespace

absl::StatusOr<ModelCatalog> ParseCatalog(const std::string& json_text) {
  json j = json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("models") || !j["models"].is_object()) {
    return absl::InvalidArgumentError("the probe's catalog is not a catalog object");
  }
  ModelCatalog catalog;
  catalog.torch_version = Str(j, "torch_version");
  catalog.transformers_version = Str(j, "transformers_version");
  for (const auto& [type, e] : j["models"].items()) {
    if (!e.is_object()) continue;
    CatalogEntry& entry = catalog.models[type];
    entry = {
        Str(e, "config_class"), Str(e, "head_class"), Str(e, "head_kind"), Str(e, "modality"), {}};
    if (auto it = e.find("head_classes"); it != e.end() && it->is_array()) {
      for (const json& c : *it) {
        if (c.is_string()) entry.head_classes.push_back(c.get<std::string>());
      }
    }
  }
  return catalog;
}

absl::StatusOr<CheckpointInfo> ParseCheckpointInfo(const std::string& json_text) {
  json j = json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("checkpoint") ||
      !j["checkpoint"].is_object()) {
    return absl::InvalidArgumentError("the probe's checkpoint answer is malformed");
  }
  const json& c = j["checkpoint"];
  CheckpointInfo info{Str(c, "model_type"), Str(c, "head_class"), Str(c, "head_kind")};
  if (info.model_type.empty()) return absl::InvalidArgumentError("checkpoint has no model_type");
  return info;
}

absl::StatusOr<ModelCatalog> LoadCatalog(const ProbeEnv& env) {
  absl::StatusOr<std::string> out = RunProbe(env, {});
  if (!out.ok()) return out.status();
  return ParseCatalog(*out);
}

absl::Status CheckCompileBackend(const ProbeEnv& env, const std::string& backend,
                                 const std::vector<std::string>& pythonpath) {
  return RunProbe(env, {"--backend", backend}, pythonpath).status();
}

absl::StatusOr<CheckpointInfo> InspectCheckpoint(const ProbeEnv& env, const std::string& dir) {
  absl::StatusOr<std::string> out = RunProbe(env, {"--model-path", dir});
  if (!out.ok()) return out.status();
  return ParseCheckpointInfo(*out);
}

}  // namespace compatlab
