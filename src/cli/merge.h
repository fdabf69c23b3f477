// `compatlab merge OUT.db IN.db...`: shard stores joined into one
// (export/transfer.h, MergeStores; doc/scale-out.md).
#ifndef COMPATLAB_CLI_MERGE_H_
#define COMPATLAB_CLI_MERGE_H_

#include <string>
#include <vector>

#include "CLI/CLI.hpp"

namespace compatlab {

struct MergeFlags {
  std::string out;
  std::vector<std::string> inputs;
  bool allow_mixed = false;
  std::string command_line;
};

// Adds the `merge` subcommand to `app`; its options fill `flags`.
CLI::App* AddMergeCommand(CLI::App& app, MergeFlags& flags);

// Merges and prints one line of what it did. Exit codes as in cli/common.h.
int RunMerge(const MergeFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_MERGE_H_
