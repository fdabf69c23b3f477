// `compatlab query` (and `runs`) as a use case: stored runs, filtered, sorted
// and limited, rendered as a table (with the knowledge base's footer), JSON or
// CSV.
#ifndef COMPATLAB_QUERY_LIST_RUNS_H_
#define COMPATLAB_QUERY_LIST_RUNS_H_

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"
#include "store/store.h"

namespace compatlab {

enum class RunsFormat { kTable, kJson, kCsv };

struct ListRunsOptions {
  std::filesystem::path db;
  RunFilter filter;  // with its sort and limit
  RunsFormat format = RunsFormat::kTable;
  // The table's known-errors footer comes from this file; without a usable
  // one the table stands alone.
  std::filesystem::path kb_path;
};

// The text to print: FormatRunsTable (+ FormatKnownErrorsFooter),
// FormatRunsJson plus a newline, or FormatRunsCsv. Errors: FailedPrecondition
// when the store cannot be opened, Internal when it cannot be read.
absl::StatusOr<std::string> ListRuns(const ListRunsOptions& options);

}  // namespace compatlab

#endif  // COMPATLAB_QUERY_LIST_RUNS_H_
