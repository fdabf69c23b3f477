// The JSON edge of doc/worker-protocol.md: test requests out, result objects in.
#ifndef COMPATLAB_RUNNER_PROTOCOL_H_
#define COMPATLAB_RUNNER_PROTOCOL_H_

#include <sys/types.h>

#include <string>
#include <string_view>

#include "absl/status/status.h"
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

}  // namespace compatlab

#endif  // COMPATLAB_RUNNER_PROTOCOL_H_
