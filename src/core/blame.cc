#include "core/blame.h"

#include "core/error_signature.h"
#include "fmt/format.h"

namespace compatlab {

std::string Blame(const RunResult& result) {
  if (result.status == TestStatus::kHarnessError) return std::string(kBlameHarness);
  if (IsFailureStatus(result.status) && result.status != TestStatus::kFailAccuracy &&
      result.stage == "compare") {
    return std::string(kBlameReference);
  }
  if (!result.rerun_status.empty() && IsFailureStatus(result.status)) {
    absl::StatusOr<TestStatus> rerun = ParseTestStatus(result.rerun_status);
    if (rerun.ok() && RerunIsConclusive(*rerun) &&
        result.rerun_error_signature != result.error_signature) {
      return std::string(kBlameReduction);
    }
  }
  return std::string(kBlameModel);
}

bool NeedsReductionRerun(const TestSpec& spec, const RunResult& result) {
  if (!spec.model_id.starts_with("hf:") && !spec.model_id.starts_with("hub:")) return false;
  if (auto it = spec.kind_params.find("size");
      it != spec.kind_params.end() && it->second == "full") {
    return false;
  }
  if (spec.kind_params.count("weights")) return false;  // pretrained: the repo's own, full size
  if (result.reduced.has_value() && *result.reduced == 0) return false;
  switch (result.status) {
    case TestStatus::kFailToLoad:
    case TestStatus::kFailToCompile:
    case TestStatus::kFailToRun:
    case TestStatus::kFailAccuracy:
    case TestStatus::kCrash:
      return Blame(result) == kBlameModel;
    default:
      return false;
  }
}

bool RerunIsConclusive(TestStatus rerun_status) {
  return rerun_status != TestStatus::kTimeout && rerun_status != TestStatus::kOom &&
         rerun_status != TestStatus::kSkipped && rerun_status != TestStatus::kHarnessError;
}

bool BlamedOnModel(const RunResult& result) { return BlamedOnModel(result.blame); }

bool BlamedOnModel(std::string_view blame) { return blame.empty() || blame == kBlameModel; }

PassRateRole PassRateRoleOf(TestStatus status, std::string_view blame) {
  if (!BlamedOnModel(blame)) return PassRateRole::kNotModel;
  if (status == TestStatus::kSkipped) return PassRateRole::kSkipped;
  return PassRateRole::kModelRun;
}

void PassRate::Add(TestStatus status, std::string_view blame) {
  switch (PassRateRoleOf(status, blame)) {
    case PassRateRole::kNotModel:
      ++not_model;
      return;
    case PassRateRole::kSkipped:
      ++skipped;
      return;
    case PassRateRole::kModelRun:
      ++model_runs;
      if (status == TestStatus::kPass) ++passes;
      return;
  }
}

PassRate PassRateOf(const std::vector<RunRecord>& runs) {
  PassRate rate;
  for (const RunRecord& run : runs) rate.Add(run.result);
  return rate;
}

std::optional<double> PassRate::Rate() const {
  if (model_runs == 0) return std::nullopt;
  return static_cast<double>(passes) / static_cast<double>(model_runs);
}

std::string PassRate::Describe() const {
  std::string others = not_model == 0 ? "" : fmt::format("; {} not the model's", not_model);
  if (skipped != 0) others += fmt::format("; {} skipped", skipped);
  if (model_runs == 0) return fmt::format("- (no run blamed on the model{})", others);
  return fmt::format("{:.1f}% ({} of {} runs blamed on the model{})", 100.0 * *Rate(), passes,
                     model_runs, others);
}

}  // namespace compatlab
