// `compatlab repro RUN_ID`: prints a standalone Python script (torch and
// transformers only) that reruns one stored test (src/repro, doc/repro.md).
#ifndef COMPATLAB_CLI_REPRO_H_
#define COMPATLAB_CLI_REPRO_H_

#include <string>

#include "CLI/CLI.hpp"

namespace compatlab {

struct ReproFlags {
  std::string run_id;
  std::string db = "compatlab.db";
  std::string kb;                  // knowledge file; "" = <project home>/knowledge/errors.json
  std::string python;              // interpreter that runs the probe's generator
  bool allow_stored_code = false;  // keep the stored plan's own code (ReproOptions)
};

// Adds the `repro` subcommand to `app`; its options fill `flags`.
CLI::App* AddReproCommand(CLI::App& app, ReproFlags& flags);

// Exit codes: 0 the script is on stdout; 1 the generator failed; 2 bad input
// (a missing store, an unknown run id, a harness-kind run with no model).
int RunRepro(const ReproFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_REPRO_H_
