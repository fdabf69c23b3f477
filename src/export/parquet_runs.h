// Stored runs as a Parquet file, and back: the file format of the published
// dataset (doc/dataset.md).
//
// Columns are the result fields of store/schema.h: the same names in the same
// order, typed by FieldType:
//   text      -> string (UTF-8)
//   integer   -> int64
//   real      -> double
//   started_at, finished_at (unit "UTC ISO 8601") -> timestamp[ms, tz=UTC]
//   kind_params -> map<string, string> (its canonical JSON text as a map)
// A nullable field is a nullable column; a NULL is "not measured". Text that
// is not valid UTF-8 (a cut output tail) is written with U+FFFD in place of
// each ill-formed sequence.
//
// Output is deterministic: the same runs, in any order, give the same bytes
// (rows sorted by model_id, test_id, started_at, run_id; fixed writer
// properties; the only "created by" is the library's version string).
#ifndef COMPATLAB_EXPORT_PARQUET_RUNS_H_
#define COMPATLAB_EXPORT_PARQUET_RUNS_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/records.h"

namespace arrow {
class Schema;
}

namespace compatlab {

// Key of the file's key-value metadata holding the store schema version.
inline constexpr std::string_view kParquetSchemaVersionKey = "compatlab.schema_version";

// The Arrow schema of an exported file (column names, types, nullability and
// the schema-version metadata). Lives for the whole program.
const std::shared_ptr<arrow::Schema>& RunsArrowSchema();

// Sorts `runs` in the file's row order: model_id, test_id, started_at, run_id.
void SortRunsForExport(std::vector<RunRecord>& runs);

// One Parquet file holding `runs` (sorted as SortRunsForExport does).
// InvalidArgument when a started_at/finished_at is not a canonical timestamp
// ("2026-11-30T02:24:35.123Z"), naming the run.
absl::StatusOr<std::string> RunsToParquet(std::vector<RunRecord> runs);

// Every run of a Parquet file `bytes` (named `name` in messages), in file
// order. The whole file is checked before anything is returned: the columns
// (every result field by name with its type, no other column, a schema
// version this build knows; string columns may also be large_string), every
// value (no NULL in a non-nullable field, a known status, a canonical
// kind_params map), and each row's test_id against the hash of its fields.
// InvalidArgument with one line "<name>: <what>" otherwise.
absl::StatusOr<std::vector<RunRecord>> RunsFromParquet(std::string_view bytes,
                                                       const std::string& name);

// The timestamp text of the store as milliseconds since the epoch, and back.
// Only the canonical form "YYYY-MM-DDTHH:MM:SS.mmmZ" (years 0000-9999) parses.
absl::StatusOr<int64_t> ParseTimestampMillis(std::string_view text);
std::string FormatTimestampMillis(int64_t millis);

}  // namespace compatlab

#endif  // COMPATLAB_EXPORT_PARQUET_RUNS_H_
