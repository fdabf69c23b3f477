// JSON forms of the typed records, built from the field table of schema.h.
//
// Used where JSON is the storage or wire format: the planned test specs of a
// sweep (planned_tests.spec) and `--format json` output.
#ifndef COMPATLAB_STORE_RECORD_JSON_H_
#define COMPATLAB_STORE_RECORD_JSON_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/records.h"
#include "core/resolved_test.h"
#include "nlohmann/json.hpp"
#include "store/schema.h"

namespace compatlab {

// NULL -> null, numbers -> numbers, text -> string.
nlohmann::ordered_json FieldValueToJson(const FieldValue& value);
// The same for a value read in place (FieldView).
nlohmann::ordered_json FieldViewToJson(const FieldView& value);

// A list field's value (a curve) as a JSON array: null when the text is empty
// (not measured); a text that does not parse as the list stays a string.
nlohmann::ordered_json ListFieldJson(const FieldDef& field, const FieldValue& value);

// One object with every result field (schema.h names, in schema order).
// kind_params stays canonical JSON text, as the schema types it; list fields
// (curves) are JSON arrays (ListFieldJson).
nlohmann::ordered_json RunRecordToJson(const RunRecord& record);

// The TestSpec as a JSON object: its field-table fields (group kSpec) in
// table order, with kind_params as a nested object of strings; `ranks` only when it
// is not 1 (so a one-rank plan's JSON and plan id are those of older versions).
nlohmann::ordered_json TestSpecJson(const TestSpec& spec);
// TestSpecJson as text: compact, one line. InvalidArgument when a string is
// not valid UTF-8.
absl::StatusOr<std::string> TestSpecToJson(const TestSpec& spec);

// Inverse of TestSpecToJson. A missing key keeps TestSpec's default (so a spec
// written before a field existed still reads); an unknown key, a value of the
// wrong type, or text that is not a JSON object is InvalidArgument.
absl::StatusOr<TestSpec> TestSpecFromJson(std::string_view json);

// A planned test as stored in planned_tests.spec: the TestSpecToJson object,
// plus, when the test has them, its execution settings under "execution"
// (doc/results-schema.md, "Planned tests").
absl::StatusOr<std::string> PlannedTestToJson(const ResolvedTest& test);

// Inverse of PlannedTestToJson. A spec without "execution" (stored by an
// older compatlab) reads with `execution` unset; a bad "execution" object is
// InvalidArgument, as are the errors of TestSpecFromJson.
absl::StatusOr<ResolvedTest> PlannedTestFromJson(std::string_view json);

}  // namespace compatlab

#endif  // COMPATLAB_STORE_RECORD_JSON_H_
