#include "core/records.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "util/hash.h"

namespace compatlab {
namespace {

constexpr std::array<std::pair<TestStatus, std::string_view>, 10> kStatusNames = {{
    {TestStatus::kPass, "pass"},
    {TestStatus::kFailAccuracy, "fail_accuracy"},
    {TestStatus::kFailToLoad, "fail_to_load"},
    {TestStatus::kFailToCompile, "fail_to_compile"},
    {TestStatus::kFailToRun, "fail_to_run"},
    {TestStatus::kTimeout, "timeout"},
    {TestStatus::kCrash, "crash"},
    {TestStatus::kOom, "oom"},
    {TestStatus::kSkipped, "skipped"},
    {TestStatus::kHarnessError, "harness_error"},
}};

}  // namespace

std::string_view TestStatusName(TestStatus status) {
  for (const auto& [s, name] : kStatusNames) {
    if (s == status) return name;
  }
  return "harness_error";
}

absl::StatusOr<TestStatus> ParseTestStatus(std::string_view name) {
  for (const auto& [s, n] : kStatusNames) {
    if (n == name) return s;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown status '", std::string(name), "'"));
}

const std::vector<TestStatus>& AllTestStatuses() {
  static const std::vector<TestStatus> all = [] {
    std::vector<TestStatus> v;
    for (const auto& [s, n] : kStatusNames) v.push_back(s);
    return v;
  }();
  return all;
}

std::string TestSpec::TestId() const {
  // Canonical form: a JSON object with sorted keys (nlohmann::json sorts them).
  nlohmann::json id = {
      {"model_id", model_id}, {"model_class", model_class},
      {"target", target},     {"mode", mode},
      {"backend", backend},   {"kind", kind},
      {"dtype", dtype},       {"batch_size", batch_size},
      {"seq_len", seq_len},   {"kind_params", kind_params},
  };
  if (ranks != 1) id["ranks"] = ranks;
  // error_handler_t::replace: invalid UTF-8 is hashed as U+FFFD, never thrown.
  return Sha256Hex(id.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)).substr(0, 32);
}

}  // namespace compatlab
