#include "cli/export.h"

#include <filesystem>
#include <iostream>

#include "cli/common.h"
#include "cli/import_store.h"
#include "export/dataset.h"
#include "fmt/format.h"

namespace compatlab {

namespace fs = std::filesystem;

int RunExport(const ExportFlags& flags) {
  absl::StatusOr<RunFilter> filter = ToRunFilter(flags.filter);
  if (!filter.ok()) return Fail(kExitBadInput, filter.status());
  auto store = Store::Open(flags.db, OpenMode::kReadOnly);
  if (!store.ok()) return Fail(kExitBadInput, store.status());
  auto runs = (*store)->QueryRuns(*filter);
  if (!runs.ok()) return Fail(kExitFailure, runs.status());
  if (runs->empty()) {
    std::cerr << "compatlab: no runs match; nothing written\n";
    return kExitOk;
  }
  auto files = ExportRuns(*runs, flags.parquet_dir);
  if (!files.ok()) return Fail(kExitFailure, files.status());
  for (const ExportedFile& file : *files) {
    std::cout << fmt::format("{}\t{} runs\n", file.path.string(), file.runs);
  }
  std::cerr << fmt::format("compatlab: exported {} runs to {} files under {}\n", runs->size(),
                           files->size(), flags.parquet_dir);
  return kExitOk;
}

int RunImport(const ImportFlags& flags) {
  std::vector<fs::path> paths(flags.paths.begin(), flags.paths.end());
  auto files = CollectParquetFiles(paths);
  if (!files.ok()) return Fail(kExitBadInput, files.status());
  if (files->empty()) return Fail(kExitBadInput, "no .parquet files under the given paths");
  // Every file is checked before the store is even opened: a rejected file
  // leaves no trace, not even a new empty store.
  ReadRunsResult read = ReadRunFiles(*files);
  if (!read.rejected.empty()) {
    for (const absl::Status& rejected : read.rejected) {
      Fail(kExitBadInput, std::string(rejected.message()) + " (rejected)");
    }
    return Fail(kExitBadInput, fmt::format("{} of {} files rejected; nothing imported",
                                           read.rejected.size(), files->size()));
  }
  return MergeImportedRuns(read.runs, flags.db, flags.command_line,
                           fmt::format("{} files", read.files));
}

}  // namespace compatlab
