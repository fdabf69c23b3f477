// `compatlab export` and `compatlab import` as use cases: a store's runs
// written as the Parquet dataset, and such files merged into a store
// (doc/dataset.md).
#ifndef COMPATLAB_EXPORT_TRANSFER_H_
#define COMPATLAB_EXPORT_TRANSFER_H_

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/limits.h"
#include "export/dataset.h"
#include "store/store.h"

namespace compatlab {

// Where a dataset carries its runs' profile traces: <dir>/profile_traces/<sha256>.json.gz.
inline constexpr std::string_view kDatasetTraceDir = "profile_traces";

struct ExportOptions {
  std::filesystem::path db;
  RunFilter filter;
  std::filesystem::path dir;  // the dataset's directory (created if missing)
  // `export --publish`: the dataset card (README.md) beside the files, the
  // directory new or empty, every run scrubbed (scrub.h) unless keep_private.
  bool publish = false;
  bool keep_private = false;
  std::string license = "cc-by-4.0";  // the card's license
  // export --traces: the runs' profile traces go with the dataset (kDatasetTraceDir);
  // without it they are left out (the rows keep their digests).
  bool traces = false;
};

struct ExportSummary {
  int64_t runs = 0;                 // runs matched and written; 0 = nothing written
  std::vector<ExportedFile> files;  // sorted by path
  int64_t scrubbed_runs = 0;        // publish: runs whose text the scrubber changed
  int64_t traces = 0;               // profile traces written (--traces)
  // Op coverage (doc/ops.md): every op sweep's results in one file beside the runs'
  // (kOpResultsFileSuffix); none with publish.
  int64_t op_results = 0;
  std::filesystem::path op_results_file;
};

// The runs options.filter selects, written under options.dir (ExportRuns);
// with options.publish scrubbed and with their dataset card.
// Errors: InvalidArgument when options.dir cannot be a directory
// (CheckExportDir, before the store is opened) or, to publish, is not empty;
// FailedPrecondition when the
// store cannot be opened; Internal when it cannot be read or a file cannot
// be written.
absl::StatusOr<ExportSummary> ExportStore(const ExportOptions& options);

struct ImportOptions {
  std::filesystem::path db;                  // created if missing
  std::vector<std::filesystem::path> paths;  // Parquet files, or directories of them
  std::string args;                          // recorded as the args of the sweeps it creates
};

// The profile traces a Parquet import brings (kDatasetTraceDir of each directory given),
// each checked before anything is imported: named <64 hex>.json.gz, at most
// kMaxProfileTraceBytes, gzip, hashing to its name, and `max_total_bytes` in all.
// InvalidArgument naming the first that is not, or the total; the paths of the traces
// otherwise.
absl::StatusOr<std::vector<std::filesystem::path>> CheckDatasetTraces(
    const std::vector<std::filesystem::path>& paths, int64_t max_total_bytes = kMaxImportBytes);

// Every file under options.paths read and checked before the store is even
// opened: with a rejected file (result.rejected not empty) nothing is
// imported and no store is created. Errors: NotFound for a path that does not
// exist; InvalidArgument when there is no .parquet file; FailedPrecondition
// when the store cannot be opened; the merge's error (AlreadyExists or
// InvalidArgument for a conflict with the store, else Internal) with
// "; nothing imported" appended.
// Op results files (kOpResultsFileSuffix, export/parquet_ops.h) are read and checked
// with the runs' files, kMaxImportOpResults rows in all, and merged after the runs
// (Store::MergeOpResults: idempotent by op sweep and case); `ImportResult::op_results`.
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
