// `compatlab sweeps --db PATH`: a store's sweeps, plans and shards with their
// progress (query/sweeps_report.h; doc/scale-out.md).
#ifndef COMPATLAB_CLI_SWEEPS_H_
#define COMPATLAB_CLI_SWEEPS_H_

#include <string>

#include "CLI/CLI.hpp"

namespace compatlab {

struct SweepsFlags {
  std::string db = "compatlab.db";
};

// Adds the `sweeps` subcommand to `app`; its options fill `flags`.
CLI::App* AddSweepsCommand(CLI::App& app, SweepsFlags& flags);

// Prints the store's sweeps and each plan's missing tests. Exit codes as in cli/common.h.
int RunSweeps(const SweepsFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_SWEEPS_H_
