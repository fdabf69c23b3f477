// A stored plan is data, never a program (doc/suites.md, "Resuming a sweep";
// doc/limits.md): a store can be handed around, so the code its planned tests
// name (interpreter, probe directory, target profile, compile options, a
// `module:function` backend, a code model, a checkpoint's own code) is this
// installation's own only as OwnCode says. Used by sweep --resume (which runs
// nothing else without --allow-stored-code) and by repro (which calls a run
// local only when its planned test passes).
#ifndef COMPATLAB_PLAN_STORED_CODE_H_
#define COMPATLAB_PLAN_STORED_CODE_H_

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/resolved_test.h"
#include "plan/target.h"

namespace compatlab {

// What this installation and this resume's command line vouch for.
struct OwnCode {
  // The interpreter of this resume: --python as given, else $COMPATLAB_PYTHON,
  // else <home>/.venv/bin/python (cli/common.h, ResolveProbeEnv).
  std::string python;
  std::string probe_dir;  // this compatlab's probe: <home>/probe
  // The profiles whose content is trusted: every profile of <home>/targets as
  // it is now, and the profile files named by path on this resume's --targets.
  std::vector<TargetProfile> profiles;
  std::string backend;      // --backend given on this resume ("" none)
  bool model_code = false;  // --model-code given on this resume
  // This compatlab's suites/ (absolute; "" none): the code models of its shipped suites
  // (doc/suites.md, "Code models") are own; the child checks their files' hash.
  std::string suites_dir;
  bool trust_remote_code = false;  // --trust-remote-code given on this resume
  std::string model_path;          // --model-path given on this resume, absolute ("" none)
};

// Builds OwnCode from the resume's interpreter and probe directory, loading
// every profile of `targets_dir` and the entries of `given_targets` that are
// paths (IsTargetProfilePath). Errors: a given profile file that cannot be
// loaded (a shipped one that cannot is left out: it vouches for nothing).
absl::StatusOr<OwnCode> LoadOwnCode(const std::string& python, const std::string& probe_dir,
                                    const std::filesystem::path& targets_dir,
                                    const std::vector<std::string>& given_targets);

// OK when every test of `tests` runs only code `own` vouches for: its
// interpreter and probe directory are own's; its profile content is "" or
// equals one of own.profiles; its compile options are "" or that profile's
// (with or without "dynamic": false); a `module:function` backend is that
// profile's or own.backend; a code model needs own.model_code (or its file
// inside own.suites_dir) and a
// checkpoint's own code own.trust_remote_code (and, for a local checkpoint,
// own.model_path equal to its path). Else InvalidArgument, one line
// naming the test and the stored field and --allow-stored-code.
absl::Status CheckStoredCode(const std::vector<ResolvedTest>& tests, const OwnCode& own);

}  // namespace compatlab

#endif  // COMPATLAB_PLAN_STORED_CODE_H_
