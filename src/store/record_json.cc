#include "store/record_json.h"

#include <limits>
#include <map>
#include <type_traits>
#include <utility>

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

}  // namespace

nlohmann::ordered_json FieldValueToJson(const FieldValue& value) {
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

nlohmann::ordered_json RunRecordToJson(const RunRecord& record) {
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  for (const FieldDef& field : ResultFields()) {
    json[std::string(field.name)] = FieldValueToJson(field.get(record));
  }
  return json;
}

nlohmann::ordered_json TestSpecJson(const TestSpec& spec) {
  RunRecord record;
  record.spec = spec;
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  for (const FieldDef& field : ResultFields()) {
    if (field.group == FieldGroup::kSpec) {
      json[std::string(field.name)] = FieldValueToJson(field.get(record));
    }
  }
  json["kind_params"] = spec.kind_params;  // an object here, not the column's text
  return json;
}

absl::StatusOr<std::string> TestSpecToJson(const TestSpec& spec) {
  try {
    return TestSpecJson(spec).dump();
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(fmt::format("test spec of {}: {}", spec.model_id, e.what()));
  }
}

absl::StatusOr<TestSpec> TestSpecFromJson(std::string_view text) {
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) {
    return absl::InvalidArgumentError(fmt::format("test spec is not a JSON object: {}", text));
  }
  RunRecord record;
  for (const auto& [key, value] : json.items()) {
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

}  // namespace compatlab
