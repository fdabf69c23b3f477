// `compatlab errors`: stored failures grouped by error signature, with the
// knowledge base's explanations (doc/errors-kb.md).
#ifndef COMPATLAB_CLI_ERRORS_H_
#define COMPATLAB_CLI_ERRORS_H_

#include <string>

#include "CLI/CLI.hpp"
#include "cli/query.h"

namespace compatlab {

struct ErrorsFlags {
  std::string db = "compatlab.db";
  RunFilterFlags filter;
  std::string kb;  // knowledge file; "" = <project home>/knowledge/errors.json
  std::string format = "table";
};

// Adds the `errors` subcommand to `app`; its options fill `flags`.
CLI::App* AddErrorsCommand(CLI::App& app, ErrorsFlags& flags);

// Exit codes: 0 done (also when there are no failures); 1 the store or the
// knowledge file cannot be read; 2 bad input (a missing store, a bad filter,
// --status pass or skipped, which are not failures).
int RunErrors(const ErrorsFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_ERRORS_H_
