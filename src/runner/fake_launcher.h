// A TestLauncher for tests: forks the test process directly from the calling
// (test) process and runs a C++ stand-in for the probe's harness kinds, so the
// supervisor can be tested without Python.
#ifndef COMPATLAB_RUNNER_FAKE_LAUNCHER_H_
#define COMPATLAB_RUNNER_FAKE_LAUNCHER_H_

#include <vector>

#include "runner/launcher.h"

namespace compatlab {

// Kinds: "noop" (pass), "hang", "hang-hard" (ignores SIGTERM, leaves a
// grandchild holding its output; both print their pids), "segfault",
// "abort", "oom" (touches memory until stopped), "flood" (kind_params
// "bytes" to stdout and stderr, then pass), "exit3" (exits 3 without a
// result), "bad-result", "fail" (a fail_to_run result with a traceback),
// "compile-cache" (a cold run fills its cache directory, a warm run hits it).
// A model test (model_id not "none") runs as "noop" in eager mode and as
// "compile-cache" in compile mode; kind load in eager mode as "load" (a
// single_stream row passes with objectives from seq_len, an offline row with
// load_requests_per_s seq_len / 8, the row of kind_params fake_fail's scenario
// fails; offline and server rows report the load_slo, server rows the load_base
// they were given); an
// eager model test with kind_params fake_reduction as a reduced model that
// fails only when reduced ("reduced-only") or at every size ("always"); a
// full-size request with fit_bytes below kind_params fake_full_bytes (default
// 1000) reports the milder reduction; one with kind_params fake_noisy as a test timed
// on a busy machine: "always" noisy (steady 8 ms), "once" noisy on its test's first
// launch only (then quiet, steady 4 ms), "never" quiet.
class FakeLauncher : public TestLauncher {
 public:
  absl::StatusOr<pid_t> Launch(const LaunchRequest& request, int stdout_fd, int stderr_fd,
                               int result_fd) override;
  bool OnChildExit(pid_t, int) override { return false; }
  StackInfo Stack() const override { return {"fake", "fake", "fake"}; }
  int Restarts() const override { return 0; }
  int launches() const { return launches_; }
  // Every request launched, in order (their `limit` is null).
  const std::vector<LaunchRequest>& requests() const { return requests_; }

 private:
  int launches_ = 0;
  std::vector<LaunchRequest> requests_;
};

}  // namespace compatlab

#endif  // COMPATLAB_RUNNER_FAKE_LAUNCHER_H_
