// Execution: a resolved plan run through the runner (runner/supervisor.h)
// into the store, one committed record per finished test. Like ninja's
// Builder, it decides what runs next: at most `jobs` tests at once, a warm
// rerun of a compiled test on its own compile-cache directory before the next
// test, a load server row after its group's offline row (whose throughput it
// is given), and nothing more once the run stops.
#ifndef COMPATLAB_SWEEP_EXECUTE_H_
#define COMPATLAB_SWEEP_EXECUTE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "core/records.h"
#include "core/resolved_test.h"
#include "runner/guardian.h"
#include "runner/launcher.h"
#include "runner/memlimit.h"
#include "store/store.h"

namespace compatlab {

struct ExecuteOptions {
  std::string sweep_id;
  std::string stack;  // the sweep's named stack, stored with each run (RunResult::stack)
  int jobs = 1;
  // Per child: its compile threads, and its intra-op threads unless the model is reduced
  // (PlannedReduced: 1).
  int64_t torch_num_threads = 1;
  // Each compiled test gets the empty directory <root>/<run_id> as its
  // compile cache, removed when it is reported; the root is emptied first and
  // removed at the end. "" = torch's defaults (no warm rerun then).
  std::string compile_cache_root;
  // A directory whose files every cold compile-cache directory of a test that
  // TakesCalibration starts with (copied in before the test starts): the
  // calibration compile's seed, artifacts of no model's graph. "" = the
  // directories start empty.
  std::string compile_seed_dir;
  // The local compile store (cache/store.h; "" none): a model-cold compiled pass's entry,
  // written by its child, is checked and kept there (RunResult::compile_entry), the store
  // bounded to compile_store_max_bytes. With load_from_store, a cold compile loads the
  // entry of its key from it before its first call (sweep --cache-from, pulled first).
  std::string compile_store_root;
  int64_t compile_store_max_bytes = 0;
  bool load_from_store = false;
  // The calibration compile's seconds, stored as compiler_startup_s in every
  // record that TakesCalibration (nullopt: none ran, or it failed).
  std::optional<double> compiler_startup_s;
  // The store's artifact directory (Store::ArtifactDir): a profiled test's trace
  // is written under its tmp/ and kept as <digest>.json.gz. "" = no traces.
  std::string artifact_dir;
  // Given with --resume: replace the stored values for every test run here.
  std::optional<double> timeout_s;
  std::optional<double> grace_s;
  std::optional<int64_t> mem_limit_bytes;
  // Stored in every record.
  std::string host;
  std::string cpu_model;
  size_t tail_bytes = 64 * 1024;           // kept per output stream
  std::string limit_prefix = "compatlab";  // prefix of per-test cgroup names
  // A reduced model's failure (NeedsReductionRerun, core/blame.h) runs once more
  // at full size, or at the milder reduction when full size does not fit
  // ReductionRerunBudget, before it is recorded (--no-rerun-reduced: false).
  bool rerun_reduced = true;
  // Noisy tests measured again (--remeasure-noisy, doc/results-schema.md, "Noise"): up to
  // this many passing tests whose timing was noisy are held back when they finish; once
  // every other test is done, the sweep waits up to remeasure_wait_s for `machine_quiet`
  // (polled twice a second) and runs each once more in a new process (a cold compile
  // cache, no warm rerun); MergeRemeasureResult makes their records. 0: none.
  int remeasure_noisy = 0;
  double remeasure_wait_s = 60;
  std::function<bool()> machine_quiet;  // null: never quiet
};

// RunResult::remeasure_state besides "" (not measured again).
inline constexpr std::string_view kRemeasureQuiet = "quiet";
inline constexpr std::string_view kRemeasureStillNoisy = "still_noisy";
inline constexpr std::string_view kRemeasureFailedPrefix = "failed: ";
inline constexpr std::string_view kRemeasureMachineBusy = "machine_busy";

// Folds a noisy test's second measurement into its first: when `again` passed quietly,
// its result becomes the row's (state quiet; the first's warm rerun and --profile kept); when it
// passed noisy again, the row keeps the one with the lower steady median (state still_noisy, still
// marked); when it failed, the first stays (state "failed: STATUS"). The other measurement's
// steady_median_s, prepare_s and noisy_reason go to remeasure_other_*.
void MergeRemeasureResult(const RunResult& again, RunResult* first);

// Whether `spec` takes the sweep's calibration compile (its seed directory and
// compiler_startup_s): compile mode with inductor on a target whose device is
// the CPU; `target_profile_json` "" is the probe's built-in cpu profile. The
// calibration runs in the zygote, which must not start a GPU's runtime before
// it forks, so a GPU target's start-up (Triton's) stays in its prepare_s.
bool TakesCalibration(const TestSpec& spec, const std::string& target_profile_json);

// The memory a reduction rerun may plan for (kind_params fit_bytes): the test's
// memory limit, or the machine's MemAvailable shared by `jobs` when smaller
// (`mem_available_bytes` < 0: unknown, the limit alone).
int64_t ReductionRerunBudget(int64_t mem_limit_bytes, int64_t mem_available_bytes, int jobs);

// Folds a reduction rerun's result into the failed run's: rerun_status,
// rerun_error_signature (FailureSignature of the rerun), rerun_size (full when the
// rerun reported reduced 0, else milder) and rerun_reduction.
void MergeRerunResult(const RunResult& rerun, RunResult* failed);

struct ExecuteCallbacks {
  std::function<void(const std::string& run_id, const TestSpec& spec)> on_start;
  std::function<void(const RunRecord& record)> on_finish;  // before it is stored
  std::function<void()> on_tick;                           // about once a second
  // Noisy tests measured again: a line for people ("waiting for quiet", what became of
  // them), the seconds waited for quiet once that wait ends, and each record made by
  // MergeRemeasureResult (its first measurement went to on_finish), before it is stored.
  std::function<void(const std::string& line)> on_note;
  std::function<void(double seconds)> on_quiet_wait;
  std::function<void(const RunRecord& record)> on_remeasured;
};

// Folds the warm rerun's result into the cold run's: warm_prepare_s,
// warm_cache_hits/misses and warm_state (warm when the rerun passed with
// cache hits, no_cache_hits when it had none, "failed: STATUS" otherwise).
void MergeWarmResult(const RunResult& warm, RunResult* cold);

// Runs `tests` in order, each as its stored execution settings say (with the
// overrides of `options`), and commits one record per finished test to
// `store` (sweep options.sweep_id, which must plan them). A compiled test
// whose execution asks for warm and whose cold run passed or failed accuracy
// runs again in a new process on the same cache directory; its record holds
// both (MergeWarmResult). With options.rerun_reduced, a reduced model's failure
// (NeedsReductionRerun) runs once more in a new process through the same
// supervisor, limits and cache rules, with kind_params size full and fit_bytes
// ReductionRerunBudget (the child builds the full config when its estimate fits,
// else the milder reduction; it stays offline); its record holds both
// (MergeRerunResult) and its blame follows (core/blame.h). Kind load: a server row starts only once
// the offline row of its group (plan/plan.h, LoadBaseTestId) is recorded, in this call or before it
// (a resume reads it from the store), and carries that row's load_requests_per_s and run_id as its
// LaunchRequest::load_base when it passed (else none: the child measures its own); so every rate of
// a group multiplies one figure. Likewise, without --slo, an offline or server row starts only once
// its group's single_stream row (LoadSloTestId) is recorded, and carries that row's
// load_slo_ttft_s, load_slo_itl_s and run_id as its LaunchRequest::load_slo when it passed (else
// none: the child calibrates its own); so every row of a group is judged by one objective. Other
// tests start past a waiting one, in plan order. REQUIRES: every test has its execution settings; a
// single thread; `launcher`, `limiter` and `store` outlive the call, `guardian` may be null.
// Returns OK when every test was recorded; Cancelled
// ("interrupted by SIGINT") when a signal stopped the run: the running tests
// are killed and none of them is recorded (a resume runs them; so are the noisy tests held
// back to be measured again: options.remeasure_noisy); a store
// error stops the run the same way and is returned.
absl::Status ExecutePlan(const std::vector<ResolvedTest>& tests, const ExecuteOptions& options,
                         TestLauncher* launcher, MemoryLimiter* limiter, Guardian* guardian,
                         Store* store, const ExecuteCallbacks& callbacks);

}  // namespace compatlab

#endif  // COMPATLAB_SWEEP_EXECUTE_H_
