// The status decision: from the facts of a test process's end to a result.
// Pure (no process, no clock); the one place in the runner, with the protocol
// parser (protocol.h), that assigns a status. Rules: doc/worker-protocol.md,
// "How the supervisor decides".
#ifndef COMPATLAB_RUNNER_DECIDE_STATUS_H_
#define COMPATLAB_RUNNER_DECIDE_STATUS_H_

#include <cstdint>
#include <string>

#include "core/records.h"
#include "runner/launcher.h"

namespace compatlab {

// What the supervisor observed of one test process, from start to reaping.
struct ExitFacts {
  // Not empty: no process was started (pipes, memory limit or the launcher
  // failed); the other process facts are then unset.
  std::string launch_error;
  int wait_status = 0;      // as waitpid() returned it
  bool timed_out = false;   // the deadline passed (SIGTERM to the group)
  bool killed = false;      // SIGKILL followed after the grace delay
  double timeout_s = 0;     // the deadline the test ran with
  int64_t oom_kills = 0;    // the memory limit's OOM-kill counter
  std::string result_text;  // what the child wrote on its result pipe
  std::string stdout_tail;
  std::string stderr_tail;
  double wall_s = 0;  // start to reaped
  int64_t mem_limit_bytes = 0;
  std::string mem_limit_method;
  StackInfo stack;  // the launcher's interpreter, for results without versions
};

// The result of a test from its facts, in order: no process (harness_error,
// LaunchError), deadline (timeout), OOM kills (oom), terminating signal
// (crash), the child's result object (its status: pass, fail_*, skipped,
// oom, harness_error), else harness_error (NoResult, BadResult). The
// supervisor's facts (wall time, exit code, signal, memory limit, tails) are
// kept in every case; stack versions come from the child's result when it
// parsed, else from `facts.stack`.
RunResult DecideStatus(const ExitFacts& facts);

// "SIGSEGV" for 11, "SIG42" for an unnamed one.
std::string SignalName(int sig);

}  // namespace compatlab

#endif  // COMPATLAB_RUNNER_DECIDE_STATUS_H_
