// The published dataset: stored runs exported as one Parquet file per
// software stack (torch version, transformers version), and such files
// imported into a store. File format: parquet_runs.h; card: doc/dataset.md.
#ifndef COMPATLAB_EXPORT_DATASET_H_
#define COMPATLAB_EXPORT_DATASET_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/records.h"
#include "store/store.h"

namespace compatlab {

// `version` made safe as one path component: every byte outside
// [A-Za-z0-9._+-] becomes '_', "" becomes "unknown", and a leading '.' is
// prefixed with '_' (no hidden files, no "." or "..").
std::string SafePathComponent(std::string_view version);

// Path of a stack's file, relative to the export directory:
// "torch-<torch>/transformers-<transformers>.parquet", each version made safe;
// runs with stack_versions (mode export: a deployment stack's packages, a JSON
// object other than "{}") go to "transformers-<transformers>-stack-<16 hex of
// its SHA-256>.parquet" beside it, one file per target stack.
std::filesystem::path StackFilePath(const std::string& torch_version,
                                    const std::string& transformers_version,
                                    const std::string& stack_versions = "");

struct ExportedFile {
  std::filesystem::path path;  // under the export directory
  int64_t runs = 0;
};

// OK when `dir` can take an export: a directory, or a path that does not
// exist yet and whose nearest existing ancestor is a directory.
// InvalidArgument naming `dir` otherwise (a regular file there or on the way).
absl::Status CheckExportDir(const std::filesystem::path& dir);

// A file written with an export beside its Parquet files (the dataset card).
struct ExtraExportFile {
  std::filesystem::path path;  // relative to the export directory
  std::string bytes;
};

// Writes `runs` under `dir` (created if missing; CheckExportDir first), one file per stack
// (StackFilePath of each run's torch_version and transformers_version), and
// `extra` beside them, each written atomically (a temporary file, then
// rename): a reader never sees a half-written file. A file already there is
// replaced; files of stacks not in `runs` are left alone. Returns the Parquet
// files written, sorted by path.
absl::StatusOr<std::vector<ExportedFile>> ExportRuns(
    const std::vector<RunRecord>& runs, const std::filesystem::path& dir,
    const std::vector<ExtraExportFile>& extra = {});

// The runs' files named by `paths`: a file as given, a directory as every
// "*.parquet" file under it (recursively); sorted and without duplicates. An op
// results file (kOpResultsFileSuffix, parquet_ops.h) is never one of them.
// NotFound for a path that does not exist.
absl::StatusOr<std::vector<std::filesystem::path>> CollectParquetFiles(
    const std::vector<std::filesystem::path>& paths);

struct ImportResult {
  // One error per rejected file ("<path>: <why>"). When not empty, nothing
  // was imported.
  std::vector<absl::Status> rejected;
  int64_t files = 0;       // files read
  int64_t runs_read = 0;   // runs in them
  MergeStats merged;       // what the store did with them
  int64_t traces = 0;      // profile traces brought into the store's artifact directory
  int64_t op_results = 0;  // op results added (doc/ops.md), from op results files
};

// Imports `files` into `store`. Every file is read batch by batch
// (ParquetRunReader) into a staging store beside `store` (ImportStaging),
// where each file is checked whole (its runs, a run_id in one file only, the
// limits of doc/limits.md across the files); if any is rejected, nothing is
// written. Otherwise the staged runs are merged in one transaction
// (Store::MergeRunBatches: idempotent by run_id). `args` is recorded as the
// args of the sweeps it creates. Memory does not grow with the number of
// runs. Errors: the store's (then nothing was written either);
// ResourceExhausted when the process ran out of memory (never a rejection).
absl::StatusOr<ImportResult> ImportFiles(Store& store,
                                         const std::vector<std::filesystem::path>& files,
                                         const std::string& args);
// The same with the store given by `open_store`, called only once every file
// is accepted (so a rejected file leaves no new store behind); its error is
// returned as it is. The staging store is made in `staging_dir`.
absl::StatusOr<ImportResult> ImportFiles(const std::function<absl::StatusOr<Store*>()>& open_store,
                                         const std::vector<std::filesystem::path>& files,
                                         const std::string& args,
                                         const std::filesystem::path& staging_dir);

}  // namespace compatlab

#endif  // COMPATLAB_EXPORT_DATASET_H_
