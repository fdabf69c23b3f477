// `compatlab compare`: a variant against its baseline, test by test (doc/compare.md).
#ifndef COMPATLAB_CLI_COMPARE_H_
#define COMPATLAB_CLI_COMPARE_H_

#include <string>

#include "CLI/CLI.hpp"
#include "query/diff.h"

namespace compatlab {

struct CompareFlags {
  std::string db = "compatlab.db";
  std::string base;
  std::string head;
  std::string format = "table";  // table or json
  bool profile = false;          // --profile
  DiffThresholds thresholds;
};

// Adds the `compare` subcommand to `app`; its options fill `flags`.
CLI::App* AddCompareCommand(CLI::App& app, CompareFlags& flags);

// Exit codes: 0 done; 2 bad input (a bad selector, an unknown sweep, a side without runs).
int RunCompareCommand(const CompareFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_COMPARE_H_
