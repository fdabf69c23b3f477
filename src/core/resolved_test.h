// The resolved test: the unit a sweep plans, stores, runs, resumes and
// reports. Its identity is the TestSpec (hashed into test_id); the rest is
// everything needed to execute it exactly as planned, decided once over the
// whole plan (src/sweep/resolve.h) and stored with the plan, so that a resume
// replays it instead of deriving it again.
#ifndef COMPATLAB_CORE_RESOLVED_TEST_H_
#define COMPATLAB_CORE_RESOLVED_TEST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/records.h"

namespace compatlab {

// --max-measure-s's default: the measurement's budget in seconds (doc/probe.md,
// "Steady state"); chosen so that `make sweep` keeps its time.
inline constexpr double kDefaultMaxMeasureS = 2.0;

// Steady-state measurement rule passed to the probe: warmup calls, then at
// least min_iters calls and min_time_s seconds, then on until the median's
// confidence interval is tight; max_time_s (--max-measure-s) is the budget of
// the whole measurement from the first warm-up call: no call starts once it
// is spent and one steady call ran (doc/probe.md, "Steady state"; 0: no
// budget and no extension past the minimums).
struct MeasureOptions {
  int warmup = 3;
  int min_iters = 10;
  double min_time_s = 1.0;
  double max_time_s = kDefaultMaxMeasureS;

  bool operator==(const MeasureOptions&) const = default;
};

// The profiler's windows (TestExecution::profile; doc/probe.md, "Profile").
inline constexpr std::string_view kProfileSteady = "steady";
inline constexpr std::string_view kProfilePrepare = "prepare";

// How a test is executed, beyond its identity. The deadline is the spec's
// timeout_s. grace_s and mem_limit_bytes are what the plan chose; a resume
// may override them (and the timeout) for the tests still to run.
struct TestExecution {
  // The target profile's content (canonical JSON object text) as planned; ""
  // for harness tests (the probe then uses its built-in cpu profile).
  std::string target_profile_json;
  // torch.compile options (JSON object text) decided over the whole plan; ""
  // in eager mode.
  std::string compile_options_json;
  bool warm = false;  // compile mode: rerun on the same cache (warm_* fields)
  MeasureOptions measure;
  std::string python;     // the interpreter that runs the probe
  std::string probe_dir;  // the probe's package directory
  double grace_s = 2.0;   // SIGTERM to SIGKILL
  int64_t mem_limit_bytes = int64_t{8} << 30;
  std::string mem_limit_method;  // "" = the best available
  // torch.profiler's window (--profile, or the target profile's `profile`):
  // "" none, "steady" (after the measured steady calls) or "prepare" (the
  // first call); doc/probe.md, "Profile".
  std::string profile;
  // The named stack `python` belongs to ("default", a `stack add` name; "" for an
  // interpreter given by path): stored with each run (RunResult::stack).
  std::string stack;

  bool operator==(const TestExecution&) const = default;
};

// A planned test. `execution` is unset only for a plan stored by a compatlab
// older than the execution settings (such a plan cannot be resumed exactly).
struct ResolvedTest {
  TestSpec spec;
  std::optional<TestExecution> execution;
};

}  // namespace compatlab

#endif  // COMPATLAB_CORE_RESOLVED_TEST_H_
