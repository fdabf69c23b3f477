#include "core/blame.h"

#include "core/error_signature.h"

namespace compatlab {

std::string Blame(const RunResult& result) {
  if (result.status == TestStatus::kHarnessError) return std::string(kBlameHarness);
  if (IsFailureStatus(result.status) && result.status != TestStatus::kFailAccuracy &&
      result.stage == "compare") {
    return std::string(kBlameReference);
  }
  return std::string(kBlameModel);
}

bool BlamedOnModel(const RunResult& result) {
  return result.blame.empty() || result.blame == kBlameModel;
}

}  // namespace compatlab
