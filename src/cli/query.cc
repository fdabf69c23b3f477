#include "cli/query.h"

#include <iostream>

#include "cli/common.h"
#include "query/error_kb.h"
#include "query/list_runs.h"

namespace compatlab {

void AddRunFilterOptions(CLI::App& command, RunFilterFlags& flags) {
  command.add_option("--sweep", flags.sweep, "only this sweep");
  command.add_option("--model", flags.model, "model id or type substring (any case)");
  command.add_option("--status", flags.status, "only this status (pass, fail_to_run, ...)");
  command.add_option("--kind", flags.kind, "only this kind");
  command.add_option("--mode", flags.mode, "only this mode");
  command.add_option("--target", flags.target, "only this target");
  command.add_option("--dtype", flags.dtype, "only this dtype");
  command.add_option("--torch-version", flags.torch_version, "only this torch version (exact)");
  command.add_option("--transformers-version", flags.transformers_version,
                     "only this transformers version (exact)");
}

absl::StatusOr<RunFilter> ToRunFilter(const RunFilterFlags& flags) {
  RunFilter filter;
  filter.sweep_id = flags.sweep;
  filter.model = flags.model;
  filter.kind = flags.kind;
  filter.mode = flags.mode;
  filter.target = flags.target;
  filter.dtype = flags.dtype;
  filter.torch_version = flags.torch_version;
  filter.transformers_version = flags.transformers_version;
  if (!flags.status.empty()) {
    absl::StatusOr<TestStatus> status = ParseTestStatus(flags.status);
    if (!status.ok()) return status.status();
    filter.status = *status;
  }
  return filter;
}

CLI::App* AddQueryCommand(CLI::App& app, QueryFlags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "query", "Show stored results: filter, sort, limit; as a table, JSON or CSV");
  cmd->alias("runs");  // the short form
  CLI::App& command = *cmd;
  command.add_option("--db", flags.db, "SQLite store")->capture_default_str();
  AddRunFilterOptions(command, flags.filter);
  command.add_option("--sort", flags.sort,
                     "result fields to sort by, e.g. model_id,-wall_s ('-' for descending; "
                     "default: stored order)");
  command.add_option("--limit", flags.limit, "at most this many rows")
      ->check(CLI::NonNegativeNumber);
  command.add_option("--format", flags.format, "table, json or csv")
      ->check(CLI::IsMember({"table", "json", "csv"}))
      ->capture_default_str();
  return cmd;
}

int RunQuery(const QueryFlags& flags) {
  ListRunsOptions options;
  absl::StatusOr<RunFilter> filter = ToRunFilter(flags.filter);
  if (!filter.ok()) return Fail(kExitBadInput, filter.status());
  absl::StatusOr<std::vector<RunSortKey>> sort = ParseRunSort(flags.sort);
  if (!sort.ok()) return Fail(kExitBadInput, sort.status());
  options.db = flags.db;
  options.filter = *std::move(filter);
  options.filter.sort = *std::move(sort);
  options.filter.limit = flags.limit;
  options.format = flags.format == "json"  ? RunsFormat::kJson
                   : flags.format == "csv" ? RunsFormat::kCsv
                                           : RunsFormat::kTable;
  options.kb_path = DefaultKnowledgeBasePath();
  absl::StatusOr<std::string> text = ListRuns(options);
  if (!text.ok()) return Fail(ExitCodeOf(text.status()), text.status());
  std::cout << *text;
  return kExitOk;
}

}  // namespace compatlab
