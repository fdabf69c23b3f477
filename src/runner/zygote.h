// The real launcher: a Python zygote that imported torch, transformers and the
// suite's modelling modules once, and forks a child per test. Speaks
// doc/worker-protocol.md; JSON stays inside this file pair.
#ifndef COMPATLAB_RUNNER_ZYGOTE_H_
#define COMPATLAB_RUNNER_ZYGOTE_H_

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runner/guardian.h"
#include "runner/launcher.h"

namespace compatlab {

struct ZygoteOptions {
  std::string python;                // interpreter path
  std::string probe_dir;             // directory holding compatlab_probe/
  std::vector<std::string> preload;  // model types whose modules to import
  // Python modules the zygote imports after them (an op sweep's OpInfo database,
  // doc/worker-protocol.md, `preload`); a failure is one of import_failures().
  std::vector<std::string> preload_modules;
  std::map<std::string, std::string> env;  // extra environment for zygote and tests
  std::string log_path;                    // zygote's own stdout/stderr ("" = /dev/null)
  // Non-empty: the zygote runs the calibration compile at every start
  // (doc/worker-protocol.md, `preload`), leaving the seed of the tests'
  // compile caches in this directory (replaced at each start).
  std::string compile_seed_dir;
  double start_timeout_s = 900;  // import + preload
  double fork_timeout_s = 60;
};

// Not thread-safe: used from the supervisor's single thread.
class ZygoteLauncher : public TestLauncher {
 public:
  // `guardian` (may be null, not owned) learns every zygote pid.
  ZygoteLauncher(ZygoteOptions options, Guardian* guardian);
  ~ZygoteLauncher() override;

  // Starts the zygote now (it is otherwise started by the first Launch).
  absl::Status Start();

  absl::StatusOr<pid_t> Launch(const LaunchRequest& request, int stdout_fd, int stderr_fd,
                               int result_fd) override;
  bool OnChildExit(pid_t pid, int wait_status) override;
  StackInfo Stack() const override { return stack_; }
  int Restarts() const override { return restarts_; }

  // The calibration compile of the latest start: its seconds (the compiler's
  // start-up), or nullopt with the reason in compiler_startup_error() ("" when
  // none was asked for).
  std::optional<double> compiler_startup_s() const { return compiler_startup_s_; }
  const std::string& compiler_startup_error() const { return compiler_startup_error_; }
  // Seconds per calibration phase ("imports", "vec_isa", "compile"), as reported.
  const std::map<std::string, double>& compiler_startup_phases() const {
    return compiler_startup_phases_;
  }

  // Model types whose modelling module failed to import in the zygote.
  const std::map<std::string, std::string>& import_failures() const { return import_failures_; }
  pid_t zygote_pid() const { return pid_; }

 private:
  absl::Status Spawn();
  // Sends the preload message and waits for the zygote's ready message.
  absl::Status Handshake();
  void Stop(bool kill_now);
  absl::StatusOr<std::string> Receive(double timeout_s);
  absl::StatusOr<pid_t> TryLaunch(const LaunchRequest& request, int stdout_fd, int stderr_fd,
                                  int result_fd);

  ZygoteOptions options_;
  Guardian* guardian_;
  pid_t pid_ = -1;
  int control_fd_ = -1;
  int64_t next_request_id_ = 1;
  int starts_ = 0;
  int restarts_ = 0;
  StackInfo stack_;
  std::map<std::string, std::string> import_failures_;
  std::optional<double> compiler_startup_s_;
  std::string compiler_startup_error_;
  std::map<std::string, double> compiler_startup_phases_;
};

}  // namespace compatlab

#endif  // COMPATLAB_RUNNER_ZYGOTE_H_
