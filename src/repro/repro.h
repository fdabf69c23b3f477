// Reproduction scripts (doc/repro.md): a standalone Python script (torch and
// transformers only) that reruns one stored test, made by the probe's
// generator (`python -m compatlab_probe.repro`) from the test request that the
// supervisor would send, what the store recorded, and the knowledge base's
// entry. The generator reads its input on standard input, never from argv.
// Used by `compatlab repro` and by `serve`'s /api/repro.
#ifndef COMPATLAB_REPRO_REPRO_H_
#define COMPATLAB_REPRO_REPRO_H_

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/records.h"
#include "plan/catalog.h"
#include "plan/stored_code.h"
#include "query/error_kb.h"
#include "store/store.h"

namespace compatlab {

// The input object of `python -m compatlab_probe.repro` for `record`: the
// test request exactly as the supervisor sends it (runner/protocol.h), what
// the store recorded, and the knowledge base's entry (null when none). JSON.
// `target_profile_json`: the target's profile (targets/NAME.json) as JSON
// text, or "" for the probe's built-in cpu profile.
// `trusted`: the run is this store's own (IsLocalRun); otherwise the generator
// treats the request as untrusted data (doc/repro.md, "Imported runs").
std::string ReproInputJson(const RunRecord& record, const KnownError* known,
                           const std::string& target_profile_json = "", bool trusted = false);

// What repro vouches for: the interpreter and probe of `probe`, the profiles
// of `targets_dir` as they are now, and code models (whose files the script
// checks against their recorded hashes); never a `module:function` backend
// other than a profile's, nor a checkpoint's own code.
absl::StatusOr<OwnCode> ReproOwnCode(const ProbeEnv& probe,
                                     const std::filesystem::path& targets_dir);

// The planned test of `run` when a sweep of `store` itself planned and ran it: a plan with
// the execution settings only a sweep stores, and the same compile options, backend and
// model_path as the run; nullopt otherwise (an imported run, or settings that differ).
absl::StatusOr<std::optional<ResolvedTest>> PlanOfRun(Store& store, const RunRecord& run);

// True when `run` was planned and run by a sweep of `store` itself: its
// planned test has the execution settings only a sweep stores, with the same
// compile options, backend and model_path, and names only code `own` vouches
// for (CheckStoredCode). False for a run that came through `compatlab import`,
// or a store handed over whole (whose settings are someone else's data).
absl::StatusOr<bool> IsLocalRun(Store& store, const RunRecord& run, const OwnCode& own);

// OK unless `run` is a code: model (its own modelling code) that cannot be rerun here:
// FailedPrecondition when it came through import (`trusted` false: its code is not ours
// to run), or when one of its code files (those its run recorded in code_files: FILE and
// the files it imports from FILE's directory tree) is gone or no longer has its recorded
// SHA-256; a run that recorded none is checked on FILE against the id's hash (the script
// checks the same before it runs).
absl::Status CheckCodeFiles(const RunRecord& run, bool trusted);

// True when `run` has a reproduction script: a model test (harness kinds have
// no model).
bool HasReproScript(const RunRecord& run);

// A script and what went wrong on the way without stopping it.
struct ReproScript {
  std::string script;
  std::vector<std::string> warnings;  // one line each, e.g. a missing target profile
};

// The reproduction script of `run`: the probe's generator run with
// env.python, its input (ReproInputJson, with the run's profile as
// `targets_dir` holds it, else the built-in cpu one) on standard input.
// FailedPrecondition for a harness-kind run (no model, no script; the
// generator is not started); Internal when the generator cannot run or fails.
// The run's target is loaded by name only (a stored target is data: never a
// path); `trusted` as for ReproInputJson.
absl::StatusOr<ReproScript> GenerateReproScript(const RunRecord& run, const KnownError* known,
                                                const ProbeEnv& env,
                                                const std::filesystem::path& targets_dir,
                                                bool trusted);

struct ReproOptions {
  std::filesystem::path db;
  std::string run_id;
  std::filesystem::path kb_path;      // knowledge file; unreadable = a warning, no explanation
  std::filesystem::path targets_dir;  // target profiles (targets/NAME.json)
  ProbeEnv probe;                     // interpreter and probe directory of the generator
  // --allow-stored-code: a run of this store's own sweep keeps the code its plan names
  // (a backend, a profile, compile options) even where this installation does not vouch
  // for it (ReproOwnCode); the user trusts the store.
  bool allow_stored_code = false;
};

// `compatlab repro`: the script of stored run options.run_id, with the
// knowledge base's entry when options.kb_path holds a usable file (else a
// warning). Errors: FailedPrecondition when the store cannot be opened or the
// run has no script, NotFound for an unknown run id, Internal when the store
// cannot be read or the generator fails.
absl::StatusOr<ReproScript> ReproduceStoredRun(const ReproOptions& options);

}  // namespace compatlab

#endif  // COMPATLAB_REPRO_REPRO_H_
