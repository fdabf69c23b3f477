#include "runner/decide_status.h"

#include <string.h>
#include <sys/wait.h>

#include "absl/strings/str_cat.h"
#include "runner/protocol.h"

namespace compatlab {
namespace {

// A result that names a fact of the supervisor, not of the child.
void SetFailure(TestStatus status, const std::string& stage, const std::string& detail,
                RunResult* result) {
  result->status = status;
  result->stage = stage;
  result->status_detail = detail;
  result->error_message = detail;
}

// The supervisor's own facts, kept whatever the status.
RunResult SupervisorFacts(const ExitFacts& facts) {
  RunResult result;
  result.wall_s = facts.wall_s;
  result.mem_limit_bytes = facts.mem_limit_bytes;
  result.mem_limit_method = facts.mem_limit_method;
  result.stdout_tail = facts.stdout_tail;
  result.stderr_tail = facts.stderr_tail;
  return result;
}

RunResult LaunchFailure(const ExitFacts& facts) {
  RunResult result = SupervisorFacts(facts);
  result.status = TestStatus::kHarnessError;
  result.stage = "harness";
  result.error_type = "LaunchError";
  result.error_message = facts.launch_error;
  return result;
}

void SetNoResult(const ExitFacts& facts, RunResult* result) {
  result->status = TestStatus::kHarnessError;
  result->stage = "harness";
  result->error_type = facts.result_text.empty() ? "NoResult" : "BadResult";
  result->error_message = facts.result_text.empty()
                              ? absl::StrCat("the child exited with code ",
                                             WEXITSTATUS(facts.wait_status), " without a result")
                              : absl::StrCat("the child's result could not be read: ",
                                             facts.result_text.substr(0, 200));
}

void SetStack(const StackInfo& stack, RunResult* result) {
  result->python_version = stack.python_version;
  result->torch_version = stack.torch_version;
  result->transformers_version = stack.transformers_version;
}

}  // namespace

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  if (abbrev != nullptr) return absl::StrCat("SIG", abbrev);
  return absl::StrCat("SIG", sig);
}

RunResult DecideStatus(const ExitFacts& facts) {
  if (!facts.launch_error.empty()) return LaunchFailure(facts);
  const int ws = facts.wait_status;
  RunResult result = SupervisorFacts(facts);
  if (WIFEXITED(ws)) result.exit_code = WEXITSTATUS(ws);
  if (WIFSIGNALED(ws)) result.term_signal = WTERMSIG(ws);
  RunResult parsed = result;
  const bool have_result =
      !facts.result_text.empty() && ParseChildResult(facts.result_text, &parsed).ok();
  if (facts.timed_out) {
    SetFailure(TestStatus::kTimeout, "run",
               absl::StrCat("deadline ", facts.timeout_s, " s",
                            facts.killed ? "; SIGKILL after grace" : "; SIGTERM"),
               &result);
  } else if (facts.oom_kills > 0) {
    SetFailure(
        TestStatus::kOom, "run",
        absl::StrCat("memory limit ", result.mem_limit_bytes, " bytes (", result.mem_limit_method,
                     ", ", facts.oom_kills, " OOM kill", facts.oom_kills == 1 ? "" : "s", ")"),
        &result);
  } else if (WIFSIGNALED(ws)) {
    result.status = TestStatus::kCrash;
    result.stage = "run";
    result.status_detail = SignalName(WTERMSIG(ws));
    result.error_type = "Signal";
    result.error_message =
        absl::StrCat("killed by ", result.status_detail, WCOREDUMP(ws) ? " (core dumped)" : "");
  } else if (have_result) {
    result = parsed;
  } else {
    SetNoResult(facts, &result);
  }
  // Stack versions are facts of the interpreter whatever the status.
  if (have_result && result.status != TestStatus::kHarnessError) {
    result.python_version = parsed.python_version;
    result.torch_version = parsed.torch_version;
    result.transformers_version = parsed.transformers_version;
  }
  if (result.torch_version.empty()) SetStack(facts.stack, &result);
  return result;
}

}  // namespace compatlab
