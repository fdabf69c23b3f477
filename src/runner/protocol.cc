#include "runner/protocol.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/fields.h"
#include "core/limits.h"
#include "nlohmann/json.hpp"

namespace compatlab {

using nlohmann::json;

std::string TestRequestJson(const LaunchRequest& r, pid_t supervisor_pid) {
  const TestSpec& s = r.spec;
  json limit = json::object();
  if (r.limit != nullptr) {
    limit = {{"method", r.limit->Method()},
             {"bytes", r.limit->Bytes()},
             {"cgroup_procs", r.limit->ProcsPath()}};
  }
  json j = {{"run_id", r.run_id},
            {"test_id", s.TestId()},
            {"model_id", s.model_id},
            {"model_type", s.model_type},
            {"model_class", s.model_class},
            {"model_path", s.model_path},
            {"target", s.target},
            {"mode", s.mode},
            {"backend", s.backend},
            {"kind", s.kind},
            {"dtype", s.dtype},
            {"batch_size", s.batch_size},
            {"seq_len", s.seq_len},
            {"kind_params", s.kind_params},
            {"ranks", s.ranks},
            {"timeout_s", s.timeout_s},
            {"torch_num_threads", r.torch_num_threads},
            {"compile_threads", r.compile_threads},
            {"memory_limit", limit},
            {"supervisor_pid", supervisor_pid},
            {"compile_cache_dir", r.compile_cache_dir},
            {"cache_phase", r.cache_phase},
            {"compile_store_dir", r.compile_store_dir},
            {"compile_entry_out", r.compile_entry_out},
            {"measure",
             {{"warmup", r.measure.warmup},
              {"min_iters", r.measure.min_iters},
              {"min_time_s", r.measure.min_time_s},
              {"max_time_s", r.measure.max_time_s}}}};
  if (s.IsDynamic()) {  // a static test's request is what it was before dynamic shapes
    j["dynamic"] = s.dynamic;
    j["shapes"] = s.shapes;
  }
  if (!r.profile.empty()) {
    j["profile"] = {{"mode", r.profile},
                    {"trace_path", r.profile_trace_path},
                    {"trace_max_bytes", kMaxProfileTraceBytes}};
  }
  if (r.load_base) {
    j["load_base"] = {{"offline_requests_per_s", r.load_base->offline_requests_per_s},
                      {"run_id", r.load_base->run_id}};
  }
  if (r.load_slo) {
    j["load_slo"] = {{"ttft_s", r.load_slo->ttft_s},
                     {"itl_s", r.load_slo->itl_s},
                     {"run_id", r.load_slo->run_id}};
  }
  // The profile and the options are JSON text already (plan/target.h).
  std::string text = WithRawJsonMember(
      j.dump(), "compile_options", r.compile_options_json.empty() ? "{}" : r.compile_options_json);
  if (!r.target_profile_json.empty()) {
    text = WithRawJsonMember(std::move(text), "target_profile", r.target_profile_json);
  }
  return text;
}

std::string WithRawJsonMember(std::string object, std::string_view key, std::string_view raw) {
  object.pop_back();  // '}'
  if (object.find_last_not_of(" \n\t\r") != object.find_first_of('{')) object += ',';
  object += json(key).dump();
  object += ':';
  object += raw;
  object += '}';
  return object;
}

namespace {

// A child's value of `field` as a FieldValue: null is NULL for a nullable
// field and the default (empty text) otherwise; a text field takes any value,
// structured ones as their JSON text; a number field takes a number (a
// fractional one is truncated for an integer field). InvalidArgument for
// anything else.
absl::StatusOr<FieldValue> ChildValue(const json& value, const FieldDef& field) {
  if (value.is_null()) return field.nullable ? FieldValue() : field.get(RunRecord{});
  switch (field.type) {
    case FieldType::kText:
      if (value.is_string()) return FieldValue(value.get<std::string>());
      return FieldValue(value.dump(-1, ' ', false, json::error_handler_t::replace));
    case FieldType::kReal:
      if (value.is_number()) return FieldValue(value.get<double>());
      break;
    case FieldType::kInteger:
      if (value.is_number_integer()) return FieldValue(value.get<int64_t>());
      if (value.is_number_float()) return FieldValue(static_cast<int64_t>(value.get<double>()));
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("metric '", std::string(field.child_key), "' should be ", DocTypeName(field),
                   ", got ", value.dump(-1, ' ', false, json::error_handler_t::replace)));
}

// The object of `section` in the result object `j`, or nullptr.
const json* Section(const json& j, ChildSection section) {
  const char* key = section == ChildSection::kMetrics ? "metrics"
                    : section == ChildSection::kStack ? "stack"
                                                      : nullptr;
  if (key == nullptr) return &j;
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? &*it : nullptr;
}

// The first key of the child's "metrics" that is no result field's metric key, or "".
std::string UnknownMetric(const json& j) {
  const json* metrics = Section(j, ChildSection::kMetrics);
  if (metrics == nullptr) return "";
  for (const auto& [key, value] : metrics->items()) {
    bool known = false;
    for (const FieldDef& field : ResultFields()) {
      known = known || (field.child == ChildSection::kMetrics && field.child_key == key);
    }
    if (!known) return key;
  }
  return "";
}

// `r` turned into the harness_error of a child that broke the result
// contract (`problem`), keeping what else it reported.
void BreachOfContract(const std::string& problem, RunResult& r) {
  r.status_detail = absl::StrCat("the child reported ", std::string(TestStatusName(r.status)));
  r.status = TestStatus::kHarnessError;
  r.stage = "harness";
  r.error_type = "BadMetric";
  r.error_message = problem;
  r.error_traceback.clear();
}

}  // namespace

namespace {

// {"stage": NAME} or {"stage": NAME, "rank": R} with R from 0 to kMaxRanks - 1.
bool IsStageMark(const json& mark) {
  if (mark.is_discarded() || !mark.is_object() || !mark.contains("stage") ||
      !mark["stage"].is_string()) {
    return false;
  }
  if (mark.size() == 1) return true;
  if (mark.size() != 2 || !mark.contains("rank")) return false;
  const json& rank = mark["rank"];
  return rank.is_number_integer() && rank.get<int64_t>() >= 0 && rank.get<int64_t>() < kMaxRanks;
}

}  // namespace

absl::StatusOr<ResultPipe> SplitResultPipe(std::string_view text) {
  ResultPipe pipe;
  const size_t end = text.rfind('\n');
  if (end == std::string_view::npos) {
    pipe.result = std::string(text);
    return pipe;
  }
  pipe.result = std::string(text.substr(end + 1));
  size_t start = 0;
  while (start <= end) {
    const size_t newline = text.find('\n', start);
    const std::string_view line = text.substr(start, newline - start);
    start = newline + 1;
    json mark = json::parse(line, nullptr, false);
    if (!IsStageMark(mark)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a line before the result is not a stage mark: ", std::string(line.substr(0, 120))));
    }
    pipe.last_stage = mark["stage"].get<std::string>();
    pipe.last_rank =
        mark.contains("rank") ? std::optional(mark["rank"].get<int64_t>()) : std::nullopt;
  }
  return pipe;
}

absl::Status ParseChildResult(const std::string& text, RunResult* out) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("the result is not a JSON object");
  }
  if (!j.contains("status") || !j["status"].is_string()) {
    return absl::InvalidArgumentError("the result has no status");
  }
  RunRecord record;
  record.result = *out;
  std::string problem;
  for (const FieldDef& field : ResultFields()) {
    if (field.child == ChildSection::kNone) continue;
    const json* section = Section(j, field.child);
    if (section == nullptr) continue;
    auto it = section->find(field.child_key);
    if (it == section->end()) continue;
    absl::StatusOr<FieldValue> value = ChildValue(*it, field);
    absl::Status set = value.ok() ? field.set(*value, record) : value.status();
    if (set.ok()) continue;
    if (field.child != ChildSection::kMetrics) return set;  // e.g. an unknown status
    if (problem.empty()) problem = std::string(set.message());
  }
  const TestStatus status = record.result.status;
  if (status == TestStatus::kTimeout || status == TestStatus::kCrash) {
    return absl::InvalidArgumentError(
        absl::StrCat("a child may not report '", std::string(TestStatusName(status)), "'"));
  }
  if (std::string key = UnknownMetric(j); !key.empty() && problem.empty()) {
    problem = absl::StrCat("unknown metric '", key,
                           "': no result field has this metric key (core/fields.h)");
  }
  if (!problem.empty()) BreachOfContract(problem, record.result);
  *out = std::move(record.result);
  return absl::OkStatus();
}

}  // namespace compatlab
