#include "store/record_json.h"

#include <limits>
#include <type_traits>

#include "fmt/format.h"

namespace compatlab {
namespace {

absl::StatusOr<FieldValue> FieldValueFromJson(const nlohmann::json& value, const FieldDef& field) {
  if (value.is_null()) return FieldValue(std::monostate{});
  switch (field.type) {
    case FieldType::kText:
      if (value.is_string()) return FieldValue(value.get<std::string>());
      break;
    case FieldType::kInteger:
      if (value.is_number_unsigned() &&
          value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        break;
      }
      if (value.is_number_integer()) return FieldValue(value.get<int64_t>());
      break;
    case FieldType::kReal:
      if (value.is_number()) return FieldValue(value.get<double>());
      break;
  }
  return absl::InvalidArgumentError(fmt::format("test spec: '{}' should be {}, got {}", field.name,
                                                DocTypeName(field), value.dump()));
}

// NULL -> null, else the value (FieldValue or FieldView).
template <typename Variant>
nlohmann::ordered_json VariantToJson(const Variant& value) {
  return std::visit(
      [](const auto& v) -> nlohmann::ordered_json {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::monostate>) {
          return nullptr;
        } else {
          return v;
        }
      },
      value);
}

}  // namespace

nlohmann::ordered_json FieldValueToJson(const FieldValue& value) { return VariantToJson(value); }

nlohmann::ordered_json FieldViewToJson(const FieldView& value) { return VariantToJson(value); }

nlohmann::ordered_json ListFieldJson(const FieldDef& field, const FieldValue& value) {
  const std::string* text = std::get_if<std::string>(&value);
  if (text == nullptr || text->empty()) return nullptr;
  absl::StatusOr<ListValue> list = ParseListText(field, *text);
  if (!list.ok()) return *text;  // text an older compatlab stored that is no list: as it is
  return ListJson(field, *list);
}

nlohmann::ordered_json RunRecordToJson(const RunRecord& record) {
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  for (const FieldDef& field : ResultFields()) {
    json[std::string(field.name)] = field.list == ListKind::kNone
                                        ? FieldValueToJson(field.get(record))
                                        : ListFieldJson(field, field.get(record));
  }
  return json;
}

nlohmann::ordered_json TestSpecJson(const TestSpec& spec) {
  RunRecord record;
  record.spec = spec;
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  for (const FieldDef& field : ResultFields()) {
    if (field.group != FieldGroup::kSpec) continue;
    // One rank is left out, as in TestId: a one-rank plan's JSON, and so its plan id, is
    // what it was before schema 28 (doc/ranks.md).
    if (field.name == "ranks" && spec.ranks == 1) continue;
    FieldValue value = field.get(record);
    // A spec field added after version 1 (dynamic, shapes) only when set: a static test's
    // planned JSON, and so a plan's id (PlanId), is what it was before the field.
    const std::string* text = std::get_if<std::string>(&value);
    if (field.since_version > 1 && text != nullptr && text->empty()) continue;
    json[std::string(field.name)] = FieldValueToJson(value);
  }
  json["kind_params"] = spec.kind_params;  // an object here, not the column's text
  return json;
}

namespace {

absl::StatusOr<std::string> Dump(const nlohmann::ordered_json& json, const TestSpec& spec) {
  try {
    return json.dump();
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(fmt::format("test spec of {}: {}", spec.model_id, e.what()));
  }
}

// The spec keys of `json`; `skip` is a key that is not the spec's ("" none).
absl::StatusOr<TestSpec> SpecFromObject(const nlohmann::json& json, std::string_view skip) {
  RunRecord record;
  for (const auto& [key, value] : json.items()) {
    if (!skip.empty() && key == skip) continue;
    const FieldDef* field = FindResultField(key);
    if (field == nullptr || field->group != FieldGroup::kSpec) {
      return absl::InvalidArgumentError(fmt::format("test spec: unknown key '{}'", key));
    }
    if (field->name == "kind_params" && value.is_object()) {
      absl::StatusOr<std::map<std::string, std::string>> params = KindParamsFromJsonValue(value);
      if (!params.ok()) return params.status();
      record.spec.kind_params = *std::move(params);
      continue;
    }
    absl::StatusOr<FieldValue> field_value = FieldValueFromJson(value, *field);
    if (!field_value.ok()) return field_value.status();
    if (absl::Status status = field->set(*field_value, record); !status.ok()) return status;
  }
  return record.spec;
}

constexpr std::string_view kExecutionKey = "execution";

nlohmann::ordered_json ExecutionObject(const TestExecution& e) {
  return {{"target_profile_json", e.target_profile_json},
          {"compile_options_json", e.compile_options_json},
          {"warm", e.warm},
          {"measure",
           {{"warmup", e.measure.warmup},
            {"min_iters", e.measure.min_iters},
            {"min_time_s", e.measure.min_time_s},
            {"max_time_s", e.measure.max_time_s}}},
          {"python", e.python},
          {"probe_dir", e.probe_dir},
          {"grace_s", e.grace_s},
          {"mem_limit_bytes", e.mem_limit_bytes},
          {"mem_limit_method", e.mem_limit_method},
          {"profile", e.profile},
          {"stack", e.stack}};
}

absl::StatusOr<TestExecution> ExecutionFromObject(const nlohmann::json& json) {
  try {
    const nlohmann::json& measure = json.at("measure");
    TestExecution e;
    e.target_profile_json = json.at("target_profile_json").get<std::string>();
    e.compile_options_json = json.at("compile_options_json").get<std::string>();
    e.warm = json.at("warm").get<bool>();
    e.measure.warmup = measure.at("warmup").get<int>();
    e.measure.min_iters = measure.at("min_iters").get<int>();
    e.measure.min_time_s = measure.at("min_time_s").get<double>();
    // A plan stored before --max-measure-s stopped at the minimums: 0.
    e.measure.max_time_s = measure.value("max_time_s", 0.0);
    e.python = json.at("python").get<std::string>();
    e.probe_dir = json.at("probe_dir").get<std::string>();
    e.grace_s = json.at("grace_s").get<double>();
    e.mem_limit_bytes = json.at("mem_limit_bytes").get<int64_t>();
    e.mem_limit_method = json.at("mem_limit_method").get<std::string>();
    e.profile = json.value("profile", "");  // a plan stored before --profile: none
    e.stack = json.value("stack", "");      // a plan stored before stacks: none named
    return e;
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(fmt::format("test spec: bad 'execution': {}", e.what()));
  }
}

nlohmann::json ParseObject(std::string_view text, bool* ok) {
  nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  *ok = json.is_object();
  return json;
}

}  // namespace

absl::StatusOr<std::string> TestSpecToJson(const TestSpec& spec) {
  return Dump(TestSpecJson(spec), spec);
}

absl::StatusOr<std::string> PlannedTestToJson(const ResolvedTest& test) {
  nlohmann::ordered_json json = TestSpecJson(test.spec);
  if (test.execution.has_value())
    json[std::string(kExecutionKey)] = ExecutionObject(*test.execution);
  return Dump(json, test.spec);
}

absl::StatusOr<ResolvedTest> PlannedTestFromJson(std::string_view text) {
  bool ok = false;
  const nlohmann::json json = ParseObject(text, &ok);
  if (!ok)
    return absl::InvalidArgumentError(fmt::format("test spec is not a JSON object: {}", text));
  absl::StatusOr<TestSpec> spec = SpecFromObject(json, kExecutionKey);
  if (!spec.ok()) return spec.status();
  ResolvedTest test{*std::move(spec), std::nullopt};
  if (auto it = json.find(kExecutionKey); it != json.end()) {
    absl::StatusOr<TestExecution> execution = ExecutionFromObject(*it);
    if (!execution.ok()) return execution.status();
    test.execution = *std::move(execution);
  }
  return test;
}

absl::StatusOr<TestSpec> TestSpecFromJson(std::string_view text) {
  bool ok = false;
  const nlohmann::json json = ParseObject(text, &ok);
  if (!ok)
    return absl::InvalidArgumentError(fmt::format("test spec is not a JSON object: {}", text));
  return SpecFromObject(json, "");
}

}  // namespace compatlab
