#include "cli/export.h"

#include <iostream>

#include "cli/common.h"
#include "export/hub_dataset.h"
#include "export/transfer.h"
#include "fmt/format.h"
#include "store/artifacts.h"

namespace compatlab {

CLI::App* AddExportCommand(CLI::App& app, ExportFlags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "export", "Write stored results as Parquet, one file per torch/transformers version pair");
  CLI::Option* parquet = cmd->add_option("--parquet", flags.parquet_dir, "output directory");
  CLI::Option* publish = cmd->add_option(
      "--publish", flags.publish_dir,
      "a dataset to publish in a new or empty directory: the Parquet files, a dataset card "
      "(README.md) for the Hugging Face Hub, private text scrubbed (doc/dataset.md)");
  parquet->excludes(publish);
  cmd->add_flag("--keep-private", flags.keep_private,
                "with --publish: keep host and user names, local paths, output tails and "
                "tracebacks as stored")
      ->needs(publish);
  cmd->add_option("--license", flags.license, "with --publish: the card's license (a Hub id)")
      ->capture_default_str()
      ->needs(publish);
  cmd->add_option("--db", flags.db, "SQLite store")->capture_default_str();
  cmd->add_flag("--traces", flags.traces,
                "carry the runs' profile traces (sweep --profile) in profile_traces/ beside "
                "the Parquet files; without it they are left out");
  AddRunFilterOptions(*cmd, flags.filter);
  return cmd;
}

int RunExport(const ExportFlags& flags) {
  if (flags.parquet_dir.empty() == flags.publish_dir.empty()) {
    return Fail(kExitBadInput, "export: give --parquet DIR or --publish DIR");
  }
  absl::StatusOr<RunFilter> filter = ToRunFilter(flags.filter);
  if (!filter.ok()) return Fail(kExitBadInput, filter.status());
  ExportOptions options;
  options.db = flags.db;
  options.filter = *std::move(filter);
  options.publish = !flags.publish_dir.empty();
  options.dir = options.publish ? flags.publish_dir : flags.parquet_dir;
  options.keep_private = flags.keep_private;
  options.license = flags.license;
  options.traces = flags.traces;
  absl::StatusOr<ExportSummary> exported = ExportStore(options);
  if (!exported.ok()) return Fail(ExitCodeOf(exported.status()), exported.status());
  if (exported->op_results > 0) {
    std::cout << fmt::format("{}\t{} op results\n", exported->op_results_file.string(),
                             exported->op_results);
  }
  if (exported->runs == 0) {
    std::cerr << "compatlab: no runs match; nothing written\n";
    return kExitOk;
  }
  for (const ExportedFile& file : exported->files) {
    std::cout << fmt::format("{}\t{} runs\n", file.path.string(), file.runs);
  }
  std::cerr << fmt::format(
      "compatlab: exported {} runs to {} files under {}{}\n", exported->runs,
      exported->files.size(), options.dir.string(),
      flags.traces ? fmt::format(" with {} profile traces", exported->traces) : "");
  if (options.publish) {
    std::cerr << fmt::format(
        "compatlab: dataset card {}; {}\n", (options.dir / "README.md").string(),
        options.keep_private
            ? "private text kept (--keep-private)"
            : fmt::format("private text scrubbed from {} runs", exported->scrubbed_runs));
  }
  return kExitOk;
}

CLI::App* AddImportCommand(CLI::App& app, ImportFlags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "import",
      "Merge exported Parquet files (or directories of them), or other stores, into a store");
  CLI::Option* paths = cmd->add_option(
      "paths", flags.paths, "Parquet files or directories (with --from-store: store files)");
  cmd->add_option("--db", flags.db, "SQLite store (created if missing)")->capture_default_str();
  CLI::Option* from_store =
      cmd->add_flag("--from-store", flags.from_store,
                    "the paths are compatlab stores (SQLite), e.g. one scripts/verify-cuda "
                    "brought back, not Parquet");
  CLI::Option* from_hub = cmd->add_option(
      "--from-hub", flags.from_hub,
      "ORG/NAME[@REVISION]: a dataset published on the Hugging Face Hub (compatlab publish), "
      "downloaded into the Hub cache, then imported as any Parquet");
  from_hub->excludes(paths)->excludes(from_store);
  cmd->add_option("--python", flags.python, "with --from-hub: the interpreter of the Hub helper")
      ->needs(from_hub);
  return cmd;
}

int RunImport(const ImportFlags& flags) {
  if (flags.paths.empty() == flags.from_hub.empty()) {
    return Fail(kExitBadInput, "import: give PATH... or --from-hub ORG/NAME[@REVISION]");
  }
  ImportOptions options;
  options.db = flags.db;
  options.paths.assign(flags.paths.begin(), flags.paths.end());
  options.args = flags.command_line;
  if (!flags.from_hub.empty()) {
    const ProbeEnv env = ResolveProbeEnv(flags.python);
    absl::StatusOr<DownloadedDataset> downloaded =
        DownloadDataset(flags.from_hub, {env.python, env.probe_dir});
    if (!downloaded.ok()) return Fail(ExitCodeOf(downloaded.status()), downloaded.status());
    std::cerr << fmt::format("compatlab: {} at commit {}: {}\n", downloaded->repo_id,
                             downloaded->commit, downloaded->path.string());
    options.paths = {downloaded->path};
  }
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
  if (imported->op_results > 0) {
    std::cout << fmt::format("with {} op results into {}\n", imported->op_results, flags.db);
  }
  return kExitOk;
}

CLI::App* AddPublishCommand(CLI::App& app, PublishFlags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "publish",
      "Upload a dataset written by export --publish to the Hugging Face Hub (a dataset repo, "
      "created if missing; token from HF_TOKEN or the login)");
  cmd->add_option("dir", flags.dir, "the directory export --publish wrote")->required();
  cmd->add_option("--repo", flags.repo, "ORG/NAME of the dataset repo")->required();
  cmd->add_option("--revision", flags.revision, "a branch (created if missing); default main");
  cmd->add_option("--python", flags.python, "the interpreter of the Hub helper");
  return cmd;
}

int RunPublish(const PublishFlags& flags) {
  const ProbeEnv env = ResolveProbeEnv(flags.python);
  absl::StatusOr<PublishedDataset> published =
      PublishDataset({flags.dir, flags.repo, flags.revision, {env.python, env.probe_dir}});
  if (!published.ok()) return Fail(ExitCodeOf(published.status()), published.status());
  for (const std::string& file : published->files) std::cout << file << "\n";
  std::cerr << fmt::format("compatlab: published {} files to dataset {} ({} at commit {}): {}\n",
                           published->files.size(), published->repo_id, published->revision,
                           published->commit, published->url);
  return kExitOk;
}

}  // namespace compatlab
