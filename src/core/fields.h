// The result fields: the single source of truth for what one stored run holds.
//
// Every column of the `runs` table and of the Parquet export, every key of
// `--format json`, every row of the field tables in doc/results-schema.md and
// doc/dataset.md, and every key the test child may report in its result
// object (doc/worker-protocol.md) comes from ResultFields(), in its order.
// Tests fail when one of them disagrees with it (SchemaDocTest,
// DatasetDocTest, ProtocolTest), and tests/e2e/test_field_matrix.py fails when
// a passing run leaves a field empty that the field's fill rules require.
// `compatlab fields` prints the table.
//
// To add a field (the recipe; a probe metric needs nothing else):
//   1. its member in core/records.h (RunResult for a result);
//   2. one entry at the end of MakeResultFields() (fields.cc) under the new
//      schema version: Member(name, unit, description, accessor); wrapped in
//      Metric() when the test child reports it under its name (the protocol
//      parser then reads it; a key no field has is a harness_error); with the
//      fill rules of the passing runs that must fill it (FillRule);
//   3. kSchemaVersion bumped once per new version: the store's migration adds
//      the column and older Parquet files import with it NULL, both generated
//      from this table (store/migrations.cc, export/parquet_runs.cc);
//   4. its rows in doc/results-schema.md and doc/dataset.md, its metric key in
//      doc/worker-protocol.md, a non-default value in test::FullRun
//      (store/testing.h; SchemaTest checks that every field has one);
//   5. the probe reports it (probe/compatlab_probe).
#ifndef COMPATLAB_CORE_FIELDS_H_
#define COMPATLAB_CORE_FIELDS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/records.h"
#include "nlohmann/json_fwd.hpp"

namespace compatlab {

// The schema version this build reads and writes: PRAGMA user_version of a
// store, the version key of a Parquet file (doc/dataset.md).
inline constexpr int kSchemaVersion = 30;
// The schema versions that add no field: from kTypedListsVersion on Parquet
// files hold the curves as typed list columns, from kTypedLoadDistsVersion on
// also kind load's latency distributions (doc/dataset.md, "List columns");
// older files hold them as JSON text. FieldDef::list_typed_since says which.
// From kKeyValueListsVersion on they hold kind_params as a list of key/value
// structs, which every reader takes (`datasets` takes no map column); older
// files as map<string, string>.
inline constexpr int kTypedListsVersion = 15;
inline constexpr int kTypedLoadDistsVersion = 18;
inline constexpr int kKeyValueListsVersion = 20;
// The schema version from which a sweep records its plan's id, its shard and
// the shard count (sweeps.plan_id, shard, shards; doc/results-schema.md).
inline constexpr int kShardedSweepsVersion = 21;
// The schema version that adds op coverage: the op_sweeps and op_results tables
// (`compatlab ops`, doc/ops.md); it adds no result field.
inline constexpr int kOpCoverageVersion = 26;

// How a field is stored. Matches SQLite's STRICT column types.
enum class FieldType { kText, kInteger, kReal };

// A list field (a curve): JSON array text in the store (RunResult keeps the
// text), a JSON array in `--format json` and the HTTP API, a typed Arrow list
// column in Parquet (doc/dataset.md, "List columns"). At most kMaxListElements
// elements (core/limits.h).
enum class ListKind {
  kNone,           // not a list
  kReals,          // [x, ...]: list<double>; null where the value was not finite
  kRealPoints,     // [[position, x], ...]: list<struct<position: int64, value: double>>
  kIntegerPoints,  // [[position, n], ...]: list<struct<position: int64, value: int64>>
};

// A parsed list field. kReals fills `reals`; the points kinds fill `positions`
// and, beside them, `reals` (kRealPoints) or `integers` (kIntegerPoints).
struct ListValue {
  std::vector<int64_t> positions;
  std::vector<std::optional<double>> reals;
  std::vector<int64_t> integers;
};

// One field value. std::monostate is SQL NULL (only for nullable fields).
using FieldValue = std::variant<std::monostate, int64_t, double, std::string>;
// A FieldValue read in place: text is a view into its reader's buffer, valid
// only as long as its reader says (for readers that pass values straight on).
using FieldView = std::variant<std::monostate, int64_t, double, std::string_view>;

// Which part of a RunRecord a field belongs to.
enum class FieldGroup {
  kRow,      // run_id, sweep_id, test_id
  kSpec,     // RunRecord::spec (the TestSpec)
  kResult,   // RunRecord::result (the RunResult)
  kContext,  // where and when it ran
};

// Where a test child reports a field in its result object
// (doc/worker-protocol.md, "The result object"). ParseChildResult reads every
// field with a section other than kNone through the field's setter.
enum class ChildSection {
  kNone,     // the child does not report it (the plan's, the supervisor's, the record's)
  kTop,      // a key of the result object itself (status_detail, error_type, ...)
  kMetrics,  // a key of its "metrics" object: the field's name
  kStack,    // a key of its "stack" object (torch_version, ...)
};

// The conditions a FillRule can add to kind and mode; each names a fact of the
// stored row (doc/results-schema.md, "The fill matrix").
enum class FillWhen {
  kCompared,     // the run was compared with the CPU reference: acc_rule is not empty
  kTokenInputs,  // the model's inputs are token ids (text models)
  kMultiStep,    // train with more than one step (kind_params steps, default 3)
  kDiverged,     // generate: a new token differs from the reference's (gen_first_divergence set)
  kAudited,      // the fallback audit ran: fallback_audit is audited (targets other than cpu)
  kDevice,       // a target with device memory statistics (not cpu)
  kWarm,         // a warm rerun ran (--warm in compile mode): warm_state is not empty
  kCpuInductor,  // compiled with inductor on the cpu target: backend is "inductor", target cpu
  kServer,       // load: the server scenario (kind_params scenario is server)
  kDynamic,      // a dynamic-shapes test: dynamic is not empty (schema 29)
};

// "compared", "token_inputs", ...: the name of a condition.
std::string_view FillWhenName(FillWhen when);
// Every condition, in declaration order.
const std::vector<FillWhen>& AllFillWhens();

// One rule of a field's fill matrix: every passing run of one of `kinds` in
// one of `modes` for which every condition of `when` holds must fill the
// field (not NULL; not empty for text).
struct FillRule {
  std::vector<std::string_view> kinds;  // "forward", "generate", "train", "load"
  std::vector<std::string_view> modes;  // "eager", "compile", "export"
  std::vector<FillWhen> when;           // empty: always
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

  // Where the child reports it, and its key there (ParseChildResult).
  ChildSection child = ChildSection::kNone;
  std::string_view child_key = {};
  // Which passing runs must fill it (`compatlab fields`, the fill-matrix
  // test); empty: none must (a fact of some runs only, or always set).
  std::vector<FillRule> fill = {};
  // Long text (up to 64 KiB) that lists of runs leave out (Store::RunsByRowid
  // without outputs, serve's run lists); a single run has it.
  bool bulky = false;
  // A curve: what its JSON text holds (ParseListText); kNone for any other field.
  ListKind list = ListKind::kNone;
  // A list field: the schema version from which Parquet files hold it as a
  // typed list column (a file of an older version: JSON text in a string column).
  int list_typed_since = 0;
};

// Every result field, in column order. The vector lives for the whole program.
const std::vector<FieldDef>& ResultFields();

// The field called `name`, or nullptr.
const FieldDef* FindResultField(std::string_view name);

// The list `text` of list field `field` (not empty): a JSON array of the
// field's ListKind, at most kMaxListElements elements, every number finite,
// positions >= 0 and integers. Python's NaN, Infinity and -Infinity (older
// stores' losses) read as null elements of kReals. InvalidArgument naming the
// field otherwise.
absl::StatusOr<ListValue> ParseListText(const FieldDef& field, std::string_view text);
// The number of elements of `value`.
size_t ListSize(const ListValue& value);
// `value` as a JSON array (null elements for missing reals).
nlohmann::ordered_json ListJson(const FieldDef& field, const ListValue& value);
// ListJson's compact text: what the store keeps.
std::string ListText(const FieldDef& field, const ListValue& value);
// "list<double>", ...: the type column of doc/dataset.md for a list field.
std::string_view ListKindName(ListKind kind);

// "text", "integer", "real", followed by " or null" when nullable: the type
// column of doc/results-schema.md.
std::string DocTypeName(const FieldDef& field);

// kind_params as canonical JSON text: an object with sorted keys and string
// values, no whitespace ("{}" when empty). Stable: equal maps give equal text.
std::string KindParamsToJson(const std::map<std::string, std::string>& kind_params);
// Inverse of KindParamsToJson. InvalidArgument unless `json` is an object
// whose values are all strings.
absl::StatusOr<std::map<std::string, std::string>> KindParamsFromJson(std::string_view json);
// The same for a parsed JSON value.
absl::StatusOr<std::map<std::string, std::string>> KindParamsFromJsonValue(
    const nlohmann::json& value);

}  // namespace compatlab

#endif  // COMPATLAB_CORE_FIELDS_H_
