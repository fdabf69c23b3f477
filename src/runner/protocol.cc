#include "runner/protocol.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace compatlab {

using nlohmann::json;

std::string TestRequestJson(const LaunchRequest& r, pid_t supervisor_pid) {
  const TestSpec& s = r.spec;
  json limit = json::object();
  if (r.limit != nullptr) {
    limit = {{"method", r.limit->Method()},
             {"bytes", r.limit->Bytes()},
             {"cgroup_procs", r.limit->ProcsPath()}};
  }
  json j = {{"run_id", r.run_id},
            {"test_id", s.TestId()},
            {"model_id", s.model_id},
            {"model_type", s.model_type},
            {"model_class", s.model_class},
            {"model_path", s.model_path},
            {"target", s.target},
            {"mode", s.mode},
            {"backend", s.backend},
            {"kind", s.kind},
            {"dtype", s.dtype},
            {"batch_size", s.batch_size},
            {"seq_len", s.seq_len},
            {"kind_params", s.kind_params},
            {"timeout_s", s.timeout_s},
            {"torch_num_threads", r.torch_num_threads},
            {"memory_limit", limit},
            {"supervisor_pid", supervisor_pid},
            {"compile_options", r.compile_options_json.empty()
                                    ? json::object()
                                    : json::parse(r.compile_options_json, nullptr, false)},
            {"compile_cache_dir", r.compile_cache_dir},
            {"cache_phase", r.cache_phase},
            {"measure",
             {{"warmup", r.measure.warmup},
              {"min_iters", r.measure.min_iters},
              {"min_time_s", r.measure.min_time_s}}}};
  if (!r.target_profile_json.empty()) {
    j["target_profile"] = json::parse(r.target_profile_json, nullptr, false);
  }
  return j.dump();
}

namespace {

template <typename T>
void ReadOptional(const json& obj, const char* key, std::optional<T>* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return;
  if constexpr (std::is_same_v<T, double>) {
    if (it->is_number()) *out = it->get<double>();
  } else {
    if (it->is_number_integer() || it->is_number_unsigned())
      *out = it->get<int64_t>();
    else if (it->is_number_float())
      *out = static_cast<int64_t>(it->get<double>());
  }
}

std::string ReadString(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>()
                         : it->dump(-1, ' ', false, json::error_handler_t::replace);
}

// The child's metric keys: the RunResult member of the same name
// (doc/worker-protocol.md, "The result object"). Text metrics that are
// objects or arrays on the wire are stored as their JSON text.
using RealMetric = std::optional<double> RunResult::*;
using IntMetric = std::optional<int64_t> RunResult::*;
using TextMetric = std::string RunResult::*;
constexpr std::pair<const char*, RealMetric> kRealMetrics[] = {
    {"build_s", &RunResult::build_s},
    {"prepare_s", &RunResult::prepare_s},
    {"steady_median_s", &RunResult::steady_median_s},
    {"steady_p90_s", &RunResult::steady_p90_s},
    {"eager_steady_median_s", &RunResult::eager_steady_median_s},
    {"eager_steady_p90_s", &RunResult::eager_steady_p90_s},
    {"speedup", &RunResult::speedup},
    {"tokens_per_s", &RunResult::tokens_per_s},
    {"acc_max_abs_err", &RunResult::acc_max_abs_err},
    {"acc_max_rel_err", &RunResult::acc_max_rel_err},
    {"acc_rmse", &RunResult::acc_rmse},
    {"acc_eager_rmse", &RunResult::acc_eager_rmse},
    {"acc_cosine", &RunResult::acc_cosine},
    {"acc_atol", &RunResult::acc_atol},
    {"acc_rtol", &RunResult::acc_rtol},
    {"acc_multiplier", &RunResult::acc_multiplier},
    {"gen_prefill_s", &RunResult::gen_prefill_s},
    {"gen_decode_token_s", &RunResult::gen_decode_token_s},
    {"gen_token_match_rate", &RunResult::gen_token_match_rate},
    {"train_first_step_s", &RunResult::train_first_step_s},
    {"train_steady_step_s", &RunResult::train_steady_step_s},
    {"train_grad_cosine", &RunResult::train_grad_cosine},
    {"train_grad_cosine_last", &RunResult::train_grad_cosine_last},
    {"train_grad_cosine_min", &RunResult::train_grad_cosine_min},
    {"train_loss_max_abs_err", &RunResult::train_loss_max_abs_err},
    {"gen_divergence_logit_gap", &RunResult::gen_divergence_logit_gap},
    {"gen_tie_tolerance", &RunResult::gen_tie_tolerance},
};
constexpr std::pair<const char*, IntMetric> kIntMetrics[] = {
    {"steady_iters", &RunResult::steady_iters},
    {"param_count", &RunResult::param_count},
    {"host_peak_rss_bytes", &RunResult::host_peak_rss_bytes},
    {"torch_num_threads", &RunResult::torch_num_threads},
    {"device_peak_bytes", &RunResult::device_peak_bytes},
    {"gen_new_tokens", &RunResult::gen_new_tokens},
    {"gen_first_divergence", &RunResult::gen_first_divergence},
    {"train_steps", &RunResult::train_steps},
    {"ops_executed", &RunResult::ops_executed},
    {"graph_breaks", &RunResult::graph_breaks},
    {"unique_graphs", &RunResult::unique_graphs},
    {"captured_calls", &RunResult::captured_calls},
    {"frames_run_eagerly", &RunResult::frames_run_eagerly},
    {"cache_hits", &RunResult::cache_hits},
    {"cache_misses", &RunResult::cache_misses},
};
constexpr std::pair<const char*, TextMetric> kTextMetrics[] = {
    {"memory_method", &RunResult::memory_method},
    {"device_memory_method", &RunResult::device_memory_method},
    {"acc_ref_dtype", &RunResult::acc_ref_dtype},
    {"acc_rule", &RunResult::acc_rule},
    {"train_loss", &RunResult::train_loss},
    {"train_ref_loss", &RunResult::train_ref_loss},
    {"fallback_audit", &RunResult::fallback_audit},
    {"fallback_ops", &RunResult::fallback_ops},
    {"backend_fallback_counts", &RunResult::backend_fallback_counts},
    {"graph_break_reasons", &RunResult::graph_break_reasons},
};

}  // namespace

absl::Status ParseChildResult(const std::string& text, RunResult* out) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("the result is not a JSON object");
  }
  if (!j.contains("status") || !j["status"].is_string()) {
    return absl::InvalidArgumentError("the result has no status");
  }
  absl::StatusOr<TestStatus> status = ParseTestStatus(j["status"].get<std::string>());
  if (!status.ok()) return status.status();
  if (*status == TestStatus::kTimeout || *status == TestStatus::kCrash) {
    return absl::InvalidArgumentError(
        absl::StrCat("a child may not report '", j["status"].get<std::string>(), "'"));
  }
  RunResult r = *out;
  r.status = *status;
  r.status_detail = ReadString(j, "status_detail");
  r.stage = ReadString(j, "stage");
  r.error_type = ReadString(j, "error_type");
  r.error_message = ReadString(j, "error_message");
  r.error_traceback = ReadString(j, "error_traceback");
  r.resolved_model_class = ReadString(j, "model_class");
  if (auto m = j.find("metrics"); m != j.end() && m->is_object()) {
    for (const auto& [key, member] : kRealMetrics) ReadOptional(*m, key, &(r.*member));
    for (const auto& [key, member] : kIntMetrics) ReadOptional(*m, key, &(r.*member));
    for (const auto& [key, member] : kTextMetrics) r.*member = ReadString(*m, key);
  }
  if (auto s = j.find("stack"); s != j.end() && s->is_object()) {
    r.python_version = ReadString(*s, "python_version");
    r.torch_version = ReadString(*s, "torch_version");
    r.transformers_version = ReadString(*s, "transformers_version");
  }
  *out = std::move(r);
  return absl::OkStatus();
}

}  // namespace compatlab
