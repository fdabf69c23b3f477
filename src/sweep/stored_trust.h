// A stored plan is data, never a program (doc/suites.md, "Resuming a sweep";
// doc/limits.md): a store can be handed around, so the code its planned tests
// name (interpreter, probe directory, target profile, compile options, a
// `module:function` backend, a code model, a checkpoint's own code) runs on
// `sweep --resume` only when it is this installation's own (plan/stored_code.h),
// was named again on the resume's command line, or the user passed
// --allow-stored-code; its limits are checked as their flags are.
#ifndef COMPATLAB_SWEEP_STORED_TRUST_H_
#define COMPATLAB_SWEEP_STORED_TRUST_H_

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/resolved_test.h"
#include "plan/stored_code.h"
#include "sweep/resolve.h"

namespace compatlab {

// The resume's check: OwnCode from `python`, `probe_dir`, <home>/targets and
// the flags given (--targets, --backend, --model-code, --trust-remote-code),
// then CheckStoredCode on `tests` (of a stored sweep or a plan file); its
// refusal begins with `origin` ("sweep ID", "plan file PATH").
absl::Status CheckResumeCode(const std::string& origin, const std::vector<ResolvedTest>& tests,
                             const ProbeEnv& probe, const std::filesystem::path& home,
                             const PlanFlags& given);

// The limits a resume takes from this command line instead of the store.
struct GivenLimits {
  bool timeout = false;    // --timeout given
  bool grace = false;      // --grace given
  bool mem_limit = false;  // --mem-limit given
};

// OK when every stored limit of `tests` that `given` does not replace is in
// its flag's range: spec.timeout_s and execution grace_s as CheckDuration
// says, execution mem_limit_bytes at least kMinMemLimitBytes; else
// InvalidArgument naming the test, the stored field and the flag to pass.
absl::Status CheckStoredLimits(const std::vector<ResolvedTest>& tests, const GivenLimits& given);

// `<temp dir>/<prefix><sweep_id><suffix>`, a path a sweep creates and later
// removes recursively, once `sweep_id` passed CheckStoredId (it may come from
// a store); InvalidArgument otherwise.
absl::StatusOr<std::filesystem::path> SweepTempPath(std::string_view prefix,
                                                    const std::string& sweep_id,
                                                    std::string_view suffix = "");

}  // namespace compatlab

#endif  // COMPATLAB_SWEEP_STORED_TRUST_H_
