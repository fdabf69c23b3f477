#include "cache/remote.h"

#include <regex>
#include <set>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "core/limits.h"
#include "nlohmann/json.hpp"
#include "util/hash.h"
#include "util/subprocess.h"

namespace compatlab::cache {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// How long one Hub upload or download may take.
constexpr double kHubTimeoutS = 3600;
constexpr std::string_view kHubPrefix = "hub:";

// `python -m compatlab_probe.compile_hub ARGS`: its JSON answer, or its one-line error.
absl::StatusOr<json> RunHubHelper(const HubHelper& helper, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {helper.python, "-m", "compatlab_probe.compile_hub"};
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<CommandResult> r =
      RunCommand(argv, {{"PYTHONPATH", helper.probe_dir}}, kHubTimeoutS);
  if (!r.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot run the probe's compile-store Hub helper with ", helper.python, ": ",
                     std::string(r.status().message())));
  }
  const json answer = json::parse(r->stdout_text, nullptr, false);
  if (r->exit_code == 0 && answer.is_object()) return answer;
  if (answer.is_object() && answer.contains("error") && answer["error"].is_string()) {
    return absl::UnavailableError(TruncateForDisplay(answer["error"].get<std::string>(), 1024));
  }
  return absl::InternalError(absl::StrCat("the compile-store Hub helper failed (exit ",
                                          r->exit_code,
                                          "): ", TruncateForDisplay(r->stderr_text, 400)));
}

// A fresh scratch directory beside the local store, removed by the caller.
absl::StatusOr<fs::path> Scratch(const fs::path& local) {
  std::error_code ec;
  const fs::path dir = local / "staging" / absl::StrCat("hub.", RandomHex(6));
  fs::create_directories(dir, ec);
  if (ec)
    return absl::InternalError(absl::StrCat("cannot write ", dir.string(), ": ", ec.message()));
  return dir;
}

}  // namespace

absl::StatusOr<Remote> ParseRemote(std::string_view text) {
  if (text.starts_with(kHubPrefix)) {
    static const std::regex* const kRepo =
        new std::regex("[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}");
    const std::string repo(text.substr(kHubPrefix.size()));
    if (!std::regex_match(repo, *kRepo) || repo.find("..") != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("'", TruncateForDisplay(text, 200),
                                                     "' is not a Hub repository (hub:ORG/NAME)"));
    }
    return Remote{Remote::Kind::kHub, repo};
  }
  if (text.empty()) return absl::InvalidArgumentError("the remote is empty");
  return Remote{Remote::Kind::kDirectory, std::string(text)};
}

std::string RemoteName(const Remote& remote) {
  return remote.kind == Remote::Kind::kHub ? absl::StrCat(std::string(kHubPrefix), remote.location)
                                           : remote.location;
}

absl::StatusOr<CopyReport> Push(const fs::path& local, const Remote& remote,
                                const HubHelper& helper,
                                const std::function<bool(const Entry&)>& want) {
  if (remote.kind == Remote::Kind::kDirectory) return CopyEntries(local, remote.location, want);
  // The Hub: the entries the repository lacks, checked, uploaded in one commit.
  std::vector<std::string> problems;
  absl::StatusOr<fs::path> scratch = Scratch(local);
  if (!scratch.ok()) return scratch.status();
  absl::StatusOr<std::vector<Entry>> there =
      RemoteEntries(remote, helper, *scratch / "keys", &problems);
  std::error_code ec;
  if (!there.ok()) {
    fs::remove_all(*scratch, ec);
    return there.status();
  }
  std::set<std::string> present;
  for (const Entry& e : *there) present.insert(e.id);
  CopyReport report;
  absl::StatusOr<CopyReport> staged = CopyEntries(local, *scratch / "upload", [&](const Entry& e) {
    if (want && !want(e)) return false;
    if (present.contains(e.id)) {
      report.present.push_back(e.id);
      return false;
    }
    return true;
  });
  if (staged.ok() && !staged->copied.empty()) {
    absl::StatusOr<json> answer = RunHubHelper(helper, {"push", "--repo", remote.location, "--dir",
                                                        EntriesDir(*scratch / "upload").string()});
    if (!answer.ok()) staged = answer.status();
  }
  fs::remove_all(*scratch, ec);
  if (!staged.ok()) return staged.status();
  report.copied = staged->copied;
  report.refused = staged->refused;
  return report;
}

absl::StatusOr<CopyReport> Pull(const Remote& remote, const fs::path& local,
                                const HubHelper& helper,
                                const std::function<bool(const Entry&)>& want) {
  if (remote.kind == Remote::Kind::kDirectory) {
    std::error_code ec;
    if (!fs::is_directory(EntriesDir(remote.location), ec)) {
      return absl::InvalidArgumentError(
          absl::StrCat(remote.location, ": no compile store there (no entries/ directory)"));
    }
    return CopyEntries(remote.location, local, want);
  }
  absl::StatusOr<fs::path> scratch = Scratch(local);
  if (!scratch.ok()) return scratch.status();
  std::vector<std::string> problems;
  std::error_code ec;
  absl::StatusOr<std::vector<Entry>> there =
      RemoteEntries(remote, helper, *scratch / "keys", &problems);
  std::vector<std::string> ids;
  for (const Entry& e : there.ok() ? *there : std::vector<Entry>{}) {
    if ((!want || want(e)) && !fs::exists(EntriesDir(local) / e.id / kManifestFile, ec)) {
      ids.push_back(e.id);
    }
  }
  absl::StatusOr<CopyReport> report = absl::UnknownError("not pulled");
  if (!there.ok()) report = there.status();
  if (there.ok()) {
    std::vector<std::string> args = {"pull", "--repo", remote.location, "--dir",
                                     (*scratch / "download").string()};
    for (const std::string& id : ids) args.push_back(id);
    absl::StatusOr<json> answer = ids.empty() ? json::object() : RunHubHelper(helper, args);
    report = answer.ok() ? CopyEntries(*scratch / "download", local, want) : answer.status();
  }
  fs::remove_all(*scratch, ec);
  if (report.ok()) {
    for (const std::string& problem : problems) report->refused.push_back(problem);
  }
  return report;
}

absl::StatusOr<std::vector<Entry>> RemoteEntries(const Remote& remote, const HubHelper& helper,
                                                 const fs::path& scratch,
                                                 std::vector<std::string>* problems) {
  if (remote.kind == Remote::Kind::kDirectory) return ListEntries(remote.location, problems);
  absl::StatusOr<json> answer =
      RunHubHelper(helper, {"keys", "--repo", remote.location, "--dir", scratch.string()});
  if (!answer.ok()) return answer.status();
  std::vector<Entry> entries;
  std::error_code ec;
  for (fs::directory_iterator it(EntriesDir(scratch), ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!IsEntryId(name)) continue;
    // Only key.json and entry.json were downloaded: read without the files they list.
    absl::StatusOr<Entry> entry = ReadEntryHeader(it->path(), name);
    if (!entry.ok()) {
      problems->push_back(std::string(entry.status().message()));
      continue;
    }
    entries.push_back(*std::move(entry));
  }
  return entries;
}

}  // namespace compatlab::cache
