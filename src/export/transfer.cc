#include "export/transfer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <memory>
#include <utility>

#include "fmt/format.h"
#include "util/hash.h"
#include "util/status.h"

namespace compatlab {
namespace {

// The target store of an import. A store that exists is opened; a new one is
// created under a temporary name beside it and only appears under its name
// once the import succeeded (Commit): an import into a new store that fails,
// a full disk included, leaves nothing behind.
class ImportTarget {
 public:
  explicit ImportTarget(std::filesystem::path db) : db_(std::move(db)) {}
  ImportTarget(const ImportTarget&) = delete;
  ImportTarget& operator=(const ImportTarget&) = delete;
  ~ImportTarget() {
    store_.reset();
    if (!temporary_.empty()) RemoveTemporary();
  }

  absl::StatusOr<Store*> Open() {
    if (absl::Status s = CheckStorePath(db_); !s.ok()) return s;
    std::error_code ec;
    std::filesystem::path path = db_;
    if (!std::filesystem::exists(db_, ec)) {
      const std::filesystem::path dir = db_.has_parent_path() ? db_.parent_path() : ".";
      temporary_ = dir / ("." + db_.filename().string() + ".import-" + RandomHex(6));
      path = temporary_;
    }
    absl::StatusOr<std::unique_ptr<Store>> opened = Store::Open(path, OpenMode::kReadWriteCreate);
    if (!opened.ok()) {
      absl::Status status = Recode(opened.status(), absl::StatusCode::kFailedPrecondition);
      if (temporary_.empty()) return status;
      return absl::Status(status.code(),
                          fmt::format("{}: {}", db_.string(), std::string(status.message())));
    }
    store_ = *std::move(opened);
    return store_.get();
  }

  // After a successful merge: a new store takes its name (never replacing a
  // file that appeared there meanwhile).
  absl::Status Commit() {
    if (temporary_.empty()) return absl::OkStatus();
    store_.reset();  // closes it: the WAL is checkpointed into the file and removed
    if (::link(temporary_.c_str(), db_.c_str()) != 0) {
      return absl::InternalError(fmt::format("cannot create {}: {}; nothing imported", db_.string(),
                                             std::strerror(errno)));
    }
    RemoveTemporary();
    return absl::OkStatus();
  }

 private:
  void RemoveTemporary() {
    std::error_code ignored;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
      std::filesystem::remove(temporary_.string() + suffix, ignored);
    }
    temporary_.clear();
  }

  const std::filesystem::path db_;
  std::filesystem::path temporary_;  // "" unless a new store is being made
  std::unique_ptr<Store> store_;
};

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
  ImportTarget target(options.db);
  bool opened = false;
  auto open_store = [&target, &opened]() -> absl::StatusOr<Store*> {
    absl::StatusOr<Store*> store = target.Open();
    opened = store.ok();
    return store;
  };
  absl::StatusOr<ImportResult> result = ImportFiles(open_store, *files, options.args);
  if (!result.ok() && opened) return MergeFailed(result.status());
  if (result.ok() && result->rejected.empty()) {
    if (absl::Status s = target.Commit(); !s.ok()) return s;
  }
  return result;
}

absl::StatusOr<MergeStats> ImportStoresIntoStore(const ImportOptions& options) {
  absl::StatusOr<std::vector<RunRecord>> runs = ReadStores(options.paths, options.db);
  if (!runs.ok()) return runs.status();
  ImportTarget target(options.db);
  absl::StatusOr<Store*> store = target.Open();
  if (!store.ok()) return store.status();
  absl::StatusOr<MergeStats> merged = (*store)->MergeRuns(*runs, options.args);
  if (!merged.ok()) return MergeFailed(merged.status());
  if (absl::Status s = target.Commit(); !s.ok()) return s;
  return merged;
}

}  // namespace compatlab
