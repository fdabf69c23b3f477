// An import's runs held on disk, in a store of their own beside the target,
// while they are read and checked; merged into the target only once every
// source is accepted. Import memory is then one batch of runs, whatever
// their number (doc/limits.md).
#ifndef COMPATLAB_EXPORT_STAGING_H_
#define COMPATLAB_EXPORT_STAGING_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "store/store.h"

namespace compatlab {

class ImportStaging {
 public:
  // A new, empty staging store in `dir` (a hidden file
  // ".compatlab-import-XXXXXXXXXXXX.db", removed with its -wal and -shm when
  // the staging ends). Errors: the store's, naming `dir`.
  static absl::StatusOr<std::unique_ptr<ImportStaging>> Create(const std::filesystem::path& dir);
  ~ImportStaging();
  ImportStaging(const ImportStaging&) = delete;
  ImportStaging& operator=(const ImportStaging&) = delete;

  // Stages the runs `next` gives, in one transaction (Store::MergeRunBatches
  // with `on_stored`): all of them or, on any error, none. Messages name
  // `source`, never the staging file.
  absl::StatusOr<MergeStats> Stage(const Store::RunBatches& next, const std::string& source,
                                   const Store::OnStoredRun& on_stored = nullptr);
  // The staged runs at `rowids` (Store::RunsByRowid, with their outputs).
  absl::StatusOr<std::vector<RunRecord>> StagedRuns(const std::vector<int64_t>& rowids) {
    return store_->RunsByRowid(rowids, true);
  }
  // The rowid the next staged run gets (runs are staged in rowid order).
  absl::StatusOr<int64_t> NextRowid() { return store_->NextRunRowid(); }
  // Every staged run merged into `target` in one transaction, read back
  // kMergeBatchRuns at a time (Store::MergeRunBatches, with `on_stored` and
  // `sweeps`).
  absl::StatusOr<MergeStats> MergeInto(Store& target, const std::string& args,
                                       const Store::OnStoredRun& on_stored = nullptr,
                                       const std::vector<MergedSweep>& sweeps = {});

  static constexpr int64_t kMergeBatchRuns = 256;

 private:
  ImportStaging(std::filesystem::path path, std::unique_ptr<Store> store)
      : path_(std::move(path)), store_(std::move(store)) {}
  const std::filesystem::path path_;
  std::unique_ptr<Store> store_;
};

}  // namespace compatlab

#endif  // COMPATLAB_EXPORT_STAGING_H_
