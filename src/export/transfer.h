// `compatlab export` and `compatlab import` as use cases: a store's runs
// written as the Parquet dataset, and such files merged into a store
// (doc/dataset.md).
#ifndef COMPATLAB_EXPORT_TRANSFER_H_
#define COMPATLAB_EXPORT_TRANSFER_H_

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "export/dataset.h"
#include "store/store.h"

namespace compatlab {

struct ExportOptions {
  std::filesystem::path db;
  RunFilter filter;
  std::filesystem::path dir;  // the dataset's directory (created if missing)
};

struct ExportSummary {
  int64_t runs = 0;                 // runs matched and written; 0 = nothing written
  std::vector<ExportedFile> files;  // sorted by path
};

// The runs options.filter selects, written under options.dir (ExportRuns).
// Errors: InvalidArgument when options.dir cannot be a directory
// (CheckExportDir, before the store is opened); FailedPrecondition when the
// store cannot be opened; Internal when it cannot be read or a file cannot
// be written.
absl::StatusOr<ExportSummary> ExportStore(const ExportOptions& options);

struct ImportOptions {
  std::filesystem::path db;                  // created if missing
  std::vector<std::filesystem::path> paths;  // Parquet files, or directories of them
  std::string args;                          // recorded as the args of the sweeps it creates
};

// Every file under options.paths read and checked before the store is even
// opened: with a rejected file (result.rejected not empty) nothing is
// imported and no store is created. Errors: NotFound for a path that does not
// exist; InvalidArgument when there is no .parquet file; FailedPrecondition
// when the store cannot be opened; the merge's error (AlreadyExists or
// InvalidArgument for a conflict with the store, else Internal) with
// "; nothing imported" appended.
absl::StatusOr<ImportResult> ImportIntoStore(const ImportOptions& options);

// `import --from-store`: every run of the compatlab stores at options.paths
// (SQLite files of this schema version, e.g. the one scripts/verify-cuda
// brings back from a machine whose compatlab has no Arrow), merged into
// options.db by the same rules as a Parquet import. Every source is opened
// immutable (OpenMode::kReadOnlyImmutable: never written) and staged before
// the target is opened, so a bad source leaves no new store. Errors:
// InvalidArgument when a source is options.db itself; FailedPrecondition when
// a source or the target cannot be opened; Internal when a source cannot be
// read; the merge's error as for ImportIntoStore.
absl::StatusOr<MergeStats> ImportStoresIntoStore(const ImportOptions& options);

struct MergeOptions {
  std::filesystem::path out;                  // created if missing
  std::vector<std::filesystem::path> inputs;  // shard stores
  bool allow_mixed = false;                   // stores of different plans may be merged
  std::string args;                           // recorded as the args of sweeps made from runs
};

// `compatlab merge OUT IN...`: the shard stores `inputs` joined into `out`
// (doc/scale-out.md, "Merging"), each source read as `import --from-store`
// reads one (immutable, bounded, staged before `out` is opened), with every
// sweep's record (plan id, shard) and whole plan, so that `compatlab sweeps`
// tells what a shard did not store. Idempotent: a run already in `out` (or
// in an earlier source) is kept once when its content is the same, and
// refused (InvalidArgument: "run id R ... different content") when not; two
// runs of one test in different sweeps (a shard retried from scratch) are
// both kept, the newer the current one (query/current.h). InvalidArgument
// when the sweeps of the sources and of `out` are of more than one plan
// (sweeps.plan_id) and not `allow_mixed`. Other errors as ImportStoresIntoStore.
absl::StatusOr<MergeStats> MergeStores(const MergeOptions& options);

}  // namespace compatlab

#endif  // COMPATLAB_EXPORT_TRANSFER_H_
