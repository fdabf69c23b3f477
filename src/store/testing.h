// Records for tests of the store and of what reads it. Test-only.
#ifndef COMPATLAB_STORE_TESTING_H_
#define COMPATLAB_STORE_TESTING_H_

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "core/records.h"
#include "gtest/gtest.h"
#include "store/store.h"

namespace compatlab::test {

// A test of `model_type` ("llama") of `kind`.
inline TestSpec MakeSpec(const std::string& model_type, const std::string& kind = "forward") {
  TestSpec spec;
  spec.model_id = "hf:" + model_type;
  spec.model_type = model_type;
  spec.kind = kind;
  return spec;
}

// A minimal valid run of `spec` in `sweep_id`.
inline RunRecord MakeRun(const std::string& sweep_id, const TestSpec& spec,
                         TestStatus status = TestStatus::kPass) {
  RunRecord record;
  record.run_id = "run-" + sweep_id + "-" + spec.TestId();
  record.sweep_id = sweep_id;
  record.test_id = spec.TestId();
  record.spec = spec;
  record.result.status = status;
  record.started_at = "2026-11-30T02:00:00.000Z";
  record.finished_at = "2026-11-30T02:00:01.000Z";
  return record;
}

// A run with every field set, none to its default value (SchemaTest checks that).
inline RunRecord FullRun(const std::string& sweep_id) {
  TestSpec spec;
  spec.model_id = "hf:llama";
  spec.model_type = "llama";
  spec.model_class = "LlamaForCausalLM";
  spec.model_path = "/models/it's \"quoted\"";
  spec.target = "cuda";
  spec.mode = "compile";
  spec.backend = "inductor";
  spec.kind = "generate";
  spec.dtype = "bfloat16";
  spec.batch_size = 4;
  spec.seq_len = 128;
  spec.ranks = 2;
  spec.kind_params = {{"new_tokens", "16"}, {"b", "x\"y"}};
  spec.timeout_s = 12.5;
  spec.dynamic = "mark";
  spec.shapes = "4x128,4x256";
  RunRecord record = MakeRun(sweep_id, spec, TestStatus::kCrash);
  record.run_id = "run-full-" + sweep_id;
  RunResult& r = record.result;
  r.status_detail = "SIGSEGV";
  r.stage = "prepare";
  r.error_type = "RuntimeError";
  r.error_message = "boom; DROP TABLE runs; --";
  r.error_traceback = "Traceback (most recent call last):\n  ...\nRuntimeError: boom";
  r.build_s = 0.25;
  r.prepare_s = 3.5;
  r.steady_median_s = 0.00125;
  r.steady_p90_s = 0.0015;
  r.steady_iters = 250;
  r.param_count = 123456789012;
  r.host_peak_rss_bytes = int64_t{5} << 33;
  r.memory_method = "vmhwm_after_clear_refs";
  r.torch_num_threads = 2;
  r.wall_s = 4.75;
  r.exit_code = 0;
  r.term_signal = 11;
  r.mem_limit_bytes = int64_t{8} << 30;
  r.mem_limit_method = "cgroup_v2";
  r.stdout_tail = "out\n";
  r.stderr_tail = std::string("err\xff\xfe bytes\0inside", 19);
  r.torch_version = "2.13.0+cpu";
  r.transformers_version = "5.23.0";
  r.python_version = "3.11.7";
  r.resolved_model_class = "LlamaForCausalLM";
  r.compile_options = R"({"dynamic":false,"fullgraph":true})";
  r.eager_steady_median_s = 0.0025;
  r.eager_steady_p90_s = 0.003;
  r.speedup = 2.0;
  r.tokens_per_s = 1234.5;
  r.device_peak_bytes = int64_t{3} << 30;
  r.device_memory_method = "torch.cuda.max_memory_allocated";
  r.acc_ref_dtype = "float64";
  r.acc_max_abs_err = 1e-3;
  r.acc_max_rel_err = 2e-3;
  r.acc_rmse = 1e-4;
  r.acc_eager_rmse = 9e-5;
  r.acc_cosine = 0.99999;
  r.acc_atol = 1e-2;
  r.acc_rtol = 1e-2;
  r.acc_multiplier = 3.0;
  r.acc_rule = "rmse_ratio";
  r.gen_new_tokens = 16;
  r.gen_prefill_s = 0.05;
  r.gen_decode_token_s = 0.01;
  r.gen_token_match_rate = 0.75;
  r.gen_first_divergence = 12;
  r.gen_divergence_logit_gap = 0.001;
  r.gen_tie_tolerance = 0.01;
  r.gen_match_curve = "[[16,0.75]]";
  r.gen_decode_curve = "[[1,0.01],[9,0.011]]";
  r.gen_mem_curve = "[[0,0],[15,4096]]";
  r.gen_mem_growth_bytes = 4096;
  r.gen_ref_distinct_tokens = 12;
  r.gen_ref_near_tie_share = 0.0625;
  r.train_steps = 3;
  r.train_first_step_s = 9.5;
  r.train_steady_step_s = 0.5;
  r.train_loss = "[10.5,10.25,10.0]";
  r.train_ref_loss = "[10.5,10.25,10.01]";
  r.train_grad_cosine = 0.9999;
  r.train_grad_cosine_last = 0.999;
  r.train_grad_cosine_min = 0.99;
  r.train_loss_max_abs_err = 0.01;
  r.train_grad_norm = "[1.5,1.25,1.0]";
  r.train_ref_grad_norm = "[1.5,1.25,1.01]";
  r.train_eager_loss = "[10.5,10.25,10.005]";
  r.train_loss_rmse = 0.005;
  r.train_eager_loss_rmse = 0.003;
  r.fallback_audit = "audited";
  r.ops_executed = 42;
  r.fallback_ops = R"({"aten::tanh":3})";
  r.backend_fallback_counts = R"({"aten::tanh.out":3})";
  r.graph_breaks = 1;
  r.unique_graphs = 2;
  r.captured_calls = 100;
  r.frames_run_eagerly = 1;
  r.graph_break_reasons = R"(["call to a C function"])";
  r.cache_hits = 1;
  r.cache_misses = 4;
  r.warm_state = "warm";
  r.warm_prepare_s = 1.25;
  r.warm_cache_hits = 4;
  r.warm_cache_misses = 0;
  r.error_signature = "RuntimeError: boom; DROP TABLE runs; --";
  r.steady_min_s = 0.0009;
  r.compiler_startup_s = 6.5;
  r.load_scenario = "server";
  r.load_engine = "continuous_batching";
  r.load_requests = 32;
  r.load_output_tokens = 512;
  r.load_duration_s = 2.5;
  r.load_offline_requests_per_s = 20.5;
  r.load_arrival_rate_per_s = 18.45;
  r.load_ttft_p50_s = 0.011;
  r.load_ttft_p90_s = 0.031;
  r.load_ttft_p99_s = 0.072;
  r.load_itl_p50_s = 0.004;
  r.load_itl_p90_s = 0.006;
  r.load_itl_p99_s = 0.009;
  r.load_e2e_p50_s = 0.075;
  r.load_e2e_p90_s = 0.12;
  r.load_e2e_p99_s = 0.19;
  r.load_output_tokens_per_s = 204.8;
  r.load_requests_per_s = 12.8;
  r.load_goodput_per_s = 11.2;
  r.load_slo_ttft_s = 0.03;
  r.load_slo_itl_s = 0.012;
  r.load_slo_source = "single_stream_p50x3";
  r.acc_not_measured = "sizes_differ";
  r.acc_ref_fallback = "float64 non-finite at 3 value(s) where the target is finite";
  r.acc_nonfinite = 2;
  r.ill_conditioned = 1;
  r.host_mem_bytes = int64_t{11} << 20;
  r.host_mem_build_bytes = int64_t{3} << 20;
  r.host_rss_baseline_bytes = int64_t{300} << 20;
  r.blame = "reference";
  r.load_max_concurrency = 9;
  r.load_recompiles = 3;
  r.load_ttft_dist = "[0.009,0.011,0.072]";
  r.load_itl_dist = "[0.003,0.004,0.009]";
  r.load_e2e_dist = "[0.05,0.075,0.19]";
  r.load_rate_multiple = 0.9;
  r.load_base_source = "offline_row";
  r.load_base_run_id = "0123456789abcdef";
  r.model_source = "hub";
  r.hub_repo_id = "Qwen/Qwen3-0.6B";
  r.hub_commit = "c1899de289a04d12100db370d81485cdf75e47ca";
  r.config_hash = "9f2c";
  r.reduced = 1;
  r.reduction = "hidden_size 1024->64, num_hidden_layers 28->2";
  r.export_strict = 1;
  r.export_s = 1.25;
  r.lower_s = 9.5;
  r.load_s = 0.125;
  r.artifact_bytes = 1132347;
  r.unconverted_ops = R"(["aten::logcumsumexp"])";
  r.stack_versions = R"({"onnxruntime":"1.32.0"})";
  r.code_files = R"([{"path":"/m/attn.py","sha256":"ab12"}])";
  r.baseline_ref_class = "LlamaForCausalLM";
  r.baseline_max_abs_err = 0.25;
  r.baseline_cosine = 0.97;
  r.prepare_load_avg = 0.5;
  r.prepare_cpu_per_wall = 0.98;
  r.prepare_invol_switches = 3;
  r.prepare_procs_running = 0.5;
  r.steady_load_avg = 0.75;
  r.steady_cpu_per_wall = 0.99;
  r.steady_invol_switches = 4;
  r.steady_procs_running = 1.5;
  r.steady_ci_low_s = 0.0095;
  r.steady_ci_high_s = 0.0105;
  r.noisy = 1;
  r.noisy_reason = "load average 3.00 > 2 cores";
  r.prepare_noisy = 1;
  r.prepare_noisy_reason = "cpu/wall 0.31 < 0.5";
  r.rerun_status = "fail_to_run";
  r.rerun_error_signature = "RuntimeError: size mismatch";
  r.rerun_size = "milder";
  r.rerun_reduction = "milder reduction: hidden_size 1024->256";
  r.load_slo_run_id = "fedcba9876543210";
  r.load_warmup_s = 12.5;
  r.load_warmup_recompiles = 9;
  r.missing_packages = "PIL, timm";
  r.steady_wall_s = 1.5;
  r.reference_s = 0.75;
  r.remeasure_state = "quiet";
  r.remeasure_other_steady_median_s = 0.0125;
  r.remeasure_other_prepare_s = 2.5;
  r.remeasure_other_noisy_reason = "load average 3.00 > 2 cores";
  r.profile = "steady";
  r.profile_calls = 5;
  r.profile_median_s = 0.0142;
  r.profile_compute_s = 0.0081;
  r.profile_copy_s = 0.0004;
  r.profile_fallback_s = 0.0021;
  r.profile_framework_s = 0.0030;
  r.profile_idle_s = 0.0002;
  r.profile_top_ops =
      R"([{"name":"aten::mm","shapes":"[[32, 64], [64, 64]]","calls":12.0,"self_s":0.003,"share":0.21}])";
  r.profile_top_lines =
      R"([{"line":"transformers/models/llama/modeling_llama.py(275): forward","self_s":0.004,"share":0.28}])";
  r.profile_fallback_ops = R"({"aten::tanh":3.0})";
  r.profile_trace_sha256 = std::string(64, 'a');
  r.profile_trace_bytes = 48213;
  r.torch_build = "cuda 13.0";
  r.blas = "mkl 2024.2";
  r.openmp = "OpenMP 201511 libgomp";
  r.cxx_compiler = "g++ (Debian 12.2.0-14+deb12u1) 12.2.0";
  r.stack = "t5";
  r.compile_key = R"({"backend":"inductor","test_id":"hf:llama/forward"})";
  r.prepare_state = "warm-remote";
  r.cache_bundle = "hit";
  r.compile_entry = "kept 3f2a";
  r.fx_graph_cache_hits = 2;
  r.fx_graph_cache_misses = 1;
  r.aot_autograd_cache_hits = 3;
  r.aot_autograd_cache_misses = 4;
  r.autotune_cache_hits = 5;
  r.autotune_cache_misses = 6;
  r.fx_graph_remote_cache_hits = 7;
  r.fx_graph_remote_cache_misses = 8;
  r.aot_autograd_remote_cache_hits = 9;
  r.aot_autograd_remote_cache_misses = 10;
  r.dist_backend = "gloo";
  r.parallel_plan = "tp: transformers tp_plan (7 rules)";
  r.rank_host_mem = "[1048576.0,1032192.0]";
  r.rank_steady_median = "[0.0125,0.0127]";
  r.profile_collective_share = 0.25;
  r.recompiles = 1;
  r.recompile_reasons =
      R"(["tensor 'input_ids' size mismatch at index 1. expected 128, actual 256"])";
  r.dyn_prepare = "[2.5,0.75]";
  r.dyn_steady_median = "[0.01,0.02]";
  r.dyn_eager_steady_median = "[0.02,0.04]";
  r.dyn_recompiles = "[[0,0],[1,1]]";
  r.dyn_graphs = "[[0,1],[1,1]]";
  r.dyn_acc_max_abs_err = "[0.001,0.002]";
  r.dyn_acc_passed = "[[0,1],[1,1]]";
  r.fx_graph_details =
      R"({"format":1,"graphs":[{"key":"fabc","lines":["[h1] inductor_config[max_autotune]: False"]}],"truncated":""})";
  record.started_at = "2026-11-30T02:24:35.123Z";
  record.finished_at = "2026-11-30T02:24:39.873Z";
  record.host = "host-1";
  record.cpu_model = "AMD EPYC 9654";
  record.jobs = 3;
  record.compatlab_version = "0.1.0";
  return record;
}

// A new, unique directory under the test temp dir (mkdtemp), removed with its
// contents on destruction, so tests of two build trees can run at once.
class ScopedTempDir {
 public:
  ScopedTempDir() {
    std::string pattern =
        (std::filesystem::path(::testing::TempDir()) / "compatlab_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp " << pattern;
    path_ = pattern;
  }
  ~ScopedTempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Creates the store `db` (if missing) with one sweep `sweep_id` planning the
// tests of `runs`, and inserts `runs`. Test failures on any error.
inline void WriteRuns(const std::filesystem::path& db, const std::string& sweep_id,
                      const std::vector<RunRecord>& runs) {
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(db, OpenMode::kReadWriteCreate);
  ASSERT_TRUE(store.ok()) << store.status();
  SweepInfo sweep;
  sweep.sweep_id = sweep_id;
  sweep.created_at = "2026-11-30T02:00:00.000Z";
  std::vector<TestSpec> plan;
  for (const RunRecord& run : runs) plan.push_back(run.spec);
  ASSERT_TRUE((*store)->CreateSweep(sweep, plan).ok());
  for (const RunRecord& run : runs) ASSERT_TRUE((*store)->InsertRun(run).ok()) << run.run_id;
}

}  // namespace compatlab::test

#endif  // COMPATLAB_STORE_TESTING_H_
