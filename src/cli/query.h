// `compatlab query` (and its short form `runs`): stored runs, filtered,
// sorted and limited, as a table, JSON or CSV.
#ifndef COMPATLAB_CLI_QUERY_H_
#define COMPATLAB_CLI_QUERY_H_

#include <cstdint>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "store/store.h"

namespace compatlab {

// The run filters that query, export share.
struct RunFilterFlags {
  std::string sweep;
  std::string model;
  std::string status;
  std::string kind;
  std::string mode;
  std::string target;
  std::string dtype;
  std::string torch_version;
  std::string transformers_version;
};

// Adds --sweep, --model, --status, --kind, --mode, --target, --dtype,
// --torch-version and --transformers-version to `command`.
void AddRunFilterOptions(CLI::App& command, RunFilterFlags& flags);

// The store filter of `flags`; InvalidArgument for an unknown status.
absl::StatusOr<RunFilter> ToRunFilter(const RunFilterFlags& flags);

struct QueryFlags {
  std::string db = "compatlab.db";
  RunFilterFlags filter;
  std::string sort;
  int64_t limit = 0;
  std::string format = "table";
};

// Adds the `query` subcommand (alias `runs`) to `app`; its options fill `flags`.
CLI::App* AddQueryCommand(CLI::App& app, QueryFlags& flags);

// Prints the matching runs. Exit codes as in cli/common.h.
int RunQuery(const QueryFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_QUERY_H_
