// `compatlab plan [plan flags] --shards N --out plan.json [--costs DB...]`:
// a sweep's plan resolved once and cut into shards balanced by expected cost
// (sweep/plan_file.h, doc/plan-file.md), run with `sweep --plan --shard I/N`.
#ifndef COMPATLAB_CLI_PLAN_H_
#define COMPATLAB_CLI_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "cli/sweep.h"

namespace compatlab {

struct PlanCommandFlags {
  SweepFlags plan;  // the plan options of `sweep` (AddPlanOptions)
  std::string out;
  int64_t shards = 1;
  std::vector<std::string> costs;  // stores whose runs' wall times are the tests' costs
};

// Adds the `plan` subcommand to `app`; its options fill `flags`.
CLI::App* AddPlanCommand(CLI::App& app, PlanCommandFlags& flags);

// Writes the plan file and prints each shard's tests and predicted cost and
// the predicted makespan. Exit codes as in cli/common.h.
int RunPlanCommand(const PlanCommandFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_PLAN_H_
