#include "export/hub_dataset.h"

#include <regex>

#include "core/limits.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "util/subprocess.h"

namespace compatlab {
namespace {

using nlohmann::json;

// How long one upload or download may take.
constexpr double kHelperTimeoutS = 3600;

// The string at `key` of the helper's answer, "" when missing or not text.
std::string TextAt(const json& answer, const char* key) {
  const auto it = answer.find(key);
  return it != answer.end() && it->is_string() ? it->get<std::string>() : "";
}

// `python -m compatlab_probe.hub_dataset ARGS`; its JSON answer (an object).
absl::StatusOr<json> RunHelper(const HubHelper& helper, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {helper.python, "-m", "compatlab_probe.hub_dataset"};
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<CommandResult> r =
      RunCommand(argv, {{"PYTHONPATH", helper.probe_dir}}, kHelperTimeoutS);
  if (!r.ok()) {
    return absl::FailedPreconditionError(
        fmt::format("cannot run the probe's Hub dataset helper with {}: {}", helper.python,
                    std::string(r.status().message())));
  }
  const json answer = json::parse(r->stdout_text, nullptr, false);
  if (r->exit_code == 0 && answer.is_object()) return answer;
  if (answer.is_object() && answer.contains("error")) {
    const std::string why = TruncateForDisplay(TextAt(answer, "error"), 1024);
    if (r->exit_code == 2) return absl::InvalidArgumentError(why);
    return absl::UnavailableError(why);
  }
  return absl::InternalError(fmt::format("the probe's Hub dataset helper failed (exit {}): {}",
                                         r->exit_code, TruncateForDisplay(r->stderr_text, 400)));
}

}  // namespace

absl::Status CheckDatasetRepo(std::string_view repo, std::string_view revision) {
  static const std::regex* const kRepo =
      new std::regex("[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}");
  static const std::regex* const kRevision = new std::regex("[A-Za-z0-9][A-Za-z0-9._/-]{0,127}");
  const std::string r(repo);
  if (!std::regex_match(r, *kRepo) || r.find("..") != std::string::npos) {
    return absl::InvalidArgumentError(
        fmt::format("'{}' is not a Hub dataset id (ORG/NAME)", TruncateForDisplay(repo, 200)));
  }
  const std::string v(revision);
  if (!v.empty() && (!std::regex_match(v, *kRevision) || v.find("..") != std::string::npos)) {
    return absl::InvalidArgumentError(fmt::format(
        "'{}' is not a Hub revision (a branch, tag or commit)", TruncateForDisplay(revision, 200)));
  }
  return absl::OkStatus();
}

absl::StatusOr<PublishedDataset> PublishDataset(const PublishOptions& options) {
  if (absl::Status s = CheckDatasetRepo(options.repo, options.revision); !s.ok()) return s;
  std::error_code error;
  if (!std::filesystem::is_regular_file(options.dir / "README.md", error)) {
    return absl::InvalidArgumentError(
        fmt::format("{}: no README.md; write the dataset with `compatlab export --publish {}`",
                    options.dir.string(), options.dir.string()));
  }
  std::vector<std::string> args = {"publish", options.dir.string(), "--repo", options.repo};
  if (!options.revision.empty()) args.insert(args.end(), {"--revision", options.revision});
  absl::StatusOr<json> answer = RunHelper(options.helper, args);
  if (!answer.ok()) return answer.status();
  PublishedDataset published{TextAt(*answer, "repo_id"),
                             TextAt(*answer, "revision"),
                             TextAt(*answer, "commit"),
                             TextAt(*answer, "url"),
                             {}};
  if (const auto files = answer->find("files"); files != answer->end() && files->is_array()) {
    for (const json& file : *files) {
      if (file.is_string()) published.files.push_back(file.get<std::string>());
    }
  }
  return published;
}

absl::StatusOr<DownloadedDataset> DownloadDataset(const std::string& spec,
                                                  const HubHelper& helper) {
  const size_t at = spec.find('@');
  const std::string repo = spec.substr(0, at);
  const std::string revision = at == std::string::npos ? "" : spec.substr(at + 1);
  if (absl::Status s = CheckDatasetRepo(repo, revision); !s.ok()) return s;
  if (at != std::string::npos && revision.empty()) {
    return absl::InvalidArgumentError(fmt::format("'{}': an empty revision after '@'", spec));
  }
  absl::StatusOr<json> answer = RunHelper(helper, {"download", spec});
  if (!answer.ok()) return answer.status();
  DownloadedDataset downloaded{TextAt(*answer, "repo_id"), TextAt(*answer, "commit"),
                               TextAt(*answer, "path")};
  std::error_code error;
  if (!downloaded.path.is_absolute() || !std::filesystem::is_directory(downloaded.path, error)) {
    return absl::InternalError(fmt::format("the Hub dataset helper answered no directory ('{}')",
                                           TruncateForDisplay(downloaded.path.string(), 200)));
  }
  return downloaded;
}

}  // namespace compatlab
