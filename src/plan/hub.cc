#include "plan/hub.h"

#include <regex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "plan/catalog.h"
#include "util/subprocess.h"

namespace compatlab {
namespace {

using nlohmann::json;

// `python -m compatlab_probe.models.hub ARGS` with the caller's Hub environment; its JSON answer.
absl::StatusOr<json> RunResolver(const ProbeEnv& env, const std::vector<std::string>& args,
                                 bool exit_1_is_answer) {
  std::vector<std::string> argv = {env.python, "-m", "compatlab_probe.models.hub"};
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<CommandResult> r = RunCommand(argv, {{"PYTHONPATH", env.probe_dir}}, 900);
  if (!r.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("cannot run the probe's Hub resolver with ",
                                                      env.python, ": ", r.status().message()));
  }
  json j = json::parse(r->stdout_text, nullptr, false);
  if ((r->exit_code == 0 || (exit_1_is_answer && r->exit_code == 1)) && j.is_object()) return j;
  if (j.is_object() && j.contains("error"))
    return absl::InvalidArgumentError(ProbeAnswerText(j, "error"));
  std::string tail = r->stderr_text.size() > 400
                         ? r->stderr_text.substr(r->stderr_text.size() - 400)
                         : r->stderr_text;
  return absl::InternalError(
      absl::StrCat("the probe's Hub resolver failed (exit ", r->exit_code, "): ", tail));
}

}  // namespace

bool IsHubId(const std::string& model) { return absl::StartsWith(model, kHubPrefix); }

absl::Status CheckHubId(const std::string& model) {
  static const std::regex* const kId = new std::regex(
      "hub:[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}"
      "(@[A-Za-z0-9][A-Za-z0-9._/-]{0,127})?");
  const std::string& text = model;
  if (!std::regex_match(text, *kId) || absl::StrContains(text, "..")) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a Hub model id (hub:ORG/NAME or hub:ORG/NAME@REVISION)"));
  }
  return absl::OkStatus();
}

bool HubIdMatches(const std::string& query, const std::string& model_id) {
  if (!IsHubId(query) || !IsHubId(model_id)) return false;
  if (absl::StrContains(query, "@")) return absl::EqualsIgnoreCase(query, model_id);
  return absl::EqualsIgnoreCase(query, model_id.substr(0, model_id.find('@')));  // NOLINT
}

namespace {

// One model of the resolver's answer; InvalidArgument for a malformed one or a bad model id.
absl::StatusOr<HubModelInfo> HubModelInfoOf(const json& m) {
  if (!m.is_object()) return absl::InvalidArgumentError("the probe's Hub answer is malformed");
  HubModelInfo info{ProbeAnswerText(m, "model_id"),   ProbeAnswerText(m, "repo_id"),
                    ProbeAnswerText(m, "commit"),     ProbeAnswerText(m, "config_hash"),
                    ProbeAnswerText(m, "model_type"), ProbeAnswerText(m, "head_class"),
                    ProbeAnswerText(m, "head_kind"),  {},
                    ProbeAnswerText(m, "error")};
  if (auto it = m.find("head_classes"); it != m.end() && it->is_array()) {
    for (const json& c : *it) {
      if (c.is_string()) info.head_classes.push_back(c.get<std::string>());
    }
  }
  if (absl::Status s = CheckHubId(info.model_id); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("the probe's Hub answer: ", s.message()));
  }
  if (info.error.empty() && (info.model_type.empty() || info.commit.empty())) {
    info.error = "the resolver gave no model type or commit";
  }
  return info;
}

}  // namespace

absl::StatusOr<std::map<std::string, HubModelInfo>> ParseHubModels(const std::string& json_text) {
  json j = json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("models") || !j["models"].is_object()) {
    return absl::InvalidArgumentError("the probe's Hub answer is malformed");
  }
  std::map<std::string, HubModelInfo> models;
  for (const auto& [spec, m] : j["models"].items()) {
    absl::StatusOr<HubModelInfo> info = HubModelInfoOf(m);
    if (!info.ok()) return info.status();
    models[spec] = *std::move(info);
  }
  return models;
}

absl::StatusOr<std::map<std::string, HubModelInfo>> ResolveHubModels(
    const ProbeEnv& env, const std::vector<std::string>& specs, bool weights) {
  std::vector<std::string> args = {"resolve"};
  if (weights) args.push_back("--weights");
  args.insert(args.end(), specs.begin(), specs.end());
  absl::StatusOr<json> answer = RunResolver(env, args, false);
  if (!answer.ok()) return answer.status();
  absl::StatusOr<std::map<std::string, HubModelInfo>> models = ParseHubModels(answer->dump());
  if (!models.ok()) return models.status();
  for (const std::string& spec : specs) {
    if (!models->count(spec)) {
      return absl::InternalError(absl::StrCat("the probe's Hub resolver did not answer ", spec));
    }
  }
  return models;
}

absl::StatusOr<std::vector<std::string>> ListHubModels(const ProbeEnv& env,
                                                       const HubListRequest& request) {
  if (request.sort != "downloads" && request.sort != "trending") {
    return absl::InvalidArgumentError(
        absl::StrCat("--sort ", request.sort, ": not downloads or trending"));
  }
  if (request.limit < 1 || request.limit > 10000) {
    return absl::InvalidArgumentError("--limit must be from 1 to 10000");
  }
  static const std::regex* const kTask = new std::regex("[a-z0-9-]{0,64}");
  if (!std::regex_match(request.task, *kTask)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--task ", request.task, ": not a Hub task name (text-generation, ...)"));
  }
  std::vector<std::string> args = {"list", "--sort", request.sort, "--limit",
                                   std::to_string(request.limit)};
  if (!request.task.empty()) {
    args.push_back("--task");
    args.push_back(request.task);
  }
  absl::StatusOr<json> answer = RunResolver(env, args, true);
  if (!answer.ok()) return answer.status();
  if (answer->contains("error")) return absl::UnavailableError(ProbeAnswerText(*answer, "error"));
  std::vector<std::string> ids;
  const json& models = (*answer)["models"];
  if (!models.is_array()) return absl::InternalError("the probe's Hub list is malformed");
  for (const json& id : models) {
    std::string text = id.is_string() ? id.get<std::string>() : "";
    // The list may hold legacy ids without an organisation; a suite takes ORG/NAME only.
    if (CheckHubId(absl::StrCat(kHubPrefix, text)).ok()) ids.push_back(text);
  }
  return ids;
}

std::string HubSuiteJson(const std::string& name, const std::vector<std::string>& repo_ids) {
  json models = json::array();
  for (const std::string& id : repo_ids) models.push_back(absl::StrCat(kHubPrefix, id));
  json suite = {{"name", name}, {"models", models}};
  return suite.dump(2) + "\n";
}

}  // namespace compatlab
