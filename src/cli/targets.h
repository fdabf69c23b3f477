// `compatlab targets`: the shipped target profiles (targets/, doc/targets.md).
#ifndef COMPATLAB_CLI_TARGETS_H_
#define COMPATLAB_CLI_TARGETS_H_

#include "CLI/CLI.hpp"

namespace compatlab {

// `targets` takes no flags.
struct TargetsFlags {};

// Adds the `targets` subcommand to `app`.
CLI::App* AddTargetsCommand(CLI::App& app, TargetsFlags& flags);

// Prints the profiles' table. Exit codes: 0 done; 2 a profile cannot be read.
int RunTargets(const TargetsFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_TARGETS_H_
