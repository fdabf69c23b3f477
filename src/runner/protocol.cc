#include "runner/protocol.h"

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
            {"measure",
             {{"warmup", r.measure.warmup},
              {"min_iters", r.measure.min_iters},
              {"min_time_s", r.measure.min_time_s}}}};
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
    if (it->is_number_integer() || it->is_number_unsigned()) *out = it->get<int64_t>();
    else if (it->is_number_float()) *out = static_cast<int64_t>(it->get<double>());
  }
}

std::string ReadString(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

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
    ReadOptional(*m, "build_s", &r.build_s);
    ReadOptional(*m, "prepare_s", &r.prepare_s);
    ReadOptional(*m, "steady_median_s", &r.steady_median_s);
    ReadOptional(*m, "steady_p90_s", &r.steady_p90_s);
    ReadOptional(*m, "steady_iters", &r.steady_iters);
    ReadOptional(*m, "param_count", &r.param_count);
    ReadOptional(*m, "host_peak_rss_bytes", &r.host_peak_rss_bytes);
    ReadOptional(*m, "torch_num_threads", &r.torch_num_threads);
    r.memory_method = ReadString(*m, "memory_method");
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
