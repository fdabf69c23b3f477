// `compatlab suites [NAME]`: the shipped suites (suites/, doc/suites.md), or
// one expanded into its tests.
#ifndef COMPATLAB_CLI_SUITES_H_
#define COMPATLAB_CLI_SUITES_H_

#include <string>

#include "CLI/CLI.hpp"

namespace compatlab {

struct SuitesFlags {
  std::string name;              // the suite to expand; "" lists them all
  std::string format = "table";  // table or json
  std::string python;
};

// Adds the `suites` subcommand to `app`; its options fill `flags`.
CLI::App* AddSuitesCommand(CLI::App& app, SuitesFlags& flags);

// Prints the suites' table, or one suite's tests (their count on stderr).
// Exit codes: 0 done; 1 the probe failed; 2 an unknown or malformed suite.
int RunSuites(const SuitesFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_SUITES_H_
