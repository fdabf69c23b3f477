#include "cli/merge.h"

#include <iostream>

#include "cli/common.h"
#include "export/transfer.h"
#include "fmt/format.h"

namespace compatlab {

CLI::App* AddMergeCommand(CLI::App& app, MergeFlags& flags) {
  CLI::App* cmd =
      app.add_subcommand("merge", "Join shard stores into one store, exactly (doc/scale-out.md)");
  cmd->add_option("out", flags.out, "the merged store (created if missing)")->required();
  cmd->add_option("inputs", flags.inputs, "the shard stores")->required()->expected(1, -1);
  cmd->add_flag("--allow-mixed", flags.allow_mixed,
                "merge stores whose sweeps are of different plans");
  return cmd;
}

int RunMerge(const MergeFlags& flags) {
  MergeOptions options;
  options.out = flags.out;
  options.inputs.assign(flags.inputs.begin(), flags.inputs.end());
  options.allow_mixed = flags.allow_mixed;
  options.args = flags.command_line;
  absl::StatusOr<MergeStats> merged = MergeStores(options);
  if (!merged.ok()) return Fail(ExitCodeOf(merged.status()), merged.status());
  std::cout << fmt::format(
      "merged {} stores into {}: {} runs added, {} already there; {} sweeps created, {} planned "
      "tests added\n",
      flags.inputs.size(), flags.out, merged->inserted, merged->already_present,
      merged->sweeps_created, merged->tests_planned);
  return kExitOk;
}

}  // namespace compatlab
