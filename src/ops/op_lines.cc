#include "ops/op_lines.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/error_signature.h"
#include "nlohmann/json.hpp"
#include "ops/op_plan.h"
#include "util/utf8.h"

namespace compatlab {
namespace {

using nlohmann::json;

// The string at `key`, bounded and valid UTF-8; "" when absent or not a string.
std::string Text(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_string()) return "";
  std::string s = it->get<std::string>();
  if (s.size() > kMaxOpText) s.resize(kMaxOpText);
  return ToValidUtf8(s);
}

int64_t Count(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_number_integer() ? std::max<int64_t>(0, it->get<int64_t>()) : 0;
}

std::optional<double> Figure(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// The JSON text of a list of strings or an object of counts at `key`, else `empty`.
std::string Listing(const json& o, const char* key, bool object, const char* empty) {
  auto it = o.find(key);
  if (it == o.end() || (object ? !it->is_object() : !it->is_array())) return empty;
  for (const json& v : object ? json::array() : *it) {
    if (!v.is_string()) return empty;
  }
  if (object) {
    for (const auto& [k, v] : it->items()) {
      if (!v.is_number_integer()) return empty;
    }
  }
  std::string text = it->dump(-1, ' ', false, json::error_handler_t::replace);
  return text.size() > 4 * kMaxOpText ? empty : text;
}

// An op_case key read as it is into the OpResult member of its name.
template <typename T>
struct CaseMember {
  const char* key;
  T OpResult::*member;
};

constexpr CaseMember<std::string> kCaseTexts[] = {
    {"dtype", &OpResult::dtype},
    {"detail", &OpResult::detail},
    {"first_failure", &OpResult::first_failure},
    {"error_type", &OpResult::error_type},
    {"tol_source", &OpResult::tol_source},
    {"ref_dtype", &OpResult::ref_dtype},
    {"fallback_audit", &OpResult::fallback_audit},
    {"skip_source", &OpResult::skip_source},
    {"skip_kind", &OpResult::skip_kind},
    {"skip_reason", &OpResult::skip_reason},
};
constexpr CaseMember<int64_t> kCaseCounts[] = {
    {"samples", &OpResult::samples},     {"passed", &OpResult::passed},
    {"failed", &OpResult::failed},       {"errored", &OpResult::errored},
    {"timed_out", &OpResult::timed_out},
};
constexpr CaseMember<std::optional<double>> kCaseFigures[] = {
    {"max_abs_err", &OpResult::max_abs_err},
    {"max_rel_err", &OpResult::max_rel_err},
    {"atol", &OpResult::atol},
    {"rtol", &OpResult::rtol},
};

// Reads every key of `members` from `c` with `read` into its member of `r`.
template <typename T, size_t N, typename Read>
void ReadCaseMembers(const json& c, const CaseMember<T> (&members)[N], Read read, OpResult* r) {
  for (const CaseMember<T>& m : members) r->*m.member = read(c, m.key);
}

absl::StatusOr<OpResult> CaseOf(const json& c) {
  if (!c.is_object()) return absl::InvalidArgumentError("an op_case is not an object");
  OpResult r;
  const std::string key = Text(c, "key");
  if (absl::Status s = CheckOpKey(key); !s.ok()) return s;
  std::tie(r.op, r.variant) = SplitOpKey(key);
  absl::StatusOr<TestStatus> status = ParseTestStatus(Text(c, "status"));
  if (!status.ok()) return status.status();
  r.status = *status;
  ReadCaseMembers(c, kCaseTexts, Text, &r);
  ReadCaseMembers(c, kCaseCounts, Count, &r);
  ReadCaseMembers(c, kCaseFigures, Figure, &r);
  if (IsFailureStatus(r.status)) {
    r.signature =
        ErrorSignature(r.error_type, r.first_failure.empty() ? r.detail : r.first_failure);
  }
  r.aten_ops = Listing(c, "aten_ops", false, "[]");
  r.fallback_ops = Listing(c, "fallback_ops", true, "{}");
  r.wall_s = Figure(c, "wall_s").value_or(0);
  return r;
}

// Notes the first refused op line.
void Refuse(OpLines* out, std::string why) {
  if (out->bad_line.empty()) out->bad_line = std::move(why);
}

}  // namespace

absl::StatusOr<OpLines> SplitOpLines(std::string_view text, size_t max_cases) {
  OpLines out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    const bool last = end == std::string_view::npos;
    std::string_view line = text.substr(start, last ? std::string_view::npos : end + 1 - start);
    start = last ? text.size() : end + 1;
    if (!line.starts_with("{\"op_")) {
      out.rest.append(line);
      continue;
    }
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || j.size() != 1) {
      Refuse(&out, absl::StrCat("an op line does not parse: ", std::string(line.substr(0, 120))));
      continue;
    }
    if (j.contains("op_start") && j["op_start"].is_string()) {
      out.last_started = Text(j, "op_start");
      continue;
    }
    if (!j.contains("op_case")) {
      Refuse(&out, absl::StrCat("an unknown op line: ", std::string(line.substr(0, 120))));
      continue;
    }
    if (out.cases.size() >= max_cases) {
      return absl::InvalidArgumentError(absl::StrCat("more than ", max_cases, " op cases"));
    }
    absl::StatusOr<OpResult> c = CaseOf(j["op_case"]);
    if (!c.ok()) {
      Refuse(&out, absl::StrCat("an op_case: ", c.status().message()));
      continue;
    }
    out.cases.push_back(*std::move(c));
  }
  return out;
}

}  // namespace compatlab
