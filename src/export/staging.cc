#include "export/staging.h"

#include <utility>
#include <vector>

#include "fmt/format.h"
#include "util/hash.h"

namespace compatlab {
namespace {

// `status` with a leading "<staging>: " of its message replaced by "<source>: ".
absl::Status NameSource(const absl::Status& status, const std::filesystem::path& staging,
                        const std::string& source) {
  if (status.ok()) return status;
  std::string message(status.message());
  const std::string prefix = staging.string() + ": ";
  if (message.starts_with(prefix)) message = source + ": " + message.substr(prefix.size());
  return absl::Status(status.code(), message);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ImportStaging>> ImportStaging::Create(
    const std::filesystem::path& dir) {
  const std::filesystem::path path = (dir.empty() ? std::filesystem::path(".") : dir) /
                                     (".compatlab-import-" + RandomHex(6) + ".db");
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path, OpenMode::kReadWriteCreate);
  if (!store.ok()) {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
      std::error_code ignored;
      std::filesystem::remove(path.string() + suffix, ignored);
    }
    const absl::Status named = NameSource(
        store.status(), path, fmt::format("cannot stage the import in {}", dir.string()));
    return absl::Status(named.code(), std::string(named.message()) + "; nothing imported");
  }
  return std::unique_ptr<ImportStaging>(new ImportStaging(path, *std::move(store)));
}

ImportStaging::~ImportStaging() {
  store_.reset();
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    std::error_code ignored;
    std::filesystem::remove(path_.string() + suffix, ignored);
  }
}

absl::StatusOr<MergeStats> ImportStaging::Stage(const Store::RunBatches& next,
                                                const std::string& source,
                                                const Store::OnStoredRun& on_stored) {
  absl::StatusOr<MergeStats> staged = store_->MergeRunBatches(next, "staged", on_stored);
  if (!staged.ok()) return NameSource(staged.status(), path_, source);
  return staged;
}

absl::StatusOr<MergeStats> ImportStaging::MergeInto(Store& target, const std::string& args,
                                                    const Store::OnStoredRun& on_stored,
                                                    const std::vector<MergedSweep>& sweeps) {
  absl::StatusOr<int64_t> end = store_->NextRunRowid();
  if (!end.ok()) return end.status();
  int64_t rowid = 1;
  return target.MergeRunBatches(
      [this, &rowid, end = *end](std::vector<RunRecord>& batch) -> absl::Status {
        while (batch.empty() && rowid < end) {
          std::vector<int64_t> rowids;
          for (; rowid < end && static_cast<int64_t>(rowids.size()) < kMergeBatchRuns; ++rowid) {
            rowids.push_back(rowid);
          }
          absl::StatusOr<std::vector<RunRecord>> runs = store_->RunsByRowid(rowids, true);
          if (!runs.ok()) return runs.status();
          batch = *std::move(runs);
        }
        return absl::OkStatus();
      },
      args, on_stored, sweeps);
}

}  // namespace compatlab
