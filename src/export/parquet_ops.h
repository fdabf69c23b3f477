// Op coverage results as Parquet (doc/dataset.md, "Op coverage"): one file of
// op_results rows, each with its op sweep's columns, and back, bounded
// (doc/limits.md). `compatlab export` writes it beside the runs' files,
// `compatlab import` reads it back.
#ifndef COMPATLAB_EXPORT_PARQUET_OPS_H_
#define COMPATLAB_EXPORT_PARQUET_OPS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/op_records.h"

namespace compatlab {

// The file name suffix that tells an op results file from a runs file.
inline constexpr std::string_view kOpResultsFileSuffix = ".ops.parquet";
// Key of the file's metadata naming its table.
inline constexpr std::string_view kParquetTableKey = "compatlab.table";
// An import's bounds on op results files: each file's bytes and all rows together.
inline constexpr int64_t kMaxImportOpFileBytes = int64_t{256} << 20;
inline constexpr int64_t kMaxImportOpResults = 2'000'000;

// One op sweep and its results.
struct OpSweepResults {
  OpSweepInfo sweep;
  std::vector<OpResult> results;
};

// One Parquet file of `sweeps`' results (rows by op sweep id, op, variant, dtype).
absl::StatusOr<std::string> OpResultsToParquet(const std::vector<OpSweepResults>& sweeps);

// The op sweeps and results of a file written by OpResultsToParquet, checked
// whole first: the table key, every column by name and type, no NULL where
// none belongs, known statuses and skip sources, op keys (CheckOpKey), text at
// most kMaxImportTextBytes, finite figures, non-negative counts, one op sweep's
// columns the same on each of its rows, at most `max_rows` rows, no case
// twice. InvalidArgument "<name>: <what>" otherwise.
absl::StatusOr<std::vector<OpSweepResults>> OpResultsFromParquet(std::string_view bytes,
                                                                 const std::string& name,
                                                                 int64_t max_rows);

}  // namespace compatlab

#endif  // COMPATLAB_EXPORT_PARQUET_OPS_H_
