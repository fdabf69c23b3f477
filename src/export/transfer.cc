#include "export/transfer.h"

#include <iterator>

#include "fmt/format.h"
#include "util/status.h"

namespace compatlab {
namespace {

// The target store of an import, created if missing.
absl::StatusOr<std::unique_ptr<Store>> OpenTarget(const std::filesystem::path& db) {
  absl::StatusOr<std::unique_ptr<Store>> opened = Store::Open(db, OpenMode::kReadWriteCreate);
  if (!opened.ok()) return Recode(opened.status(), absl::StatusCode::kFailedPrecondition);
  return opened;
}

// A failed merge as an import reports it: a conflict with the store keeps its
// code (bad input), anything else is Internal; nothing was imported either way.
absl::Status MergeFailed(const absl::Status& status) {
  const absl::StatusCode code = status.code();
  const bool conflict =
      code == absl::StatusCode::kAlreadyExists || code == absl::StatusCode::kInvalidArgument;
  return absl::Status(conflict ? code : absl::StatusCode::kInternal,
                      std::string(status.message()) + "; nothing imported");
}

// Every run of the stores at `sources`, each opened read-only.
absl::StatusOr<std::vector<RunRecord>> ReadStores(const std::vector<std::filesystem::path>& sources,
                                                  const std::filesystem::path& target) {
  std::vector<RunRecord> runs;
  for (const std::filesystem::path& source : sources) {
    std::error_code ec;
    if (std::filesystem::exists(target, ec) && std::filesystem::equivalent(source, target, ec)) {
      return absl::InvalidArgumentError(
          fmt::format("{} is the target store itself", source.string()));
    }
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(source, OpenMode::kReadOnly);
    if (!store.ok()) return Recode(store.status(), absl::StatusCode::kFailedPrecondition);
    absl::StatusOr<std::vector<RunRecord>> read = (*store)->QueryRuns(RunFilter{});
    if (!read.ok()) return Recode(read.status(), absl::StatusCode::kInternal);
    runs.insert(runs.end(), std::make_move_iterator(read->begin()),
                std::make_move_iterator(read->end()));
  }
  return runs;
}

}  // namespace

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
    absl::StatusOr<std::unique_ptr<Store>> opened = OpenTarget(options.db);
    if (!opened.ok()) return opened.status();
    store = *std::move(opened);
    return store.get();
  };
  absl::StatusOr<ImportResult> result = ImportFiles(open_store, *files, options.args);
  if (!result.ok() && store != nullptr) return MergeFailed(result.status());
  return result;
}

absl::StatusOr<MergeStats> ImportStoresIntoStore(const ImportOptions& options) {
  absl::StatusOr<std::vector<RunRecord>> runs = ReadStores(options.paths, options.db);
  if (!runs.ok()) return runs.status();
  absl::StatusOr<std::unique_ptr<Store>> store = OpenTarget(options.db);
  if (!store.ok()) return store.status();
  absl::StatusOr<MergeStats> merged = (*store)->MergeRuns(*runs, options.args);
  if (!merged.ok()) return MergeFailed(merged.status());
  return merged;
}

}  // namespace compatlab
