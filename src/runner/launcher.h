// How a test process comes to life. The supervisor owns deadlines, limits and
// wait statuses; a launcher only starts the process. The real launcher forks
// from a warmed Python zygote (zygote.h); tests use fakes that fork directly.
#ifndef COMPATLAB_RUNNER_LAUNCHER_H_
#define COMPATLAB_RUNNER_LAUNCHER_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/records.h"
#include "core/resolved_test.h"
#include "runner/memlimit.h"

namespace compatlab {

// LaunchRequest::cache_phase of a compiled test: its first process on a fresh
// compile-cache directory, or the warm rerun on the same directory.
inline constexpr std::string_view kCachePhaseCold = "cold";
inline constexpr std::string_view kCachePhaseWarm = "warm";

// Kind load, a server row: the offline throughput its rate multiplies, measured by
// the offline row of its group (plan/plan.h, LoadBaseTestId) in run `run_id`.
struct LoadBase {
  double offline_requests_per_s = 0;
  std::string run_id;

  bool operator==(const LoadBase&) const = default;
};

// Kind load, an offline or server row without --slo: the goodput objectives of its group's
// single_stream row (plan/plan.h, LoadSloTestId), recorded by run `run_id`: that row's own
// p50s times the probe's multiplier, so every row of a group is judged by one objective.
struct LoadSlo {
  double ttft_s = 0;
  double itl_s = 0;
  std::string run_id;

  bool operator==(const LoadSlo&) const = default;
};

struct LaunchRequest {
  std::string run_id;
  TestSpec spec;
  int64_t torch_num_threads = 1;
  const MemoryLimit* limit = nullptr;  // not owned; outlives the test
  MeasureOptions measure;
  // The target profile (targets/NAME.json) as JSON object text, passed to the
  // probe as "target_profile"; "" lets the probe use its built-in cpu profile.
  std::string target_profile_json;
  // torch.compile options as JSON object text; "" in eager mode.
  std::string compile_options_json;
  // Compile-cache directory of the test ("" = torch's default) and whether
  // this is its first (cold) or a second (warm) process on it.
  std::string compile_cache_dir;
  std::string cache_phase;  // "", kCachePhaseCold or kCachePhaseWarm
  // The compile store (doc/compile-cache.md): the local store's entries directory a cold
  // compile loads its key's entry from ("" none: sweep --cache-from), and the directory a
  // model-cold pass writes its entry into ("" none), sent as "compile_store_dir" and
  // "compile_entry_out".
  std::string compile_store_dir;
  std::string compile_entry_out;
  // Kind load, a server row whose group's offline row passed: its base, sent as
  // "load_base"; unset otherwise (the child then measures its own).
  std::optional<LoadBase> load_base;
  // Kind load, an offline or server row whose group's single_stream row passed: its
  // objectives, sent as "load_slo"; unset otherwise (the child then calibrates its own).
  std::optional<LoadSlo> load_slo;
  // inductor's compile threads in the child, sent as "compile_threads"; 0: torch_num_threads.
  int64_t compile_threads = 0;
  // The profiler's window ("" none, "steady", "prepare"; TestExecution::profile)
  // and the file its gzip trace goes to ("" none), sent as "profile".
  std::string profile;
  std::string profile_trace_path;
};

// Software stack of the launcher's interpreter, as it reported it.
struct StackInfo {
  std::string python_version;
  std::string torch_version;
  std::string transformers_version;
};

class TestLauncher {
 public:
  virtual ~TestLauncher() = default;

  // Starts `request` as a new process whose pid is also its process-group id,
  // with stdout, stderr and the result pipe on the given write ends (the
  // launcher passes them on; the caller still closes its own copies).
  // The returned pid is, or becomes, a child of the calling process: a
  // launcher that double-forks REQUIRES the caller to be a child subreaper.
  // An error means no process was started.
  virtual absl::StatusOr<pid_t> Launch(const LaunchRequest& request, int stdout_fd, int stderr_fd,
                                       int result_fd) = 0;

  // The supervisor reaped `pid`, which was not a running test. Returns true
  // if it was one of the launcher's own processes (a zygote that died).
  virtual bool OnChildExit(pid_t pid, int wait_status) = 0;

  // Stack of the interpreter tests run under ("" fields when unknown).
  virtual StackInfo Stack() const = 0;

  // How many times a helper had to be restarted.
  virtual int Restarts() const = 0;
};

}  // namespace compatlab

#endif  // COMPATLAB_RUNNER_LAUNCHER_H_
