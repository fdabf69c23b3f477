#include "sweep/stored_trust.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "core/limits.h"
#include "fmt/format.h"
#include "plan/plan.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;

// The one line of a stored limit out of its flag's range.
absl::Status LimitOutOfRange(const ResolvedTest& test, std::string_view field,
                             std::string_view flag, std::string_view why) {
  return absl::InvalidArgumentError(
      fmt::format("planned test {} ({} {} {} on {}): its stored {} is out of range ({}); pass {} "
                  "on the resume to replace it",
                  test.spec.TestId(), test.spec.model_id, test.spec.kind, test.spec.mode,
                  test.spec.target, field, why, flag));
}

}  // namespace

absl::Status CheckStoredLimits(const std::vector<ResolvedTest>& tests, const GivenLimits& given) {
  for (const ResolvedTest& test : tests) {
    if (!given.timeout) {
      absl::Status s = CheckDuration(test.spec.timeout_s, "timeout_s", false);
      if (!s.ok()) return LimitOutOfRange(test, "timeout_s", "--timeout", std::string(s.message()));
    }
    if (!test.execution.has_value()) continue;  // refused as an older plan by the caller
    if (!given.grace) {
      absl::Status s = CheckDuration(test.execution->grace_s, "grace_s", true);
      if (!s.ok()) return LimitOutOfRange(test, "grace_s", "--grace", std::string(s.message()));
    }
    if (!given.mem_limit && test.execution->mem_limit_bytes < kMinMemLimitBytes) {
      return LimitOutOfRange(test, "mem_limit_bytes", "--mem-limit",
                             fmt::format("{} bytes, under the least --mem-limit of 64M",
                                         test.execution->mem_limit_bytes));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckResumeCode(const std::string& origin, const std::vector<ResolvedTest>& tests,
                             const ProbeEnv& probe, const fs::path& home, const PlanFlags& given) {
  absl::StatusOr<OwnCode> own =
      LoadOwnCode(probe.python, probe.probe_dir, home / "targets", given.targets);
  if (!own.ok()) return own.status();
  own->backend = given.backend;
  own->model_code = !given.model_code.empty();
  std::error_code ec;
  own->suites_dir = fs::weakly_canonical(home / "suites", ec).string();
  own->trust_remote_code = given.trust_remote_code;
  if (!given.model_path.empty()) own->model_path = fs::absolute(given.model_path, ec).string();
  absl::Status s = CheckStoredCode(tests, *own);
  if (s.ok()) return s;
  return absl::InvalidArgumentError(absl::StrCat(origin, ": ", s.message()));
}

absl::StatusOr<fs::path> SweepTempPath(std::string_view prefix, const std::string& sweep_id,
                                       std::string_view suffix) {
  if (absl::Status s = CheckStoredId(sweep_id, "sweep id"); !s.ok()) return s;
  return fs::temp_directory_path() / fmt::format("{}{}{}", prefix, sweep_id, suffix);
}

}  // namespace compatlab
