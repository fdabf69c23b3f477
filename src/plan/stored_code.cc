#include "plan/stored_code.h"

#include "absl/strings/str_cat.h"
#include "core/limits.h"
#include "fmt/format.h"
#include "plan/models.h"

namespace compatlab {
namespace {

// The one line of a refused test: which stored field names code that is not own.
absl::Status NotOwn(const ResolvedTest& test, std::string_view field, std::string_view value,
                    std::string_view own) {
  return absl::InvalidArgumentError(fmt::format(
      "planned test {} ({} {} {} on {}): its stored {} '{}' is not {}; a stored plan is data, "
      "not a program: pass --allow-stored-code to run it as stored (doc/suites.md, \"Resuming a "
      "sweep\")",
      test.spec.TestId(), test.spec.model_id, test.spec.kind, test.spec.mode, test.spec.target,
      field, TruncateForDisplay(value, 160), own));
}

// The profile of `own` whose content is `json`; nullptr when none is.
const TargetProfile* OwnProfile(const OwnCode& own, const std::string& json) {
  for (const TargetProfile& p : own.profiles) {
    if (p.json == json) return &p;
  }
  return nullptr;
}

// The profile, compile options and backend of `test` against `own`'s profiles.
absl::Status CheckProfileCode(const ResolvedTest& test, const OwnCode& own) {
  const TestExecution& e = *test.execution;
  const TargetProfile* profile = nullptr;
  if (!e.target_profile_json.empty()) {
    profile = OwnProfile(own, e.target_profile_json);
    if (profile == nullptr) {
      return NotOwn(test, "target profile", e.target_profile_json,
                    "a profile of this compatlab's targets/ as it is now, nor a file given "
                    "with --targets");
    }
  }
  if (!e.compile_options_json.empty()) {
    const bool derived =
        profile != nullptr &&
        (e.compile_options_json == profile->compile_options_json ||
         e.compile_options_json == WithStaticShapes(profile->compile_options_json) ||
         (test.spec.dynamic == kDynamicTrue &&
          e.compile_options_json == WithDynamicShapes(profile->compile_options_json)));
    if (!derived) {
      return NotOwn(test, "compile options", e.compile_options_json,
                    "its own profile's compile options");
    }
  }
  const bool module_backend = test.spec.backend.find(':') != std::string::npos;
  if (module_backend && test.spec.backend != own.backend &&
      (profile == nullptr || test.spec.backend != profile->backend)) {
    return NotOwn(test, "backend", test.spec.backend,
                  "its own profile's backend, nor the --backend given");
  }
  return absl::OkStatus();
}

// True when the stored spec "FILE.py:FUNCTION" of a code model names a file inside
// `suites_dir` (lexically: a stored ".." does not climb out).
bool IsShippedSuiteCode(const std::string& spec, const std::string& suites_dir) {
  if (suites_dir.empty()) return false;
  const size_t colon = spec.rfind(':');
  const std::filesystem::path file =
      std::filesystem::path(spec.substr(0, colon == std::string::npos ? spec.size() : colon))
          .lexically_normal();
  const std::string dir = std::filesystem::path(suites_dir).lexically_normal().string();
  return file.is_absolute() && file.string().starts_with(dir.ends_with('/') ? dir : dir + "/");
}

}  // namespace

absl::StatusOr<OwnCode> LoadOwnCode(const std::string& python, const std::string& probe_dir,
                                    const std::filesystem::path& targets_dir,
                                    const std::vector<std::string>& given_targets) {
  OwnCode own;
  own.python = python;
  own.probe_dir = probe_dir;
  std::vector<std::string> sources = ListTargetNames(targets_dir);
  for (const std::string& target : given_targets) {
    if (IsTargetProfilePath(target)) sources.push_back(target);
  }
  for (const std::string& source : sources) {
    absl::StatusOr<TargetProfile> profile = LoadTargetProfile(source, targets_dir);
    if (profile.ok()) {
      own.profiles.push_back(*std::move(profile));
    } else if (IsTargetProfilePath(source)) {
      return profile.status();
    }
  }
  return own;
}

absl::Status CheckStoredCode(const std::vector<ResolvedTest>& tests, const OwnCode& own) {
  for (const ResolvedTest& test : tests) {
    if (!test.execution.has_value()) continue;  // refused as an older plan by the caller
    const TestExecution& e = *test.execution;
    if (e.python != own.python) {
      return NotOwn(test, "interpreter", e.python,
                    absl::StrCat("this resume's (", own.python, "; --python names another)"));
    }
    if (e.probe_dir != own.probe_dir) {
      return NotOwn(test, "probe directory", e.probe_dir,
                    absl::StrCat("this compatlab's (", own.probe_dir, ")"));
    }
    if (absl::Status s = CheckProfileCode(test, own); !s.ok()) return s;
    if (IsCodeModelId(test.spec.model_id) && !own.model_code &&
        !IsShippedSuiteCode(test.spec.model_path, own.suites_dir)) {
      return NotOwn(test, "code model", test.spec.model_path,
                    "named by --model-code on this resume, nor a shipped suite's");
    }
    auto trust = test.spec.kind_params.find("trust_remote_code");
    const bool trusts_code = trust != test.spec.kind_params.end() && trust->second == "true";
    if (trusts_code && !own.trust_remote_code) {
      return NotOwn(test, "checkpoint code (trust_remote_code)", test.spec.model_path,
                    "trusted by --trust-remote-code on this resume");
    }
    if (trusts_code && !test.spec.model_path.empty() && test.spec.model_path != own.model_path) {
      return NotOwn(test, "checkpoint code (trust_remote_code)", test.spec.model_path,
                    "named by --model-path with --trust-remote-code on this resume");
    }
  }
  return absl::OkStatus();
}

}  // namespace compatlab
