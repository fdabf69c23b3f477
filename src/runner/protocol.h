// The JSON edge of doc/worker-protocol.md: test requests out, result objects in.
#ifndef COMPATLAB_RUNNER_PROTOCOL_H_
#define COMPATLAB_RUNNER_PROTOCOL_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/records.h"
#include "runner/launcher.h"

namespace compatlab {

inline constexpr int kProtocolVersion = 1;

// The "test" object of a fork message.
std::string TestRequestJson(const LaunchRequest& request, pid_t supervisor_pid);

// `object` (the text of a JSON object) with the member `key` added last, its
// value the JSON text `raw` inserted verbatim: how JSON this process already
// holds as text (a target profile, compile options, a test request) is
// embedded without parsing it back. REQUIRES: `object` ends in '}' and `raw`
// is one JSON value.
std::string WithRawJsonMember(std::string object, std::string_view key, std::string_view raw);

// Reads a child's result object into `out` (status, failure detail, metrics,
// stack). InvalidArgument when the text is not a valid result object; `out`
// is then left as it was. A child may not claim `timeout` or `crash`.
absl::Status ParseChildResult(const std::string& text, RunResult* out);

// A result pipe's text split into its stage marks and its result object
// (doc/worker-protocol.md, "Stage marks"): every line up to the last newline
// is a mark {"stage": NAME}, or {"stage": NAME, "rank": R} from a test over
// several ranks (the rank whose stage it is: doc/ranks.md); what follows it is
// the result object ("" when the child died before writing one).
struct ResultPipe {
  std::string last_stage;            // the last mark's stage; "" without marks
  std::optional<int64_t> last_rank;  // the last mark's rank, when it named one
  std::string result;
};
// InvalidArgument when a line before the result is not a stage mark.
absl::StatusOr<ResultPipe> SplitResultPipe(std::string_view text);

}  // namespace compatlab

#endif  // COMPATLAB_RUNNER_PROTOCOL_H_
