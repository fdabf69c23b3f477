#include "core/op_records.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/str_cat.h"

namespace compatlab {

OpCategory CategoryOf(const OpResult& r) {
  switch (r.status) {
    case TestStatus::kPass:
      return r.fallback_ops.empty() || r.fallback_ops == "{}" ? OpCategory::kNative
                                                              : OpCategory::kFallback;
    case TestStatus::kFailAccuracy:
      return OpCategory::kFail;
    case TestStatus::kTimeout:
      return OpCategory::kTimeout;
    case TestStatus::kCrash:
    case TestStatus::kOom:
      return OpCategory::kCrash;
    case TestStatus::kSkipped:
      return OpCategory::kSkipped;
    default:
      return OpCategory::kError;
  }
}

std::string_view OpCategoryName(OpCategory c) {
  switch (c) {
    case OpCategory::kNative:
      return "native";
    case OpCategory::kFallback:
      return "fallback";
    case OpCategory::kFail:
      return "fail";
    case OpCategory::kError:
      return "error";
    case OpCategory::kTimeout:
      return "timeout";
    case OpCategory::kCrash:
      return "crash";
    case OpCategory::kSkipped:
      return "skipped";
  }
  return "error";
}

const std::vector<OpCategory>& AllOpCategories() {
  static const std::vector<OpCategory> kAll = {
      OpCategory::kNative,  OpCategory::kFallback, OpCategory::kFail,   OpCategory::kError,
      OpCategory::kTimeout, OpCategory::kCrash,    OpCategory::kSkipped};
  return kAll;
}

absl::StatusOr<OpCategory> ParseOpCategory(std::string_view name) {
  for (OpCategory c : AllOpCategories()) {
    if (OpCategoryName(c) == name) return c;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown op category '", std::string(name),
                   "' (native, fallback, fail, error, timeout, crash or skipped)"));
}

bool IsStaleSkip(const OpResult& r) {
  return !r.skip_source.empty() && r.status == TestStatus::kPass;
}

namespace {

// True when every byte of `part` is [A-Za-z0-9_.-].
bool IsOpKeyPart(std::string_view part) {
  return std::all_of(part.begin(), part.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}

}  // namespace

absl::Status CheckOpKey(std::string_view key) {
  const size_t colon = key.find(':');
  const std::string_view name = key.substr(0, colon);
  const std::string_view variant =
      colon == std::string_view::npos ? std::string_view() : key.substr(colon + 1);
  if (name.empty() || key.size() > 200 || !IsOpKeyPart(name) || !IsOpKeyPart(variant) ||
      (colon != std::string_view::npos && variant.empty())) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad op key '", std::string(key.substr(0, 200)),
                     "': an op is NAME or NAME:VARIANT, each of letters, digits, _ . -"));
  }
  return absl::OkStatus();
}

}  // namespace compatlab
