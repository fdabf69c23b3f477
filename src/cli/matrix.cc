#include "cli/matrix.h"

#include <iostream>

#include "cli/common.h"
#include "query/matrix.h"

namespace compatlab {

CLI::App* AddMatrixCommand(CLI::App& app, MatrixFlags& flags) {
  CLI::App& command = *app.add_subcommand(
      "matrix", "Models x (target, mode): the current verdict of each, on one stack");
  command.add_option("--db", flags.db, "SQLite store")->capture_default_str();
  AddRunFilterOptions(command, flags.filter);
  command
      .add_option("--stack", flags.stack,
                  "newest (the newest torch release and transformers version), all, a sweep "
                  "id, or torch=R,transformers=V")
      ->capture_default_str();
  command.add_option("--stacks", flags.stacks,
                     "named stacks side by side (default,NAME: stack ls): a column per (stack, "
                     "target, mode), cells changed from the first stack's marked by diff's rule");
  command.add_option("--format", flags.format, "table, json or csv")
      ->check(CLI::IsMember({"table", "json", "csv"}))
      ->capture_default_str();
  return &command;
}

int RunMatrix(const MatrixFlags& flags) {
  MatrixOptions options;
  absl::StatusOr<RunFilter> filter = ToRunFilter(flags.filter);
  if (!filter.ok()) return Fail(kExitBadInput, filter.status());
  if (!flags.stacks.empty() && flags.stack != "newest") {
    return Fail(kExitBadInput, "give --stack or --stacks, not both");
  }
  absl::StatusOr<StackSelection> selection =
      flags.stacks.empty() ? ParseStackSelection(flags.stack) : ParseNamedStacks(flags.stacks);
  if (!selection.ok()) return Fail(kExitBadInput, selection.status());
  options.db = flags.db;
  options.filter = *std::move(filter);
  options.selection = *std::move(selection);
  options.format = flags.format == "json"  ? RunsFormat::kJson
                   : flags.format == "csv" ? RunsFormat::kCsv
                                           : RunsFormat::kTable;
  absl::StatusOr<std::string> text = ShowMatrix(options);
  if (!text.ok()) return Fail(ExitCodeOf(text.status()), text.status());
  std::cout << *text;
  return kExitOk;
}

}  // namespace compatlab
