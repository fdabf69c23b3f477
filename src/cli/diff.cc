#include "cli/diff.h"

#include <iostream>

#include "cli/common.h"
#include "query/compare.h"
#include "query/error_kb.h"

namespace compatlab {

void AddDiffThresholds(CLI::App& cmd, DiffThresholds& thresholds, const std::string& lead) {
  cmd.add_option("--steady-threshold", thresholds.steady,
                 lead + "relative steady_median_s increase that regresses")
      ->capture_default_str();
  cmd.add_option("--prepare-threshold", thresholds.prepare,
                 lead + "relative prepare_s increase that regresses")
      ->capture_default_str();
  cmd.add_option("--memory-threshold", thresholds.memory,
                 lead + "relative host memory increase that regresses")
      ->capture_default_str();
}

CLI::App* AddDiffCommand(CLI::App& app, DiffFlags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "diff", "Compare two sweeps or stacks; check or write expected-status files");
  cmd->add_option("--db", flags.db, "SQLite store")->capture_default_str();
  cmd->add_option("--base", flags.base,
                  "a sweep id or stack name (stack ls), or torch=V[,transformers=W][,stack=NAME]");
  cmd->add_option("--head", flags.head, "the same, for the side under test")->required();
  cmd->add_flag("--fail-on-regression", flags.fail_on_regression, "exit 1 when anything regressed");
  cmd->add_option("--write-expected", flags.write_expected,
                  "write head's statuses as an expected-status file");
  cmd->add_option("--expected", flags.expected,
                  "check head against an expected-status file; exit 1 on any change");
  AddDiffThresholds(*cmd, flags.thresholds, "");
  cmd->add_option("--format", flags.format,
                  "text, or markdown: the release report (new failures with their knowledge-base "
                  "entries, fixes, slower and faster tests, ops newly falling back)")
      ->check(CLI::IsMember({"text", "markdown"}))
      ->capture_default_str();
  cmd->add_option("--kb", flags.kb,
                  "knowledge file (default: knowledge/errors.json of the project)");
  return cmd;
}

int RunDiff(const DiffFlags& flags) {
  CompareOptions options;
  options.db = flags.db;
  options.base = flags.base;
  options.head = flags.head;
  options.fail_on_regression = flags.fail_on_regression;
  options.write_expected = flags.write_expected;
  options.expected = flags.expected;
  options.thresholds = flags.thresholds;
  options.markdown = flags.format == "markdown";
  options.kb_path = flags.kb.empty() ? DefaultKnowledgeBasePath() : std::filesystem::path(flags.kb);
  absl::StatusOr<CompareOutcome> outcome = Compare(options);
  if (!outcome.ok()) return Fail(ExitCodeOf(outcome.status()), outcome.status());
  std::cout << outcome->text;
  return outcome->failed ? kExitFailure : kExitOk;
}

}  // namespace compatlab
