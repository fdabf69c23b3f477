// Stored runs as a Parquet file, and back: the file format of the published
// dataset (doc/dataset.md).
//
// Columns are the result fields of store/schema.h: the same names in the same
// order, typed by FieldType:
//   text      -> string (UTF-8)
//   integer   -> int64
//   real      -> double
//   started_at, finished_at (unit "UTC ISO 8601") -> timestamp[ms, tz=UTC]
//   kind_params -> list<struct<key: string, value: string>>, sorted by key
//                  (map<string, string> before schema version 20, still read)
// A nullable field is a nullable column; a NULL is "not measured". Text that
// is not valid UTF-8 (a cut output tail) is written with U+FFFD in place of
// each ill-formed sequence.
//
// Output is deterministic: the same runs, in any order, give the same bytes
// (rows sorted by model_id, test_id, started_at, run_id; fixed writer
// properties; the only "created by" is the library's version string).
// Row groups hold at most kRowGroupMaxBytes of row data and kRowGroupMaxRows
// rows, so that a reader that reads a row group whole (the Hub's dataset
// viewer scans at most about 300 MB) can; the page index is written.
#ifndef COMPATLAB_EXPORT_PARQUET_RUNS_H_
#define COMPATLAB_EXPORT_PARQUET_RUNS_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/limits.h"
#include "core/records.h"

namespace arrow {
class MemoryPool;
class Schema;
namespace io {
class RandomAccessFile;
}
}  // namespace arrow

namespace compatlab {

// Key of the file's key-value metadata holding the store schema version.
inline constexpr std::string_view kParquetSchemaVersionKey = "compatlab.schema_version";

// The bounds of one row group: its rows' bytes before compression (as
// RowGroupLengths counts them) and its rows.
inline constexpr int64_t kRowGroupMaxBytes = int64_t{64} << 20;
inline constexpr int64_t kRowGroupMaxRows = 100'000;

// The Arrow schema of an exported file (column names, types, nullability and
// the schema-version metadata). Lives for the whole program.
const std::shared_ptr<arrow::Schema>& RunsArrowSchema();

// Sorts `runs` in the file's row order: model_id, test_id, started_at, run_id.
void SortRunsForExport(std::vector<RunRecord>& runs);

// The number of rows of each row group of a file of `runs` (in file order):
// a group ends before the run that would take it past `max_bytes` (its text
// bytes and 8 per other value) or past `max_rows`; a run over `max_bytes`
// alone is a group of its own. Empty for no runs.
std::vector<int64_t> RowGroupLengths(const std::vector<RunRecord>& runs, int64_t max_bytes,
                                     int64_t max_rows);

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

// Where a ParquetRunReader's memory comes from: its pool draws from `base`
// (null: arrow::system_memory_pool()) and holds at most `cap` bytes at once.
// Readers of imports use the defaults; tests inject a failing allocator or a
// small cap.
struct ParquetReaderMemory {
  arrow::MemoryPool* base = nullptr;
  int64_t cap = kMaxParquetReaderBytes;
};

// The runs of one Parquet file read batch by batch, each run checked as
// RunsFromParquet checks it (but for a run_id twice in the file, which the
// caller looks for). The file is read as needed, never whole: what is held
// at once is one batch of kParquetBatchRows rows and the reader's pool capped
// at kMaxParquetReaderBytes (core/limits.h), whatever the number of runs.
class ParquetRunReader {
 public:
  // Opens `file` and checks its footer and columns. InvalidArgument
  // "<file>: <what>" for a bad file; ResourceExhausted when an allocation
  // failed (out of memory: never reported as bad data).
  static absl::StatusOr<std::unique_ptr<ParquetRunReader>> Open(const std::filesystem::path& file);
  // The same over `input`, named `name` in messages, with its memory from `memory`.
  static absl::StatusOr<std::unique_ptr<ParquetRunReader>> FromInput(
      std::shared_ptr<arrow::io::RandomAccessFile> input, const std::string& name,
      ParquetReaderMemory memory = {});
  ~ParquetRunReader();
  ParquetRunReader(const ParquetRunReader&) = delete;
  ParquetRunReader& operator=(const ParquetRunReader&) = delete;

  // Replaces `batch` with the next runs; empty at the end of the file.
  // Errors as Open's.
  absl::Status Next(std::vector<RunRecord>& batch);
  // Rows read so far: the file row of the next batch's first run.
  int64_t rows_read() const;

 private:
  struct State;
  explicit ParquetRunReader(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// The timestamp text of the store as milliseconds since the epoch, and back.
// Only the canonical form "YYYY-MM-DDTHH:MM:SS.mmmZ" (years 0000-9999) parses.
absl::StatusOr<int64_t> ParseTimestampMillis(std::string_view text);
std::string FormatTimestampMillis(int64_t millis);

}  // namespace compatlab

#endif  // COMPATLAB_EXPORT_PARQUET_RUNS_H_
