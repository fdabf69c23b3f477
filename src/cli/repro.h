// `compatlab repro RUN_ID`: prints a standalone Python script (torch and
// transformers only) that reruns one stored test. doc/repro.md.
#ifndef COMPATLAB_CLI_REPRO_H_
#define COMPATLAB_CLI_REPRO_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/records.h"
#include "plan/catalog.h"
#include "query/error_kb.h"

namespace compatlab {

struct ReproFlags {
  std::string run_id;
  std::string db = "compatlab.db";
  std::string kb;      // knowledge file; "" = <project home>/knowledge/errors.json
  std::string python;  // interpreter that runs the probe's generator
};

// The input object of `python -m compatlab_probe.repro` for `record`: the
// test request exactly as the supervisor sends it (runner/protocol.h), what
// the store recorded, and the knowledge base's entry (null when none). JSON.
// `target_profile_json`: the target's profile (targets/NAME.json) as JSON
// text, or "" for the probe's built-in cpu profile.
std::string ReproInputJson(const RunRecord& record, const KnownError* known,
                           const std::string& target_profile_json = "");

// The reproduction script of `run`: the probe's generator run with
// env.python. FailedPrecondition for a harness-kind run (no model, no
// script); Internal when the generator cannot run or fails. Used by `repro`
// and by `serve`'s /api/repro.
absl::StatusOr<std::string> GenerateReproScript(const RunRecord& run, const KnownError* known,
                                                const ProbeEnv& env);

// Exit codes: 0 the script is on stdout; 1 the generator failed; 2 bad input
// (a missing store, an unknown run id, a harness-kind run with no model).
int RunRepro(const ReproFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_REPRO_H_
