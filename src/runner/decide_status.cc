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

void SetNoResult(const ExitFacts& facts, const absl::StatusOr<ResultPipe>& pipe,
                 RunResult* result) {
  result->status = TestStatus::kHarnessError;
  result->stage = "harness";
  const bool empty = pipe.ok() && pipe->result.empty();
  result->error_type = empty ? "NoResult" : "BadResult";
  if (empty) {
    result->error_message = absl::StrCat(
        "the child exited with code ", WEXITSTATUS(facts.wait_status), " without a result",
        pipe->last_stage.empty() ? "" : absl::StrCat(" (in stage ", pipe->last_stage, ")"));
  } else if (!pipe.ok()) {
    result->error_message =
        absl::StrCat("the child's result pipe could not be read: ", pipe.status().message());
  } else {
    result->error_message =
        absl::StrCat("the child's result could not be read: ", pipe->result.substr(0, 200));
  }
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
  const absl::StatusOr<ResultPipe> pipe = SplitResultPipe(facts.result_text);
  const bool have_result =
      pipe.ok() && !pipe->result.empty() && ParseChildResult(pipe->result, &parsed).ok();
  // Where a child that died was: its last stage mark, else "run"; over several ranks, the
  // rank it names (doc/ranks.md).
  const std::string died_in = pipe.ok() && !pipe->last_stage.empty() ? pipe->last_stage : "run";
  const std::string rank =
      pipe.ok() && pipe->last_rank ? absl::StrCat(" (rank ", *pipe->last_rank, ")") : "";
  if (facts.timed_out) {
    SetFailure(TestStatus::kTimeout, died_in,
               absl::StrCat("deadline ", facts.timeout_s, " s",
                            facts.killed ? "; SIGKILL after grace" : "; SIGTERM", rank),
               &result);
  } else if (facts.oom_kills > 0) {
    SetFailure(TestStatus::kOom, died_in,
               absl::StrCat("memory limit ", result.mem_limit_bytes, " bytes (",
                            result.mem_limit_method, ", ", facts.oom_kills, " OOM kill",
                            facts.oom_kills == 1 ? "" : "s", ")", rank),
               &result);
  } else if (WIFSIGNALED(ws)) {
    result.status = TestStatus::kCrash;
    result.stage = died_in;
    result.status_detail = SignalName(WTERMSIG(ws)) + rank;
    result.error_type = "Signal";
    result.error_message = absl::StrCat("killed by ", SignalName(WTERMSIG(ws)),
                                        WCOREDUMP(ws) ? " (core dumped)" : "", rank);
  } else if (have_result) {
    result = parsed;
  } else {
    SetNoResult(facts, pipe, &result);
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
