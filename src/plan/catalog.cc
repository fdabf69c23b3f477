#include "plan/catalog.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "util/subprocess.h"

namespace compatlab {
namespace {

using nlohmann::json;

// The last non-empty line of `text` (the probe's answer comes last; code may print before).
std::string LastLine(const std::string& text) {
  size_t end = text.find_last_not_of(" \n\r\t");
  if (end == std::string::npos) return "";
  size_t start = text.rfind('\n', end);
  start = start == std::string::npos ? 0 : start + 1;
  return text.substr(start, end + 1 - start);
}

// `text` without trailing blanks, its last `bytes` bytes behind "..." when longer.
std::string Tail(const std::string& text, size_t bytes) {
  size_t end = text.find_last_not_of(" \n\r\t");
  if (end == std::string::npos) return "";
  std::string t = text.substr(0, end + 1);
  return t.size() > bytes ? "..." + t.substr(t.size() - bytes) : t;
}

// `python -m compatlab_probe.models.catalog ARGS`'s stdout, offline, `pythonpath` first on its
// path; the probe's own error (InvalidArgument) when it exits non-zero with one.
absl::StatusOr<std::string> RunProbe(const ProbeEnv& env, std::vector<std::string> args,
                                     const std::vector<std::string>& pythonpath = {}) {
  return RunProbeCommand(env, "compatlab_probe.models.catalog", std::move(args), pythonpath);
}

}  // namespace

absl::StatusOr<std::string> RunProbeCommand(const ProbeEnv& env, const std::string& module,
                                            std::vector<std::string> args,
                                            const std::vector<std::string>& pythonpath) {
  std::vector<std::string> argv = {env.python, "-m", module};
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
    json err = json::parse(LastLine(r->stdout_text), nullptr, false);
    if (!err.is_discarded() && err.is_object() && err.contains("error")) {
      return absl::InvalidArgumentError(ProbeAnswerText(err, "error"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("the probe's catalog failed (exit ", r->exit_code,
                     "): ", ProbeFailureText(r->stdout_text, r->stderr_text)));
  }
  return r->stdout_text;
}

namespace {

// The "files" of a code model answer's "code" object: a non-empty list of
// objects, each with a path, a relative path and a SHA-256.
absl::StatusOr<std::vector<CodeFile>> ParseCodeFiles(const json& code) {
  auto files = code.find("files");
  if (files == code.end() || !files->is_array() || files->empty()) {
    return absl::InvalidArgumentError("the probe's code model answer lists no code files");
  }
  std::vector<CodeFile> out;
  for (const json& f : *files) {
    CodeFile file{ProbeAnswerText(f, "path"), ProbeAnswerText(f, "rel"),
                  ProbeAnswerText(f, "sha256")};
    if (!f.is_object() || file.path.empty() || file.rel.empty() || file.sha256.size() != 64) {
      return absl::InvalidArgumentError("the probe's code model answer has a malformed code file");
    }
    out.push_back(std::move(file));
  }
  return out;
}

// A code model answer's "code" object (one of "codes"): its class, hash and files.
absl::StatusOr<CodeModelInfo> ParseCodeObject(const json& c) {
  CodeModelInfo info{ProbeAnswerText(c, "model_type"), ProbeAnswerText(c, "model_class"),
                     ProbeAnswerText(c, "head_class"), ProbeAnswerText(c, "head_kind"),
                     ProbeAnswerText(c, "sha256"),     {}};
  if (info.model_class.empty() || info.sha256.size() != 64) {
    return absl::InvalidArgumentError("the probe's code model answer has no class or hash");
  }
  absl::StatusOr<std::vector<CodeFile>> files = ParseCodeFiles(c);
  if (!files.ok()) return files.status();
  info.files = *std::move(files);
  return info;
}

}  // namespace

absl::StatusOr<ModelCatalog> ParseCatalog(const std::string& json_text) {
  json j = json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("models") || !j["models"].is_object()) {
    return absl::InvalidArgumentError("the probe's catalog is not a catalog object");
  }
  ModelCatalog catalog;
  catalog.torch_version = ProbeAnswerText(j, "torch_version");
  catalog.transformers_version = ProbeAnswerText(j, "transformers_version");
  for (const auto& [type, e] : j["models"].items()) {
    if (!e.is_object()) continue;
    CatalogEntry& entry = catalog.models[type];
    entry = {ProbeAnswerText(e, "config_class"),
             ProbeAnswerText(e, "head_class"),
             ProbeAnswerText(e, "head_kind"),
             ProbeAnswerText(e, "modality"),
             {}};
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
  CheckpointInfo info{
      ProbeAnswerText(c, "model_type"), ProbeAnswerText(c, "head_class"),
      ProbeAnswerText(c, "head_kind"),
      c.contains("custom_code") && c["custom_code"].is_boolean() && c["custom_code"].get<bool>()};
  if (info.model_type.empty()) return absl::InvalidArgumentError("checkpoint has no model_type");
  return info;
}

absl::StatusOr<CodeModelInfo> ParseCodeModelInfo(const std::string& json_text) {
  json j = json::parse(json_text, nullptr, false);
  if (j.is_discarded()) j = json::parse(LastLine(json_text), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("code") || !j["code"].is_object()) {
    return absl::InvalidArgumentError("the probe's code model answer is malformed");
  }
  return ParseCodeObject(j["code"]);
}

absl::StatusOr<std::vector<CodeModelInfo>> ParseCodeModelInfos(const std::string& json_text,
                                                               size_t count) {
  json j = json::parse(json_text, nullptr, false);
  if (j.is_discarded()) j = json::parse(LastLine(json_text), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("codes") || !j["codes"].is_array() ||
      j["codes"].size() != count) {
    return absl::InvalidArgumentError("the probe's code models answer is malformed");
  }
  std::vector<CodeModelInfo> infos;
  for (const json& c : j["codes"]) {
    if (!c.is_object())
      return absl::InvalidArgumentError("the probe's code models answer is malformed");
    absl::StatusOr<CodeModelInfo> info = ParseCodeObject(c);
    if (!info.ok()) return info.status();
    infos.push_back(*std::move(info));
  }
  return infos;
}

std::string ProbeFailureText(const std::string& stdout_text, const std::string& stderr_text) {
  json err = json::parse(LastLine(stdout_text), nullptr, false);
  if (!err.is_discarded() && err.is_object() && err.contains("error"))
    return ProbeAnswerText(err, "error");
  if (std::string t = Tail(stderr_text, 4000); !t.empty()) return t;
  if (std::string t = Tail(stdout_text, 4000); !t.empty()) return t;
  return "(no output)";
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

absl::StatusOr<CheckpointInfo> InspectCheckpoint(const ProbeEnv& env, const std::string& dir,
                                                 bool trust_remote_code) {
  std::vector<std::string> args = {"--model-path", dir};
  if (trust_remote_code) args.push_back("--trust-remote-code");
  absl::StatusOr<std::string> out = RunProbe(env, args);
  if (!out.ok()) return out.status();
  return ParseCheckpointInfo(*out);
}

absl::StatusOr<CodeModelInfo> InspectCodeModel(const ProbeEnv& env, const std::string& spec) {
  absl::StatusOr<std::string> out = RunProbe(env, {"--model-code", spec});
  if (!out.ok()) return out.status();
  return ParseCodeModelInfo(*out);
}

absl::StatusOr<std::vector<CodeModelInfo>> InspectCodeModels(
    const ProbeEnv& env, const std::vector<std::string>& specs) {
  std::vector<std::string> args = {"--several"};
  for (const std::string& spec : specs) {
    args.push_back("--model-code");
    args.push_back(spec);
  }
  absl::StatusOr<std::string> out = RunProbe(env, args);
  if (!out.ok()) return out.status();
  return ParseCodeModelInfos(*out, specs.size());
}

std::string ProbeAnswerText(const nlohmann::json& answer, const char* key) {
  auto it = answer.find(key);
  return it != answer.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace compatlab
