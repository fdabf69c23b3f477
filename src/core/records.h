// Typed records shared by every module: what a test is (TestSpec), what one
// execution of it produced (RunResult), and the stored row (RunRecord).
//
// These structs are the core's vocabulary. JSON appears only at the edges
// (probe protocol, HTTP, `--format json`), converted by the module that owns
// that edge. Field names follow doc/results-schema.md exactly.
#ifndef COMPATLAB_CORE_RECORDS_H_
#define COMPATLAB_CORE_RECORDS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace compatlab {

// The outcome of one test execution. The full set; see doc/results-schema.md.
enum class TestStatus {
  kPass,
  kFailAccuracy,
  kFailToLoad,
  kFailToCompile,
  kFailToRun,
  kTimeout,
  kCrash,
  kOom,
  kSkipped,
  kHarnessError,
};

// "pass", "fail_accuracy", ... as stored.
std::string_view TestStatusName(TestStatus status);
// Inverse of TestStatusName; InvalidArgument for an unknown name.
absl::StatusOr<TestStatus> ParseTestStatus(std::string_view name);
// Every status, in declaration order.
const std::vector<TestStatus>& AllTestStatuses();

// The modes a test runs in (TestSpec::mode; doc/results-schema.md).
inline constexpr std::string_view kModeEager = "eager";
inline constexpr std::string_view kModeCompile = "compile";
// torch.export, then the target profile's lowering and runtime (doc/targets.md).
inline constexpr std::string_view kModeExport = "export";
// The model_id of harness kinds (noop, faults): they build no model.
inline constexpr std::string_view kHarnessModelId = "none";
// RunResult::warm_state besides "" (no warm rerun): the rerun passed with cache
// hits, passed without any, or failed ("failed: STATUS (message)").
inline constexpr std::string_view kWarmStateWarm = "warm";
inline constexpr std::string_view kWarmStateNoCacheHits = "no_cache_hits";
// RunResult::compile_entry: the child wrote its entry (compile_entry_out), and the
// supervisor kept it in the local compile store as "kept ID" (doc/compile-cache.md).
inline constexpr std::string_view kCompileEntryWritten = "written";
inline constexpr std::string_view kCompileEntryKeptPrefix = "kept ";
inline constexpr std::string_view kWarmStateFailedPrefix = "failed: ";

// One test = model x target x mode x kind x shape x dtype (+ kind parameters).
// Everything here is part of the test's identity (test_id) except timeout_s.
struct TestSpec {
  // "hf:llama", "hub:ORG/NAME@COMMIT", "ckpt:<sha256>", "code:NAME@<sha256 prefix>", or
  // kHarnessModelId.
  std::string model_id;
  std::string model_type;   // transformers model type ("llama"), "" for harness kinds.
  std::string model_class;  // head class chosen at plan time ("LlamaForCausalLM"), may be "".
  // Local checkpoint directory, or a code model's "FILE.py:FUNCTION" (absolute FILE); not
  // part of the identity (a code model's id holds its file's hash).
  std::string model_path;
  std::string target = "cpu";
  std::string mode{kModeEager};
  std::string backend;  // compile backend; "" in eager mode.
  std::string kind = "forward";
  std::string dtype = "float32";
  int64_t batch_size = 1;
  int64_t seq_len = 32;
  // Extra parameters of the kind, e.g. {"rep": "17"} or {"new_tokens": "16"}.
  // Values are strings so that the identity hash is stable.
  std::map<std::string, std::string> kind_params;
  // Processes of one process group the test runs as (doc/ranks.md): 1 is the one-process
  // test; part of the identity only when it is not 1, so older tests keep their ids.
  int64_t ranks = 1;
  double timeout_s = 300;  // Per-test deadline; not part of the identity.
  // Dynamic shapes (schema 29; doc/probe.md, "Dynamic shapes"): "" a static test (one
  // shape), kDynamicTrue (torch.compile(dynamic=True)) or kDynamicMark (mark_dynamic on
  // the batch and sequence dims that vary). A dynamic test runs every shape of `shapes`
  // ("BxS,BxS,...", the plan's batch sizes x sequence lengths in order; batch_size and
  // seq_len are its first) in one process on one compiled model. Both are part of the
  // identity when set; a static test's id is what it was before them.
  std::string dynamic;
  std::string shapes;

  // Stable hash of the identity fields (hex, 32 chars). Never includes the
  // software stack or the host, so the same test on two stacks shares it.
  // Never throws: bytes that are not UTF-8 are hashed as U+FFFD (plans only
  // hold UTF-8, since suites and flags are checked; this is the contract for
  // any other caller).
  std::string TestId() const;

  // A harness test (noop, faults): no model, no target profile.
  bool IsHarness() const { return model_id == kHarnessModelId; }
  // Compile mode: torch.compile with the profile's backend.
  bool IsCompiled() const { return mode == kModeCompile; }
  // A dynamic-shapes test: one test over every shape of `shapes`.
  bool IsDynamic() const { return !dynamic.empty(); }
};

// TestSpec::dynamic's values besides "" (static).
inline constexpr std::string_view kDynamicTrue = "true";
inline constexpr std::string_view kDynamicMark = "mark";
// One (batch size, sequence length) of a dynamic test.
struct Shape {
  int64_t batch_size = 1;
  int64_t seq_len = 1;
  bool operator==(const Shape&) const = default;
};
// "1x16,1x32" for `shapes` (TestSpec::shapes' canonical text).
std::string ShapesText(const std::vector<Shape>& shapes);
// Inverse of ShapesText: 1 to kMaxDynamicShapes (core/limits.h) distinct shapes, each
// dimension from 1 to 1048576; InvalidArgument otherwise (a stored or imported value is
// untrusted).
absl::StatusOr<std::vector<Shape>> ParseShapesText(std::string_view text);

// What the supervisor and the probe learned from one execution.
struct RunResult {
  TestStatus status = TestStatus::kHarnessError;
  std::string status_detail;  // signal name for crash, reason for skipped, ...
  std::string stage;          // failing stage: import, build, prepare, steady, run, harness.
  std::string error_type;
  std::string error_message;
  std::string error_traceback;  // bounded

  // Metrics (absent when not measured).
  std::optional<double> build_s;
  std::optional<double> prepare_s;
  std::optional<double> steady_median_s;
  std::optional<double> steady_p90_s;
  std::optional<int64_t> steady_iters;
  std::optional<int64_t> param_count;
  std::optional<int64_t> host_peak_rss_bytes;
  std::string memory_method;  // how host_peak_rss_bytes was measured
  std::optional<int64_t> torch_num_threads;

  // Supervisor facts.
  double wall_s = 0;                   // fork request to reaped, seconds
  std::optional<int64_t> exit_code;    // set when the child exited normally
  std::optional<int64_t> term_signal;  // set when the child was killed by a signal
  int64_t mem_limit_bytes = 0;
  std::string mem_limit_method;  // "cgroup_v1", "cgroup_v2", "rlimit"
  std::string stdout_tail;       // last 64 KiB
  std::string stderr_tail;       // last 64 KiB

  // Software stack as the probe reported it.
  std::string torch_version;
  std::string transformers_version;
  std::string python_version;
  std::string resolved_model_class;  // the class the probe actually built

  // --- Schema version 2: compile mode, generate/train, accuracy, audit. ---
  // The probe's metric keys are these member names (doc/worker-protocol.md).
  std::string compile_options;  // JSON object text passed to torch.compile; "" in eager
  std::optional<double> eager_steady_median_s;  // compile mode: eager calls in the same child
  std::optional<double> eager_steady_p90_s;
  std::optional<double> speedup;  // eager_steady_median_s / steady_median_s
  std::optional<double> tokens_per_s;
  std::optional<int64_t> device_peak_bytes;
  std::string device_memory_method;
  // Accuracy against the CPU eager float64 reference (doc/accuracy.md).
  std::string acc_ref_dtype;
  std::optional<double> acc_max_abs_err;
  std::optional<double> acc_max_rel_err;
  std::optional<double> acc_rmse;
  std::optional<double> acc_eager_rmse;
  std::optional<double> acc_cosine;
  std::optional<double> acc_atol;
  std::optional<double> acc_rtol;
  std::optional<double> acc_multiplier;
  std::string acc_rule;  // allclose, rmse_ratio, cosine, baseline, failed; "" if not compared
  // Kind generate.
  std::optional<int64_t> gen_new_tokens;
  std::optional<double> gen_prefill_s;
  std::optional<double> gen_decode_token_s;
  std::optional<double> gen_token_match_rate;
  std::optional<int64_t> gen_first_divergence;
  std::optional<double> gen_divergence_logit_gap;  // reference's top-2 logit gap there
  std::optional<double> gen_tie_tolerance;         // largest gap still counted as a tie
  // Kind generate, long outputs (schema 12): curves as JSON array text of [position, value].
  std::string gen_match_curve;   // match rate of new tokens 0..p-1
  std::string gen_decode_curve;  // decode step seconds from position p
  std::string gen_mem_curve;     // RSS over the first token's, bytes
  std::optional<int64_t> gen_mem_growth_bytes;
  std::optional<int64_t> gen_ref_distinct_tokens;
  std::optional<double> gen_ref_near_tie_share;
  // Kind train.
  std::optional<int64_t> train_steps;
  std::optional<double> train_first_step_s;
  std::optional<double> train_steady_step_s;
  std::string train_loss;                        // JSON array text
  std::string train_ref_loss;                    // JSON array text
  std::optional<double> train_grad_cosine;       // step 1's
  std::optional<double> train_grad_cosine_last;  // step K's
  std::optional<double> train_grad_cosine_min;   // threshold of the rule
  std::optional<double> train_loss_max_abs_err;
  // Kind train, learning runs (schema 12): curves as JSON array text, one value per step.
  std::string train_grad_norm;            // the target's global gradient norm
  std::string train_ref_grad_norm;        // the reference's
  std::string train_eager_loss;           // the CPU eager run at the test's dtype (learning runs)
  std::optional<double> train_loss_rmse;  // RMSE(train_loss, train_ref_loss)
  std::optional<double> train_eager_loss_rmse;  // RMSE(train_eager_loss, train_ref_loss)
  // CPU-fallback audit and dynamo counters.
  std::string fallback_audit;  // not_applicable, audited, unavailable: ...
  std::optional<int64_t> ops_executed;
  std::string fallback_ops;             // JSON object text {op: count}
  std::string backend_fallback_counts;  // JSON object text from the backend's own counters
  std::optional<int64_t> graph_breaks;
  std::optional<int64_t> unique_graphs;
  std::optional<int64_t> captured_calls;
  std::optional<int64_t> frames_run_eagerly;  // frames dynamo gave up on (recompile limit)
  std::string graph_break_reasons;            // JSON array text
  // Compile cache: this run (cold) and the warm rerun in a second process.
  std::optional<int64_t> cache_hits;
  std::optional<int64_t> cache_misses;
  std::string warm_state;  // "" (no warm run), warm, no_cache_hits, failed: STATUS
  std::optional<double> warm_prepare_s;
  std::optional<int64_t> warm_cache_hits;
  std::optional<int64_t> warm_cache_misses;
  // Normalised signature of the failure (core/error_signature); "" for a pass.
  std::string error_signature;

  // --- Schema version 3. ---
  std::optional<double> steady_min_s;  // the fastest steady-state iteration

  // --- Schema version 4. ---
  // Compile mode: seconds of the sweep's calibration compile (the compiler's
  // start-up, paid once per sweep; doc/results-schema.md, "Compile times").
  std::optional<double> compiler_startup_s;

  // --- Schema version 5: kind load (doc/probe.md, "Kind load"). ---
  std::string load_scenario;  // single_stream, offline, server
  std::string load_engine;    // continuous_batching, static_batch
  std::optional<int64_t> load_requests;
  std::optional<int64_t> load_output_tokens;
  std::optional<double> load_duration_s;
  std::optional<double> load_offline_requests_per_s;  // server: the base the rate multiplies
  std::optional<double> load_arrival_rate_per_s;      // server: the Poisson arrival rate
  std::optional<double> load_ttft_p50_s;
  std::optional<double> load_ttft_p90_s;
  std::optional<double> load_ttft_p99_s;
  std::optional<double> load_itl_p50_s;
  std::optional<double> load_itl_p90_s;
  std::optional<double> load_itl_p99_s;
  std::optional<double> load_e2e_p50_s;
  std::optional<double> load_e2e_p90_s;
  std::optional<double> load_e2e_p99_s;
  std::optional<double> load_output_tokens_per_s;
  std::optional<double> load_requests_per_s;
  std::optional<double> load_goodput_per_s;
  std::optional<double> load_slo_ttft_s;
  std::optional<double> load_slo_itl_s;
  std::string load_slo_source;  // kind_params, single_stream_row (v16), single_stream_p50x3
  std::optional<int64_t> load_max_concurrency;
  std::optional<int64_t> load_recompiles;  // compile mode: during the measured runs (v17)
  std::string load_ttft_dist;              // JSON array text, bounded (doc/limits.md)
  std::string load_itl_dist;
  std::string load_e2e_dist;

  // --- Schema version 6: kind load's shared base (doc/probe.md, "Kind load"). ---
  std::optional<double> load_rate_multiple;  // server: kind_params rate as a number (0.9)
  std::string load_base_source;              // server: offline_row, this_child
  std::string load_base_run_id;              // server, offline_row: the offline row's run_id

  // --- Schema version 7: accuracy verdicts, the test's own memory (issue 10). ---
  std::string acc_not_measured;  // reason code (doc/accuracy.md, "Not measured"); "" if measured
  std::string acc_ref_fallback;  // why float64 was not the reference; "" if it was
  std::optional<int64_t> acc_nonfinite;    // forward: target non-finite where reference is not
  std::optional<int64_t> ill_conditioned;  // CPU eager baseline rows: 1 when the gap fails the rule
  // The test's own host memory: peak RSS over build..steady minus the baseline RSS.
  std::optional<int64_t> host_mem_bytes;
  std::optional<int64_t> host_mem_build_bytes;     // the build's share
  std::optional<int64_t> host_rss_baseline_bytes;  // RSS after target set-up, before the build
  // Whose failure it is (core/blame.h): model, reduction, reference, harness, environment.
  std::string blame;

  // --- Schema version 8: where the model came from and at what size. ---
  std::string model_source;        // hf, hub, ckpt, code
  std::string hub_repo_id;         // hub: ORG/NAME
  std::string hub_commit;          // hub: the commit the revision resolved to
  std::string config_hash;         // SHA-256 of config.json (hub, ckpt)
  std::optional<int64_t> reduced;  // 1 reduced, 0 full size
  std::string reduction;           // how (the reduced fields, or full size and its weights)

  // --- Schema version 9: mode export and the deployment stacks (doc/targets.md). ---
  std::optional<int64_t> export_strict;  // 1: torch.export needed strict mode
  std::optional<double> export_s;
  std::optional<double> lower_s;
  std::optional<double> load_s;
  std::optional<int64_t> artifact_bytes;
  std::string unconverted_ops;  // JSON array text of op names a converter refused
  std::string stack_versions;   // JSON object text {package: version} of the lowering's stack

  // --- Schema version 10: own modelling code (code:NAME@HASH models). ---
  std::string code_files;  // JSON array text of {path, sha256}; "" for other models
  // The variant against its baseline's reference (stock class, same weights and inputs).
  std::string baseline_ref_class;
  std::optional<double> baseline_max_abs_err;
  std::optional<double> baseline_cosine;
  // --- Schema version 11: noise (doc/results-schema.md, "Noise"). ---
  // The machine's state over the first call (prepare_*) and the steady phase (steady_*).
  std::optional<double> prepare_load_avg;         // 1-minute load average, the larger sample
  std::optional<double> prepare_cpu_per_wall;     // the child's CPU time / wall time
  std::optional<int64_t> prepare_invol_switches;  // involuntary context switches
  std::optional<double> prepare_procs_running;    // other runnable tasks, mean of samples
  std::optional<double> steady_load_avg;
  std::optional<double> steady_cpu_per_wall;
  std::optional<int64_t> steady_invol_switches;
  std::optional<double> steady_procs_running;
  // The steady median's 95% confidence interval (order statistics), as measured.
  std::optional<double> steady_ci_low_s;
  std::optional<double> steady_ci_high_s;
  std::optional<int64_t> noisy;  // 1: the noisy rule held in the steady phase
  std::string noisy_reason;      // which rules held, in words
  // Schema 13: the same rule over the first call (prepare_s).
  std::optional<int64_t> prepare_noisy;
  std::string prepare_noisy_reason;
  // --- Schema version 14: a reduced model's failure rerun (doc/results-schema.md, "Blame"). ---
  std::string rerun_status;           // "" (no rerun), else the rerun's status name
  std::string rerun_error_signature;  // the rerun's FailureSignature ("" when it passed)
  std::string rerun_size;             // full or milder (what the rerun ran at)
  std::string rerun_reduction;        // the rerun's own `reduction` text

  // --- Schema version 16: kind load's one objective per group (doc/probe.md, "Kind load"). ---
  std::string load_slo_run_id;  // load_slo_source single_stream_row: the single_stream row's run_id

  // --- Schema version 17: kind load's compile-mode warm-up (doc/probe.md, "Kind load"). ---
  std::optional<double> load_warmup_s;
  std::optional<int64_t> load_warmup_recompiles;

  // --- Schema version 19: blame environment (doc/results-schema.md, "Blame"). ---
  std::string missing_packages;  // packages the error names as missing, ", "-joined

  // --- Schema version 22: where a sweep's time went; noisy tests measured again (issue 46). ---
  std::optional<double> steady_wall_s;  // the steady phase's wall seconds
  std::optional<double> reference_s;    // the CPU reference's wall seconds (stage compare)
  // "" (not measured again), quiet, still_noisy, failed: STATUS, machine_busy (RemeasureState).
  std::string remeasure_state;
  // The other measurement's figures (the one that is not the row's).
  std::optional<double> remeasure_other_steady_median_s;
  std::optional<double> remeasure_other_prepare_s;
  std::string remeasure_other_noisy_reason;
  // --- Schema version 23: where the time goes (--profile; doc/probe.md, "Profile"). ---
  std::string profile;  // steady, prepare, "MODE (note)" or "unavailable: why"; "" not profiled
  std::optional<int64_t> profile_calls;     // calls in the profiled window
  std::optional<double> profile_median_s;   // median call under the profiler
  std::optional<double> profile_compute_s;  // per call, by category
  std::optional<double> profile_copy_s;
  std::optional<double> profile_fallback_s;
  std::optional<double> profile_framework_s;
  std::optional<double> profile_idle_s;
  std::string profile_top_ops;                 // JSON array of {name, shapes, calls, self_s, share}
  std::string profile_top_lines;               // JSON array of {line, self_s, share}
  std::string profile_fallback_ops;            // JSON object: fallback op name -> calls per call
  std::string profile_trace_sha256;            // the artifact's digest ("" none kept)
  std::optional<int64_t> profile_trace_bytes;  // its size
  // Schema 24: the torch build beyond its version (probe: host/runtime.py, build_info).
  std::string torch_build;   // cpu, "cuda 13.0", "rocm 6.4"
  std::string blas;          // "mkl 2024.2"
  std::string openmp;        // "OpenMP 201511 libgomp"
  std::string cxx_compiler;  // inductor's C++ compiler on the CPU, with its version
  std::string stack;         // the named stack it ran on ("default", a `stack add` name; "" none)
  // Schema 27: the compile store (doc/compile-cache.md; probe: stacks/compile_store.py).
  std::string compile_key;    // the key parts as canonical JSON object text
  std::string prepare_state;  // model-cold or warm-remote: what prepare_s measured
  std::string cache_bundle;   // --cache-from: hit, inert, none: WHY; "" without
  std::string compile_entry;  // kept ID, not kept: WHY; "" when none was to be kept
  std::optional<int64_t> fx_graph_cache_hits;
  std::optional<int64_t> fx_graph_cache_misses;
  std::optional<int64_t> aot_autograd_cache_hits;
  std::optional<int64_t> aot_autograd_cache_misses;
  std::optional<int64_t> autotune_cache_hits;
  std::optional<int64_t> autotune_cache_misses;
  std::optional<int64_t> fx_graph_remote_cache_hits;  // a profile's redis_cache: its lookups
  std::optional<int64_t> fx_graph_remote_cache_misses;
  std::optional<int64_t> aot_autograd_remote_cache_hits;
  std::optional<int64_t> aot_autograd_remote_cache_misses;
  // Schema 28: a test over several ranks (doc/ranks.md; TestSpec::ranks).
  std::string dist_backend;                        // gloo, nccl; "" for one rank
  std::string parallel_plan;                       // how the model was split, in words
  std::string rank_host_mem;                       // JSON array, rank 0 first
  std::string rank_steady_median;                  // JSON array, rank 0 first
  std::optional<double> profile_collective_share;  // --profile: collectives' share

  // --- Schema version 29: dynamic shapes (doc/probe.md, "Dynamic shapes"). ---
  std::optional<int64_t> recompiles;  // compile mode: dynamo's recompilations in the test
  std::string recompile_reasons;      // JSON array text of distinct reasons, bounded
  // A dynamic test's figures per shape of TestSpec::shapes, in its order (list fields:
  // JSON array text; the integer ones [[shape index, n], ...]).
  std::string dyn_prepare;              // the first call at each shape (index 0: the compile)
  std::string dyn_steady_median;        // compiled steady median at each shape
  std::string dyn_eager_steady_median;  // eager steady median at each shape (same blocks)
  std::string dyn_recompiles;           // recompilations at each shape's first call
  std::string dyn_graphs;               // graphs compiled at each shape's first call
  std::string dyn_acc_max_abs_err;      // against the CPU reference at each shape
  std::string dyn_acc_passed;           // 1 when the shape passed the accuracy rule, else 0

  // --- Schema version 30: inductor's own cache-key details (doc/compile-cache.md). ---
  // Compile mode: per FX graph of the first call, its key and FxGraphHashDetails' debug
  // lines, compact JSON (probe: stacks/graph_details.py; lines cut, 64 KiB at most).
  std::string fx_graph_details;
};

// One stored row: a test, where and when it ran, and what happened.
struct RunRecord {
  std::string run_id;  // unique per execution
  std::string sweep_id;
  std::string test_id;
  TestSpec spec;
  RunResult result;
  std::string started_at;  // UTC, ISO 8601 with milliseconds, "Z"
  std::string finished_at;
  std::string host;
  std::string cpu_model;
  int64_t jobs = 1;
  std::string compatlab_version;
};

}  // namespace compatlab

#endif  // COMPATLAB_CORE_RECORDS_H_
