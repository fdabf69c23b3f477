#include "cli/plan.h"

#include <algorithm>
#include <iostream>

#include "cli/common.h"
#include "fmt/format.h"
#include "sweep/plan_file.h"
#include "util/fs.h"

namespace compatlab {
namespace {

// One line per shard, then the plan's line with its predicted makespan.
std::string PlanReport(const ShardedPlan& plan, const std::string& out) {
  const std::vector<ShardLoad> loads = ShardLoads(plan);
  std::string text;
  size_t longest = 0;
  for (size_t i = 0; i < loads.size(); ++i) {
    const ShardLoad& load = loads[i];
    text += fmt::format("shard {}/{}: {} tests, predicted {:.1f} s ({} measured, {} estimated)\n",
                        i, plan.shards, load.tests, load.predicted_s, load.measured,
                        load.tests - load.measured);
    if (load.predicted_s > loads[longest].predicted_s) longest = i;
  }
  text += fmt::format(
      "plan {}: {} tests in {} shards, predicted makespan {:.1f} s (shard {}); "
      "written to {}\n",
      plan.plan_id.substr(0, 12), plan.tests.size(), plan.shards, loads[longest].predicted_s,
      longest, out);
  return text;
}

}  // namespace

CLI::App* AddPlanCommand(CLI::App& app, PlanCommandFlags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "plan", "Resolve a sweep's plan once and cut it into shards to run anywhere");
  cmd->add_option("--out", flags.out, "the plan file to write (doc/plan-file.md)")->required();
  cmd->add_option("--shards", flags.shards,
                  "shards, balanced by expected cost (default 1; at most 10000)");
  cmd->add_option("--costs", flags.costs,
                  "stores whose runs' wall times are the tests' costs (else an estimate by "
                  "kind and mode)")
      ->expected(1, -1);
  AddPlanOptions(*cmd, flags.plan, /*execution_policy=*/false);
  return cmd;
}

int RunPlanCommand(const PlanCommandFlags& flags) {
  absl::StatusOr<PlanRequest> request = PlanRequestOf(flags.plan);
  if (!request.ok()) return Fail(kExitBadInput, request.status());
  WritePlanOptions options;
  options.request = *std::move(request);
  options.home = ProjectHome();
  options.shards = flags.shards;
  options.cost_dbs.assign(flags.costs.begin(), flags.costs.end());
  options.out = flags.out;
  absl::StatusOr<ShardedPlan> plan = WritePlan(options);
  if (!plan.ok()) return Fail(ExitCodeOf(plan.status()), plan.status());
  std::cout << PlanReport(*plan, flags.out);
  return kExitOk;
}

}  // namespace compatlab
