#include "core/records.h"

#include <array>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/limits.h"
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
  // Schema 29's keys only when set: a static test keeps the id it had before them.
  if (!dynamic.empty()) id["dynamic"] = dynamic;
  if (!shapes.empty()) id["shapes"] = shapes;
  // error_handler_t::replace: invalid UTF-8 is hashed as U+FFFD, never thrown.
  return Sha256Hex(id.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)).substr(0, 32);
}

std::string ShapesText(const std::vector<Shape>& shapes) {
  return absl::StrJoin(shapes, ",", [](std::string* out, const Shape& s) {
    absl::StrAppend(out, s.batch_size, "x", s.seq_len);
  });
}

absl::StatusOr<std::vector<Shape>> ParseShapesText(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("shapes '", std::string(text.substr(0, 200)), "': ", std::string(why)));
  };
  std::vector<Shape> shapes;
  for (absl::string_view part : absl::StrSplit(absl::string_view(text.data(), text.size()), ',')) {
    if (shapes.size() == kMaxDynamicShapes) {
      return bad(absl::StrCat("more than ", kMaxDynamicShapes, " shapes"));
    }
    const std::vector<absl::string_view> dims = absl::StrSplit(part, 'x');
    Shape shape;
    if (dims.size() != 2 || !absl::SimpleAtoi(dims[0], &shape.batch_size) ||
        !absl::SimpleAtoi(dims[1], &shape.seq_len)) {
      return bad("not BATCHxSEQ,...");
    }
    for (int64_t d : {shape.batch_size, shape.seq_len}) {
      if (d < 1 || d > (int64_t{1} << 20)) return bad("a dimension is not from 1 to 1048576");
    }
    for (const Shape& seen : shapes) {
      if (seen == shape) return bad("a shape is named twice");
    }
    shapes.push_back(shape);
  }
  if (ShapesText(shapes) != text) return bad("not in canonical form (1x16,1x32)");
  return shapes;
}

}  // namespace compatlab
