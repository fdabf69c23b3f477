// The result fields: the single source of truth for what one stored run holds.
//
// Every column of the `runs` table, every key of `--format json`, and every
// row of the field table in doc/results-schema.md comes from ResultFields(),
// in its order. A test (SchemaDocTest) fails when the document or a freshly
// created store disagrees with it.
//
// To add a field: append a FieldDef with since_version = the new schema
// version, bump kSchemaVersion, add the row to doc/results-schema.md. The
// migration to that version adds the column (migrations.cc).
#ifndef COMPATLAB_STORE_SCHEMA_H_
#define COMPATLAB_STORE_SCHEMA_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/records.h"

namespace compatlab {

// The schema version this build reads and writes (PRAGMA user_version of a store).
inline constexpr int kSchemaVersion = 2;
// The PRAGMA application_id that marks a SQLite file as a compatlab store ("clab").
inline constexpr int32_t kStoreApplicationId = 0x636c6162;

// How a field is stored. Matches SQLite's STRICT column types.
enum class FieldType { kText, kInteger, kReal };

// One field value. std::monostate is SQL NULL (only for nullable fields).
using FieldValue = std::variant<std::monostate, int64_t, double, std::string>;

// Which part of a RunRecord a field belongs to.
enum class FieldGroup {
  kRow,      // run_id, sweep_id, test_id
  kSpec,     // RunRecord::spec (the TestSpec)
  kResult,   // RunRecord::result (the RunResult)
  kContext,  // where and when it ran
};

struct FieldDef {
  std::string_view name;  // column name and JSON key
  FieldGroup group;
  FieldType type;
  bool nullable;                 // NULL means "not measured" / "not applicable"
  std::string_view unit;         // "s", "bytes", "UTC ISO 8601", or "" when unitless
  std::string_view description;  // one sentence, no '|' (it is a markdown table cell)
  int since_version;             // schema version that added the field

  // Reads the field from a record. Never returns monostate for a non-nullable field.
  std::function<FieldValue(const RunRecord&)> get;
  // Writes the field into `record`. InvalidArgument when `value` has the wrong
  // alternative for `type`, is NULL for a non-nullable field, or does not
  // parse (an unknown status name, kind_params that are not a JSON object of
  // strings); `record` is then unchanged.
  std::function<absl::Status(const FieldValue& value, RunRecord& record)> set;
};

// Every result field, in column order. The vector lives for the whole program.
const std::vector<FieldDef>& ResultFields();

// The field called `name`, or nullptr.
const FieldDef* FindResultField(std::string_view name);

// "TEXT", "INTEGER", "REAL": the SQLite column type.
std::string_view SqlTypeName(FieldType type);

// "text", "integer", "real", followed by " or null" when nullable: the type
// column of doc/results-schema.md.
std::string DocTypeName(const FieldDef& field);

// kind_params as canonical JSON text: an object with sorted keys and string
// values, no whitespace ("{}" when empty). Stable: equal maps give equal text.
std::string KindParamsToJson(const std::map<std::string, std::string>& kind_params);
// Inverse of KindParamsToJson. InvalidArgument unless `json` is an object
// whose values are all strings.
absl::StatusOr<std::map<std::string, std::string>> KindParamsFromJson(std::string_view json);

}  // namespace compatlab

#endif  // COMPATLAB_STORE_SCHEMA_H_
