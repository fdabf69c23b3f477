#include "cli/export.h"

#include <iostream>

#include "cli/common.h"
#include "export/transfer.h"
#include "fmt/format.h"
#include "store/artifacts.h"

namespace compatlab {

CLI::App* AddExportCommand(CLI::App& app, ExportFlags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "export", "Write stored results as Parquet, one file per torch/transformers version pair");
  cmd->add_option("--parquet", flags.parquet_dir, "output directory")->required();
  cmd->add_option("--db", flags.db, "SQLite store")->capture_default_str();
  cmd->add_flag("--traces", flags.traces,
                "carry the runs' profile traces (sweep --profile) in profile_traces/ beside "
                "the Parquet files; without it they are left out");
  AddRunFilterOptions(*cmd, flags.filter);
  return cmd;
}

int RunExport(const ExportFlags& flags) {
  absl::StatusOr<RunFilter> filter = ToRunFilter(flags.filter);
  if (!filter.ok()) return Fail(kExitBadInput, filter.status());
  ExportOptions options;
  options.db = flags.db;
  options.filter = *std::move(filter);
  options.dir = flags.parquet_dir;
  options.traces = flags.traces;
  absl::StatusOr<ExportSummary> exported = ExportStore(options);
  if (!exported.ok()) return Fail(ExitCodeOf(exported.status()), exported.status());
  if (exported->runs == 0) {
    std::cerr << "compatlab: no runs match; nothing written\n";
    return kExitOk;
  }
  for (const ExportedFile& file : exported->files) {
    std::cout << fmt::format("{}\t{} runs\n", file.path.string(), file.runs);
  }
  std::cerr << fmt::format(
      "compatlab: exported {} runs to {} files under {}{}\n", exported->runs,
      exported->files.size(), flags.parquet_dir,
      flags.traces ? fmt::format(" with {} profile traces", exported->traces) : "");
  return kExitOk;
}

CLI::App* AddImportCommand(CLI::App& app, ImportFlags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "import",
      "Merge exported Parquet files (or directories of them), or other stores, into a store");
  cmd->add_option("paths", flags.paths,
                  "Parquet files or directories (with --from-store: store files)")
      ->required();
  cmd->add_option("--db", flags.db, "SQLite store (created if missing)")->capture_default_str();
  cmd->add_flag("--from-store", flags.from_store,
                "the paths are compatlab stores (SQLite), e.g. one scripts/verify-cuda "
                "brought back, not Parquet");
  return cmd;
}

int RunImport(const ImportFlags& flags) {
  ImportOptions options;
  options.db = flags.db;
  options.paths.assign(flags.paths.begin(), flags.paths.end());
  options.args = flags.command_line;
  if (flags.from_store) {
    absl::StatusOr<MergeStats> merged = ImportStoresIntoStore(options);
    if (!merged.ok()) return Fail(ExitCodeOf(merged.status()), merged.status());
    std::cout << fmt::format(
        "imported {} runs from {} stores into {} ({} already present; {} sweeps created)\n",
        merged->inserted, flags.paths.size(), flags.db, merged->already_present,
        merged->sweeps_created);
    return kExitOk;
  }
  absl::StatusOr<ImportResult> imported = ImportIntoStore(options);
  if (!imported.ok()) return Fail(ExitCodeOf(imported.status()), imported.status());
  if (!imported->rejected.empty()) {
    for (const absl::Status& rejected : imported->rejected) {
      Fail(kExitBadInput, std::string(rejected.message()) + " (rejected)");
    }
    const size_t files = imported->rejected.size() + static_cast<size_t>(imported->files);
    return Fail(kExitBadInput, fmt::format("{} of {} files rejected; nothing imported",
                                           imported->rejected.size(), files));
  }
  std::cout << fmt::format(
      "imported {} runs from {} files into {} ({} already present; {} sweeps created)\n",
      imported->merged.inserted, imported->files, flags.db, imported->merged.already_present,
      imported->merged.sweeps_created);
  if (imported->traces > 0) {
    std::cout << fmt::format("with {} profile traces into {}\n", imported->traces,
                             ArtifactDir(flags.db).string());
  }
  return kExitOk;
}

}  // namespace compatlab
