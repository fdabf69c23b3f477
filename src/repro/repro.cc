#include "repro/repro.h"

#include "core/records.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "plan/target.h"
#include "query/error_kb.h"
#include "query/errors_report.h"
#include "runner/protocol.h"
#include "store/record_json.h"
#include "store/store.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/status.h"
#include "util/subprocess.h"

namespace compatlab {
namespace {

using nlohmann::ordered_json;

// Hex digits of a code file's SHA-256 shown when it changed.
constexpr size_t kShownHashChars = 16;

// Stored fields the script shows as "recorded" (and compares against).
constexpr const char* kRecordedFields[] = {"run_id",
                                           "sweep_id",
                                           "status",
                                           "status_detail",
                                           "stage",
                                           "error_type",
                                           "build_s",
                                           "prepare_s",
                                           "steady_median_s",
                                           "steady_p90_s",
                                           "steady_iters",
                                           "steady_ci_low_s",
                                           "steady_ci_high_s",
                                           "noisy",
                                           "stack_versions",
                                           "param_count",
                                           "host_peak_rss_bytes",
                                           "torch_num_threads",
                                           "mem_limit_bytes",
                                           "mem_limit_method",
                                           "torch_version",
                                           "transformers_version",
                                           "python_version",
                                           "resolved_model_class",
                                           "started_at",
                                           "host",
                                           "cpu_model",
                                           "compatlab_version"};

constexpr size_t kMaxMessageBytes = 2000;  // the recorded message's first line, cut

std::string FirstLine(const std::string& text) {
  size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) return "";
  std::string line = text.substr(start, text.find('\n', start) - start);
  if (line.size() > kMaxMessageBytes) line.resize(kMaxMessageBytes);
  return line;
}

}  // namespace

std::string ReproInputJson(const RunRecord& record, const KnownError* known,
                           const std::string& target_profile_json, bool trusted) {
  LaunchRequest launch;
  launch.run_id = record.run_id;
  launch.spec = record.spec;
  launch.torch_num_threads = record.result.torch_num_threads.value_or(0);
  launch.target_profile_json = target_profile_json;
  launch.compile_options_json = record.result.compile_options;
  // A load server row reruns on the base it was given, not on one of its own.
  if (record.result.load_base_source == "offline_row" &&
      record.result.load_offline_requests_per_s) {
    launch.load_base =
        LoadBase{*record.result.load_offline_requests_per_s, record.result.load_base_run_id};
  }
  // A load row judged by its group's objective reruns with that objective, not its own.
  if (record.result.load_slo_source == "single_stream_row" && record.result.load_slo_ttft_s &&
      record.result.load_slo_itl_s) {
    launch.load_slo = LoadSlo{*record.result.load_slo_ttft_s, *record.result.load_slo_itl_s,
                              record.result.load_slo_run_id};
  }

  const ordered_json row = RunRecordToJson(record);
  ordered_json recorded = ordered_json::object();
  for (const char* field : kRecordedFields) recorded[field] = row.at(field);
  recorded["error_message"] = FirstLine(record.result.error_message);
  recorded["signature"] = record.result.error_signature;
  recorded["code_files"] = record.result.code_files;

  ordered_json input = {
      {"recorded", recorded}, {"known_error", KnownErrorJson(known)}, {"trusted", trusted}};
  return WithRawJsonMember(input.dump(-1, ' ', false, ordered_json::error_handler_t::replace),
                           "request", TestRequestJson(launch, 0));
}

absl::Status CheckCodeFiles(const RunRecord& run, bool trusted) {
  if (!run.spec.model_id.starts_with("code:")) return absl::OkStatus();
  if (!trusted) {
    return absl::FailedPreconditionError(fmt::format(
        "run {} of {} came through `compatlab import`: its modelling code is not ours to run, so "
        "it cannot be reproduced",
        run.run_id, run.spec.model_id));
  }
  // The files the child recorded with their hashes (code_files), else, when it recorded
  // none, the model_path's file against the id's hash (the id of a model of that one file).
  std::vector<std::pair<std::string, std::string>> files;
  const nlohmann::json recorded = nlohmann::json::parse(run.result.code_files, nullptr, false);
  if (recorded.is_array()) {
    for (const nlohmann::json& e : recorded) {
      if (e.is_object() && e.contains("path") && e["path"].is_string() && e.contains("sha256") &&
          e["sha256"].is_string()) {
        files.emplace_back(e["path"].get<std::string>(), e["sha256"].get<std::string>());
      }
    }
  }
  const bool recorded_none = files.empty();
  if (recorded_none) {
    files.emplace_back(run.spec.model_path.substr(0, run.spec.model_path.rfind(':')),
                       run.spec.model_id.substr(run.spec.model_id.rfind('@') + 1));
  }
  for (const auto& [file, expected] : files) {
    absl::StatusOr<std::string> text = ReadFile(file);
    if (!text.ok()) {
      return absl::FailedPreconditionError(
          fmt::format("run {} of {}: its model code {} is not readable: {}", run.run_id,
                      run.spec.model_id, file, std::string(text.status().message())));
    }
    const std::string actual = Sha256Hex(*text);
    if (recorded_none && !actual.starts_with(expected)) {
      return absl::FailedPreconditionError(fmt::format(
          "run {} of {} recorded no code files, and its model code {} does not have the id's "
          "hash (sha256 {}): it changed, or the model has more files than this one; sweep it "
          "again",
          run.run_id, run.spec.model_id, file, actual.substr(0, kShownHashChars)));
    }
    if (expected.empty() || !actual.starts_with(expected)) {
      return absl::FailedPreconditionError(fmt::format(
          "run {} of {}: its model code {} changed since the run (sha256 {}, recorded {}); the "
          "changed code is another model: sweep it again",
          run.run_id, run.spec.model_id, file, actual.substr(0, kShownHashChars),
          expected.substr(0, kShownHashChars)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<OwnCode> ReproOwnCode(const ProbeEnv& probe,
                                     const std::filesystem::path& targets_dir) {
  absl::StatusOr<OwnCode> own = LoadOwnCode(probe.python, probe.probe_dir, targets_dir, {});
  if (!own.ok()) return own.status();
  own->model_code = true;  // CheckCodeFiles and the script check its files' hashes
  return own;
}

absl::StatusOr<std::optional<ResolvedTest>> PlanOfRun(Store& store, const RunRecord& run) {
  absl::StatusOr<std::optional<ResolvedTest>> planned =
      store.PlannedTest(run.sweep_id, run.test_id);
  if (!planned.ok()) return planned.status();
  if (!planned->has_value() || !(*planned)->execution.has_value()) return std::nullopt;
  const ResolvedTest& test = **planned;
  if (test.execution->compile_options_json != run.result.compile_options ||
      test.spec.backend != run.spec.backend || test.spec.model_path != run.spec.model_path) {
    return std::nullopt;
  }
  return planned;
}

absl::StatusOr<bool> IsLocalRun(Store& store, const RunRecord& run, const OwnCode& own) {
  absl::StatusOr<std::optional<ResolvedTest>> planned = PlanOfRun(store, run);
  if (!planned.ok()) return planned.status();
  return planned->has_value() && CheckStoredCode({**planned}, own).ok();
}

bool HasReproScript(const RunRecord& run) {
  return !run.spec.model_type.empty() || !run.spec.model_path.empty();
}

absl::StatusOr<ReproScript> GenerateReproScript(const RunRecord& run, const KnownError* known,
                                                const ProbeEnv& env,
                                                const std::filesystem::path& targets_dir,
                                                bool trusted) {
  if (!HasReproScript(run)) {
    return absl::FailedPreconditionError(
        fmt::format("run {} is a harness test (kind {}, model {}): it has no model and no "
                    "reproduction script",
                    run.run_id, run.spec.kind, run.spec.model_id));
  }
  if (absl::Status s = CheckCodeFiles(run, trusted); !s.ok()) return s;
  // The run's target profile as this checkout has it (the probe's built-in cpu
  // profile when the file is gone).
  ReproScript out;
  std::string profile_json;
  if (IsTargetProfilePath(run.spec.target)) {
    out.warnings.push_back(fmt::format(
        "the run's target '{}' is a path, not a profile name: no profile loaded (the built-in "
        "cpu one is used)",
        run.spec.target));
  } else if (absl::StatusOr<TargetProfile> profile =
                 LoadTargetProfile(run.spec.target, targets_dir);
             profile.ok()) {
    profile_json = profile->json;
  } else if (run.spec.target != "cpu") {
    out.warnings.emplace_back(profile.status().message());
  }
  absl::StatusOr<CommandResult> r =
      RunCommand({env.python, "-m", "compatlab_probe.repro"}, {{"PYTHONPATH", env.probe_dir}}, 120,
                 ReproInputJson(run, known, profile_json, trusted));
  if (!r.ok()) {
    return absl::InternalError(fmt::format("cannot run the probe with {}: {}", env.python,
                                           std::string(r.status().message())));
  }
  if (r->exit_code != 0 || r->stdout_text.empty()) {
    std::string tail = r->stderr_text.size() > 400
                           ? r->stderr_text.substr(r->stderr_text.size() - 400)
                           : r->stderr_text;
    return absl::InternalError(
        fmt::format("the probe's script generator failed (exit {}): {}", r->exit_code, tail));
  }
  constexpr std::string_view kGeneratorWarning = "compatlab_probe.repro: warning: ";
  size_t start = 0;
  while (start < r->stderr_text.size()) {
    size_t end = r->stderr_text.find('\n', start);
    if (end == std::string::npos) end = r->stderr_text.size();
    std::string_view line(r->stderr_text.data() + start, end - start);
    if (line.starts_with(kGeneratorWarning)) {
      out.warnings.emplace_back(line.substr(kGeneratorWarning.size()));
    }
    start = end + 1;
  }
  out.script = std::move(r->stdout_text);
  return out;
}

namespace {

// Whether `repro` keeps the code `run`'s plan names: a run of this store's own sweep that
// names only this installation's code (IsLocalRun), or with --allow-stored-code any run of
// this store's own sweep (PlanOfRun).
absl::StatusOr<bool> ReproTrusts(Store& store, const RunRecord& run, const ReproOptions& options) {
  if (options.allow_stored_code) {
    absl::StatusOr<std::optional<ResolvedTest>> planned = PlanOfRun(store, run);
    if (!planned.ok()) return planned.status();
    return planned->has_value();
  }
  absl::StatusOr<OwnCode> own = ReproOwnCode(options.probe, options.targets_dir);
  if (!own.ok()) return own.status();
  return IsLocalRun(store, run, *own);
}

}  // namespace

absl::StatusOr<ReproScript> ReproduceStoredRun(const ReproOptions& options) {
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options.db, OpenMode::kReadOnly);
  if (!store.ok()) return Recode(store.status(), absl::StatusCode::kFailedPrecondition);
  RunFilter filter;
  filter.run_id = options.run_id;
  absl::StatusOr<std::vector<RunRecord>> runs = (*store)->QueryRuns(filter);
  if (!runs.ok()) return Recode(runs.status(), absl::StatusCode::kInternal);
  if (runs->empty()) {
    return absl::NotFoundError(fmt::format("no run {} in {}", options.run_id, options.db.string()));
  }
  const RunRecord& run = runs->front();
  // The explanation is a bonus: a missing or broken knowledge file only warns.
  absl::StatusOr<ErrorKnowledgeBase> kb = ErrorKnowledgeBase::Load(options.kb_path);
  std::vector<std::string> warnings;
  if (!kb.ok() && HasReproScript(run)) {
    warnings.push_back("no explanations: " + std::string(kb.status().message()));
  }
  const KnownError* known = kb.ok() ? kb->MatchResult(run.result) : nullptr;
  absl::StatusOr<bool> local = ReproTrusts(**store, run, options);
  if (!local.ok()) return Recode(local.status(), absl::StatusCode::kInternal);
  absl::StatusOr<ReproScript> script =
      GenerateReproScript(run, known, options.probe, options.targets_dir, *local);
  if (!script.ok()) return script.status();
  script->warnings.insert(script->warnings.begin(), warnings.begin(), warnings.end());
  return script;
}

}  // namespace compatlab
