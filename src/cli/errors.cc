#include "cli/errors.h"

#include <iostream>

#include "cli/common.h"
#include "query/error_kb.h"
#include "query/list_errors.h"

namespace compatlab {

CLI::App* AddErrorsCommand(CLI::App& app, ErrorsFlags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "errors", "Failures grouped by error signature, with the knowledge base's explanations");
  cmd->add_option("--db", flags.db, "SQLite store")->capture_default_str();
  AddRunFilterOptions(*cmd, flags.filter);
  cmd->add_option("--kb", flags.kb,
                  "knowledge file (default: knowledge/errors.json of the project)");
  cmd->add_option("--format", flags.format, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  return cmd;
}

int RunErrors(const ErrorsFlags& flags) {
  absl::StatusOr<RunFilter> filter = ToRunFilter(flags.filter);
  if (!filter.ok()) return Fail(kExitBadInput, filter.status());
  ListErrorsOptions options;
  options.db = flags.db;
  options.filter = *std::move(filter);
  options.kb_path = flags.kb.empty() ? DefaultKnowledgeBasePath() : std::filesystem::path(flags.kb);
  options.json = flags.format == "json";
  absl::StatusOr<std::string> text = ListErrors(options);
  if (!text.ok()) return Fail(ExitCodeOf(text.status()), text.status());
  std::cout << *text;
  return kExitOk;
}

}  // namespace compatlab
