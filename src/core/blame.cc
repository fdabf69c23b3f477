#include "core/blame.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "core/error_signature.h"
#include "fmt/format.h"

namespace compatlab {
namespace {

// `name` without non-ASCII bytes, then trimmed of spaces and punctuation at its
// ends ("🤗 Datasets" -> "Datasets").
std::string AsciiPackageName(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (static_cast<unsigned char>(c) < 0x80) out += c;
  }
  const size_t begin = out.find_first_not_of(" `'\"");
  if (begin == std::string::npos) return "";
  const size_t end = out.find_last_not_of(" `'\".");
  return out.substr(begin, end - begin + 1);
}

// The library names of transformers' "requires the X library but it was not
// found" messages in `message` (requires_backends joins one per backend).
void AddRequiredLibraries(std::string_view message, std::vector<std::string>* names) {
  constexpr std::string_view kRequires = "requires the ";
  constexpr size_t kMaxName = 64;
  constexpr size_t kMaxSentence = 160;
  for (size_t at = message.find(kRequires); at != std::string_view::npos;
       at = message.find(kRequires, at + 1)) {
    const size_t begin = at + kRequires.size();
    const size_t library = message.find(" library", begin);
    if (library == std::string_view::npos || library - begin > kMaxName) continue;
    // The sentence goes on to say the library (at the version required) was not found.
    std::string_view rest = message.substr(library, kMaxSentence);
    rest = rest.substr(0, rest.find(kRequires));
    if (rest.find("not found") == std::string_view::npos) continue;
    names->push_back(AsciiPackageName(message.substr(begin, library - begin)));
  }
}

// The top-level modules of Python's "No module named 'X'" in `message`, but
// for the packages compatlab itself runs on.
void AddMissingModules(std::string_view message, std::vector<std::string>* names) {
  constexpr std::string_view kNoModule = "No module named '";
  for (size_t at = message.find(kNoModule); at != std::string_view::npos;
       at = message.find(kNoModule, at + 1)) {
    const size_t begin = at + kNoModule.size();
    const size_t end = message.find('\'', begin);
    if (end == std::string_view::npos) continue;
    std::string_view module = message.substr(begin, end - begin);
    module = module.substr(0, module.find('.'));
    if (module.empty() || module == "torch" || module == "transformers" ||
        module == "compatlab_probe") {
      continue;
    }
    names->push_back(AsciiPackageName(module));
  }
}

}  // namespace

std::vector<std::string> MissingPackages(const RunResult& result) {
  if (!IsFailureStatus(result.status)) return {};
  std::vector<std::string> found;
  AddRequiredLibraries(result.error_message, &found);
  AddMissingModules(result.error_message, &found);
  std::vector<std::string> names;
  for (std::string& name : found) {
    if (name.empty() || name.find(',') != std::string::npos) continue;
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

std::string MissingPackagesText(const RunResult& result) {
  return absl::StrJoin(MissingPackages(result), ", ");
}

std::string NotTestedHereText(const RunResult& result) {
  if (result.blame != kBlameEnvironment) return "";
  return "not tested here: needs " +
         (result.missing_packages.empty() ? std::string("a package") : result.missing_packages);
}

void FillMissingPackages(RunResult* result) {
  if (!result->missing_packages.empty()) return;
  result->missing_packages = MissingPackagesText(*result);
  if (!result->missing_packages.empty() && result->status != TestStatus::kHarnessError &&
      BlamedOnModel(*result)) {
    result->blame = std::string(kBlameEnvironment);
  }
}

std::string Blame(const RunResult& result) {
  if (result.status == TestStatus::kHarnessError) return std::string(kBlameHarness);
  if (!MissingPackages(result).empty()) return std::string(kBlameEnvironment);
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

bool PlannedReduced(const TestSpec& spec) {
  if (!spec.model_id.starts_with("hf:") && !spec.model_id.starts_with("hub:")) return false;
  if (auto it = spec.kind_params.find("size");
      it != spec.kind_params.end() && it->second == "full") {
    return false;
  }
  return spec.kind_params.count("weights") == 0;  // pretrained: the repo's own, full size
}

bool NeedsReductionRerun(const TestSpec& spec, const RunResult& result) {
  if (!PlannedReduced(spec)) return false;
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
