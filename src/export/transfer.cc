#include "export/transfer.h"

#include "util/status.h"

namespace compatlab {

absl::StatusOr<ExportSummary> ExportStore(const ExportOptions& options) {
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options.db, OpenMode::kReadOnly);
  if (!store.ok()) return Recode(store.status(), absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<std::vector<RunRecord>> runs = (*store)->QueryRuns(options.filter);
  if (!runs.ok()) return Recode(runs.status(), absl::StatusCode::kInternal);
  ExportSummary summary;
  if (runs->empty()) return summary;
  absl::StatusOr<std::vector<ExportedFile>> files = ExportRuns(*runs, options.dir);
  if (!files.ok()) return Recode(files.status(), absl::StatusCode::kInternal);
  summary.runs = static_cast<int64_t>(runs->size());
  summary.files = *std::move(files);
  return summary;
}

absl::StatusOr<ImportResult> ImportIntoStore(const ImportOptions& options) {
  absl::StatusOr<std::vector<std::filesystem::path>> files = CollectParquetFiles(options.paths);
  if (!files.ok()) return files.status();
  if (files->empty()) return absl::InvalidArgumentError("no .parquet files under the given paths");
  std::unique_ptr<Store> store;
  auto open_store = [&options, &store]() -> absl::StatusOr<Store*> {
    absl::StatusOr<std::unique_ptr<Store>> opened =
        Store::Open(options.db, OpenMode::kReadWriteCreate);
    if (!opened.ok()) return Recode(opened.status(), absl::StatusCode::kFailedPrecondition);
    store = *std::move(opened);
    return store.get();
  };
  absl::StatusOr<ImportResult> result = ImportFiles(open_store, *files, options.args);
  if (!result.ok() && store != nullptr) {  // the merge failed
    const absl::StatusCode code = result.status().code();
    const bool conflict =
        code == absl::StatusCode::kAlreadyExists || code == absl::StatusCode::kInvalidArgument;
    return absl::Status(conflict ? code : absl::StatusCode::kInternal,
                        std::string(result.status().message()) + "; nothing imported");
  }
  return result;
}

}  // namespace compatlab
