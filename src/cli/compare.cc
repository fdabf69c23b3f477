#include "cli/compare.h"

#include <iostream>

#include "cli/common.h"
#include "cli/diff.h"
#include "query/variant_compare.h"

namespace compatlab {

CLI::App* AddCompareCommand(CLI::App& app, CompareFlags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "compare", "A variant against its baseline, test by test (doc/compare.md)");
  cmd->add_option("--db", flags.db, "SQLite store")->capture_default_str();
  cmd->add_option("--base", flags.base,
                  "the baseline: a model id (hf:llama), a sweep id, stack versions "
                  "(torch=V[,transformers=W]), or key=value pairs with model=ID")
      ->required();
  cmd->add_option("--head", flags.head, "the same, for the variant")->required();
  cmd->add_option("--format", flags.format, "table or json")->capture_default_str();
  cmd->add_flag("--profile", flags.profile,
                "also each test profiled on both sides (sweep --profile): the time by "
                "category and the ops whose time changed most, aligned by op name and input "
                "shapes");
  AddDiffThresholds(*cmd, flags.thresholds, "as diff's: ");
  return cmd;
}

int RunCompareCommand(const CompareFlags& flags) {
  if (flags.format != "table" && flags.format != "json") {
    return Fail(kExitBadInput, "--format " + flags.format + ": not table or json");
  }
  VariantCompareOptions options;
  options.db = flags.db;
  options.base = flags.base;
  options.head = flags.head;
  options.json = flags.format == "json";
  options.profile = flags.profile;
  options.thresholds = flags.thresholds;
  absl::StatusOr<std::string> text = RunVariantCompare(options);
  if (!text.ok()) return Fail(ExitCodeOf(text.status()), text.status());
  std::cout << *text;
  return kExitOk;
}

}  // namespace compatlab
