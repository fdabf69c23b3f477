#include "core/fields.h"

#include <optional>
#include <type_traits>
#include <utility>

#include "core/limits.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"

namespace compatlab {
namespace {

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};

// The stored type of a C++ member type.
template <typename T>
constexpr FieldType StoredType() {
  if constexpr (std::is_same_v<T, std::string>) {
    return FieldType::kText;
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return FieldType::kInteger;
  } else {
    static_assert(std::is_same_v<T, double>, "fields are text, int64_t or double");
    return FieldType::kReal;
  }
}

absl::Status WrongValue(std::string_view name, std::string_view what) {
  return absl::InvalidArgumentError(fmt::format("field {}: {}", name, what));
}

// A field over a member of RunRecord. `access` is a generic lambda returning a
// reference to the member for both a const and a mutable record; the member is
// std::string, int64_t, double, or std::optional of the last two (nullable).
template <typename Access>
FieldDef Member(std::string_view name, std::string_view unit, std::string_view description,
                Access access) {
  using M = std::remove_cvref_t<decltype(access(std::declval<RunRecord&>()))>;
  constexpr bool kNullable = IsOptional<M>::value;
  using T = typename std::conditional_t<kNullable, M, std::optional<M>>::value_type;
  FieldDef f{name, FieldGroup::kRow, StoredType<T>(), kNullable, unit, description, 1, {}, {}};
  f.get = [access](const RunRecord& r) -> FieldValue {
    const M& m = access(r);
    if constexpr (kNullable) {
      if (!m.has_value()) return std::monostate{};
      return FieldValue(*m);
    } else {
      return FieldValue(m);
    }
  };
  f.set = [access, name](const FieldValue& value, RunRecord& r) -> absl::Status {
    if (std::holds_alternative<std::monostate>(value)) {
      if constexpr (kNullable) {
        access(r) = std::nullopt;
        return absl::OkStatus();
      } else {
        return WrongValue(name, "NULL in a non-nullable field");
      }
    }
    const T* v = std::get_if<T>(&value);
    if (v == nullptr) return WrongValue(name, "value of the wrong type");
    access(r) = *v;
    return absl::OkStatus();
  };
  return f;
}

// A non-nullable text field stored in a converted form (an enum name, JSON).
FieldDef Converted(std::string_view name, std::string_view description,
                   std::function<std::string(const RunRecord&)> to_text,
                   std::function<absl::Status(const std::string&, RunRecord&)> from_text) {
  FieldDef f{name, FieldGroup::kRow, FieldType::kText, false, "", description, 1, {}, {}};
  f.get = [to_text](const RunRecord& r) -> FieldValue { return to_text(r); };
  f.set = [from_text, name](const FieldValue& value, RunRecord& r) -> absl::Status {
    const std::string* text = std::get_if<std::string>(&value);
    if (text == nullptr) return WrongValue(name, "expected text");
    return from_text(*text, r);
  };
  return f;
}

// `field` as the child reports it: key `key` (default: the field's name) of `section`.
FieldDef Child(ChildSection section, FieldDef field, std::string_view key = {}) {
  field.child = section;
  field.child_key = key.empty() ? field.name : key;
  return field;
}
FieldDef Metric(FieldDef field) { return Child(ChildSection::kMetrics, std::move(field)); }
// A list field of `kind`, typed in Parquet from schema version `typed_since` on.
FieldDef Curve(ListKind kind, FieldDef field, int typed_since = kTypedListsVersion) {
  field.list = kind;
  field.list_typed_since = typed_since;
  return field;
}
FieldDef Bulky(FieldDef field) {
  field.bulky = true;
  return field;
}

// Shorthand for the accessor lambda of Member().
#define COMPATLAB_MEMBER(expr) \
  [](auto& r) -> auto& { return r.expr; }

// Version 29, dynamic shapes (doc/probe.md, "Dynamic shapes"): the two spec fields that
// make a test dynamic and the figures per shape. `add` is MakeResultFields' adder (group and
// version, its variables, set here); `compile` its list of the compile mode.
template <typename Add>
void AddDynamicShapeFields(const Add& add, FieldGroup& group, int& version,
                           const std::vector<std::string_view>& compile) {
  constexpr std::string_view kSeconds = "s";
  const std::vector<std::string_view> forward = {"forward"};
  const std::vector<FillRule> dynamic = {{forward, compile, {FillWhen::kDynamic}}};
  const std::vector<FillRule> dynamic_compared = {
      {forward, compile, {FillWhen::kDynamic, FillWhen::kCompared}}};
  group = FieldGroup::kSpec;
  version = 29;
  add(Converted(
          "dynamic",
          "Dynamic shapes: empty for a static test (one shape), true (torch.compile(dynamic=True)) "
          "or mark (torch._dynamo.mark_dynamic on the batch and sequence dims that vary); part of "
          "the identity when set.",
          [](const RunRecord& r) { return r.spec.dynamic; },
          [](const std::string& text, RunRecord& r) -> absl::Status {
            if (!text.empty() && text != kDynamicTrue && text != kDynamicMark) {
              return WrongValue("dynamic", "not empty, true or mark");
            }
            r.spec.dynamic = text;
            return absl::OkStatus();
          }),
      {});
  add(Converted(
          "shapes",
          "A dynamic test's shapes as BATCHxSEQ,... in the order it ran them (batch_size and "
          "seq_len are the first); empty for a static test; part of the identity when set.",
          [](const RunRecord& r) { return r.spec.shapes; },
          [](const std::string& text, RunRecord& r) -> absl::Status {
            if (!text.empty()) {
              absl::StatusOr<std::vector<Shape>> shapes = ParseShapesText(text);
              if (!shapes.ok()) return WrongValue("shapes", std::string(shapes.status().message()));
            }
            r.spec.shapes = text;
            return absl::OkStatus();
          }),
      {});
  group = FieldGroup::kResult;
  add(Metric(
          Member("recompiles", "",
                 "Compile mode: dynamo's recompilations of a frame in the test (compilation "
                 "metrics with a recompile reason: torch._dynamo.utils.get_compilation_metrics).",
                 COMPATLAB_MEMBER(result.recompiles))),
      dynamic);
  add(Metric(Member("recompile_reasons", "",
                    "Compile mode: the distinct reasons dynamo gave for its recompilations, a "
                    "JSON array (bounded).",
                    COMPATLAB_MEMBER(result.recompile_reasons))));
  add(Curve(ListKind::kReals,
            Metric(Member("dyn_prepare", kSeconds,
                          "Dynamic test: seconds of the first compiled call at each shape of "
                          "shapes, in order (the first includes the compile; a later one a "
                          "recompile when dyn_recompiles says so).",
                          COMPATLAB_MEMBER(result.dyn_prepare))),
            version),
      dynamic);
  add(Curve(ListKind::kReals,
            Metric(Member("dyn_steady_median", kSeconds,
                          "Dynamic test: the compiled steady median at each shape.",
                          COMPATLAB_MEMBER(result.dyn_steady_median))),
            version),
      dynamic);
  add(Curve(ListKind::kReals,
            Metric(Member("dyn_eager_steady_median", kSeconds,
                          "Dynamic test: the eager steady median at each shape, timed in blocks "
                          "alternating with the compiled calls.",
                          COMPATLAB_MEMBER(result.dyn_eager_steady_median))),
            version),
      dynamic);
  add(Curve(ListKind::kIntegerPoints,
            Metric(Member("dyn_recompiles", "",
                          "Dynamic test: [shape index, recompilations at that shape's first "
                          "call], one per shape.",
                          COMPATLAB_MEMBER(result.dyn_recompiles))),
            version),
      dynamic);
  add(Curve(ListKind::kIntegerPoints,
            Metric(Member("dyn_graphs", "",
                          "Dynamic test: [shape index, graphs dynamo compiled at that shape's "
                          "first call], one per shape.",
                          COMPATLAB_MEMBER(result.dyn_graphs))),
            version),
      dynamic);
  add(Curve(ListKind::kReals,
            Metric(Member("dyn_acc_max_abs_err", "",
                          "Dynamic test: the largest absolute error against the CPU reference at "
                          "each shape (the acc_* fields are those of the worst shape).",
                          COMPATLAB_MEMBER(result.dyn_acc_max_abs_err))),
            version),
      dynamic_compared);
  add(Curve(ListKind::kIntegerPoints,
            Metric(Member("dyn_acc_passed", "",
                          "Dynamic test: [shape index, 1 when that shape passed the accuracy rule "
                          "else 0]; one failing shape fails the test.",
                          COMPATLAB_MEMBER(result.dyn_acc_passed))),
            version),
      dynamic_compared);
}

std::vector<FieldDef> MakeResultFields() {
  constexpr std::string_view kSeconds = "s";
  constexpr std::string_view kBytes = "bytes";
  constexpr std::string_view kTime = "UTC ISO 8601";
  // The fill matrix's vocabulary: which passing runs must fill a field.
  const std::vector<std::string_view> all_kinds = {"forward", "generate", "train", "load"};
  const std::vector<std::string_view> all_modes = {kModeEager, kModeCompile};
  const std::vector<std::string_view> compile = {kModeCompile};
  const std::vector<std::string_view> export_mode = {kModeExport};
  const std::vector<std::string_view> forward = {"forward"};
  const std::vector<std::string_view> generate = {"generate"};
  const std::vector<std::string_view> train = {"train"};
  const std::vector<std::string_view> load = {"load"};
  // Mode export takes kind forward only.
  const FillRule forward_export = {forward, export_mode, {}};
  const std::vector<FillRule> every_pass = {{all_kinds, all_modes, {}}, forward_export};
  // Steady-state figures: train's are steps 2..K, so only with more than one step.
  const std::vector<FillRule> steady = {{{"forward", "generate"}, all_modes, {}},
                                        {train, all_modes, {FillWhen::kMultiStep}},
                                        forward_export};
  const std::vector<FillRule> steady_compile = {{{"forward", "generate"}, compile, {}},
                                                {train, compile, {FillWhen::kMultiStep}},
                                                forward_export};
  const std::vector<FillRule> every_compile = {{all_kinds, compile, {}}};
  // A forward rule holds in mode export too.
  auto only = [&](const std::vector<std::string_view>& kinds,
                  std::vector<FillWhen> when = {}) -> std::vector<FillRule> {
    std::vector<FillRule> rules = {{kinds, all_modes, when}};
    if (kinds == forward) rules.push_back({forward, export_mode, std::move(when)});
    return rules;
  };
  std::vector<FieldDef> fields;
  FieldGroup group = FieldGroup::kRow;
  int version = 1;
  auto add = [&](FieldDef field, std::vector<FillRule> fill = {}) {
    field.group = group;
    field.since_version = version;
    field.fill = std::move(fill);
    fields.push_back(std::move(field));
  };
  add(Member("run_id", "", "Unique id of this execution.", COMPATLAB_MEMBER(run_id)));
  add(Member("sweep_id", "", "Sweep the run belongs to (sweeps.sweep_id).",
             COMPATLAB_MEMBER(sweep_id)));
  add(Member("test_id", "",
             "Hash of the test's identity fields (32 hex chars); the same test on "
             "another stack or host has the same test_id.",
             COMPATLAB_MEMBER(test_id)));

  group = FieldGroup::kSpec;
  add(Member("model_id", "",
             "hf:TYPE for an architecture's default configuration, hub:ORG/NAME@COMMIT for a "
             "Hub model's own configuration, ckpt:SHA256 for a local checkpoint, none for "
             "harness kinds.",
             COMPATLAB_MEMBER(spec.model_id)));
  add(Member("model_type", "", "transformers model type (llama); empty for harness kinds.",
             COMPATLAB_MEMBER(spec.model_type)));
  add(Member("model_class", "", "Head class chosen at plan time (LlamaForCausalLM); may be empty.",
             COMPATLAB_MEMBER(spec.model_class)));
  add(Member("model_path", "", "Local checkpoint directory; not part of the identity.",
             COMPATLAB_MEMBER(spec.model_path)));
  add(Member("target", "", "Target profile the test ran on (cpu, cuda, neuron).",
             COMPATLAB_MEMBER(spec.target)));
  add(Member("mode", "",
             "eager, compile (torch.compile with the profile's backend) or export (torch.export, "
             "then the profile's lowering and runtime).",
             COMPATLAB_MEMBER(spec.mode)));
  add(Member("backend", "", "Compile backend; empty in eager mode.",
             COMPATLAB_MEMBER(spec.backend)),
      every_compile);
  add(Member("kind", "", "Test kind: forward, generate, train, or a harness kind (noop, faults).",
             COMPATLAB_MEMBER(spec.kind)));
  add(Member("dtype", "", "Parameter and input dtype (float32, bfloat16).",
             COMPATLAB_MEMBER(spec.dtype)));
  add(Member("batch_size", "", "Batch size of the inputs.", COMPATLAB_MEMBER(spec.batch_size)));
  add(Member("seq_len", "tokens", "Sequence length of the inputs.",
             COMPATLAB_MEMBER(spec.seq_len)));
  add(Converted(
      "kind_params",
      "Extra parameters of the kind as canonical JSON: an object with sorted keys and string "
      "values, no whitespace ({} when none).",
      [](const RunRecord& r) { return KindParamsToJson(r.spec.kind_params); },
      [](const std::string& text, RunRecord& r) -> absl::Status {
        auto params = KindParamsFromJson(text);
        if (!params.ok()) return params.status();
        r.spec.kind_params = *std::move(params);
        return absl::OkStatus();
      }));
  add(Member("timeout_s", kSeconds,
             "Deadline the supervisor enforced for the test; not part of the identity.",
             COMPATLAB_MEMBER(spec.timeout_s)));

  group = FieldGroup::kResult;
  add(Child(ChildSection::kTop,
            Converted(
                "status", "Outcome of the test; one of the statuses listed below.",
                [](const RunRecord& r) { return std::string(TestStatusName(r.result.status)); },
                [](const std::string& text, RunRecord& r) -> absl::Status {
                  auto status = ParseTestStatus(text);
                  if (!status.ok()) return status.status();
                  r.result.status = *status;
                  return absl::OkStatus();
                })));
  add(Child(ChildSection::kTop,
            Member("status_detail", "",
                   "Signal name for crash, reason for skipped, otherwise a detail or empty.",
                   COMPATLAB_MEMBER(result.status_detail))));
  add(Child(
      ChildSection::kTop,
      Member("stage", "",
             "Stage that failed: import, build, compile, prepare, steady, run, compare (accuracy), "
             "mode export's export, lower and load, or harness; for a timeout, crash or OOM kill "
             "the last stage the child entered (its stage marks), else run; empty on pass.",
             COMPATLAB_MEMBER(result.stage))));
  add(Child(ChildSection::kTop,
            Member("error_type", "", "Exception type of the failure (RuntimeError); empty if none.",
                   COMPATLAB_MEMBER(result.error_type))));
  add(Child(ChildSection::kTop,
            Member("error_message", "", "Error message of the failure; empty if none.",
                   COMPATLAB_MEMBER(result.error_message))));
  add(Bulky(Child(
      ChildSection::kTop,
      Member("error_traceback", "", "Traceback of the failure, its last 8 KiB; empty if none.",
             COMPATLAB_MEMBER(result.error_traceback)))));
  add(Metric(Member("build_s", kSeconds, "Build phase: configuration to model on the device.",
                    COMPATLAB_MEMBER(result.build_s))),
      every_pass);
  add(Metric(Member("prepare_s", kSeconds,
                    "Prepare phase: the first call, compilation included; compile mode: "
                    "model-cold (the compiler started, no artifact of this model cached).",
                    COMPATLAB_MEMBER(result.prepare_s))),
      every_pass);
  add(Metric(Member("steady_median_s", kSeconds,
                    "Median time of one steady-state iteration (after warm-up, device "
                    "synchronised).",
                    COMPATLAB_MEMBER(result.steady_median_s))),
      steady);
  add(Metric(Member("steady_p90_s", kSeconds, "90th percentile of the steady-state iterations.",
                    COMPATLAB_MEMBER(result.steady_p90_s))),
      steady);
  add(Metric(Member("steady_iters", "", "Number of steady-state iterations measured.",
                    COMPATLAB_MEMBER(result.steady_iters))),
      steady);
  add(Metric(Member("param_count", "", "Number of model parameters.",
                    COMPATLAB_MEMBER(result.param_count))),
      every_pass);
  add(Metric(Member(
          "host_peak_rss_bytes", kBytes,
          "Peak resident set size of the whole test process on the host over build, first call, "
          "steady state and the kind's own steps (interpreter, torch and transformers included).",
          COMPATLAB_MEMBER(result.host_peak_rss_bytes))),
      every_pass);
  add(Metric(Member(
          "memory_method", "",
          "How host_mem_bytes was measured: vmhwm_minus_baseline_rss (the kernel's high-water "
          "mark, reset at the baseline and after the build, minus the baseline RSS), else "
          "vmhwm_since_process_start_minus_baseline_rss; older rows: vmhwm_after_clear_refs; "
          "empty if not measured.",
          COMPATLAB_MEMBER(result.memory_method))),
      every_pass);
  add(Metric(Member("torch_num_threads", "", "torch intra-op threads in the test process.",
                    COMPATLAB_MEMBER(result.torch_num_threads))),
      every_pass);
  add(Member("wall_s", kSeconds,
             "Wall time from the fork request to the test process reaped, as the "
             "supervisor measured it.",
             COMPATLAB_MEMBER(result.wall_s)));
  add(Member("exit_code", "", "Exit status of the test process when it exited by itself.",
             COMPATLAB_MEMBER(result.exit_code)),
      every_pass);
  add(Member("term_signal", "", "Number of the signal that killed the test process.",
             COMPATLAB_MEMBER(result.term_signal)));
  add(Member("mem_limit_bytes", kBytes, "Memory limit applied to the test; 0 if none.",
             COMPATLAB_MEMBER(result.mem_limit_bytes)));
  add(Member("mem_limit_method", "",
             "How the memory limit was applied: cgroup_v1, cgroup_v2 or rlimit; empty "
             "if none.",
             COMPATLAB_MEMBER(result.mem_limit_method)));
  add(Bulky(Member("stdout_tail", "", "Last 64 KiB of the test process's standard output.",
                   COMPATLAB_MEMBER(result.stdout_tail))));
  add(Bulky(Member("stderr_tail", "", "Last 64 KiB of the test process's standard error.",
                   COMPATLAB_MEMBER(result.stderr_tail))));
  add(Child(ChildSection::kStack, Member("torch_version", "", "torch version in the test process.",
                                         COMPATLAB_MEMBER(result.torch_version))),
      every_pass);
  add(Child(ChildSection::kStack,
            Member("transformers_version", "", "transformers version in the test process.",
                   COMPATLAB_MEMBER(result.transformers_version))),
      every_pass);
  add(Child(ChildSection::kStack,
            Member("python_version", "", "Python version in the test process.",
                   COMPATLAB_MEMBER(result.python_version))),
      every_pass);
  add(Child(ChildSection::kTop,
            Member("resolved_model_class", "",
                   "Class the probe actually built; empty if it built none.",
                   COMPATLAB_MEMBER(result.resolved_model_class)),
            "model_class"),
      every_pass);

  group = FieldGroup::kContext;
  add(Member("started_at", kTime, "When the test was started (the fork request).",
             COMPATLAB_MEMBER(started_at)),
      every_pass);
  add(Member("finished_at", kTime, "When the test process was reaped.",
             COMPATLAB_MEMBER(finished_at)),
      every_pass);
  add(Member("host", "", "Host name of the machine that ran the test.", COMPATLAB_MEMBER(host)),
      every_pass);
  add(Member("cpu_model", "", "CPU model name of that machine.", COMPATLAB_MEMBER(cpu_model)));
  add(Member("jobs", "", "Number of tests the sweep ran in parallel.", COMPATLAB_MEMBER(jobs)));
  add(Member("compatlab_version", "", "Version of compatlab that ran the test.",
             COMPATLAB_MEMBER(compatlab_version)),
      every_pass);

  // Schema version 2: compile mode, generate and train, accuracy, fallback
  // audit, dynamo counters, compile cache. Appended: ALTER TABLE adds columns
  // at the end, so a migrated store has the same column order as a new one.
  group = FieldGroup::kResult;
  version = 2;
  constexpr std::string_view kTokensPerS = "tokens/s";
  add(Member("compile_options", "",
             "torch.compile options as a JSON object (dynamic, fullgraph, ...); empty in eager "
             "mode.",
             COMPATLAB_MEMBER(result.compile_options)),
      every_compile);
  add(Metric(Member(
          "eager_steady_median_s", kSeconds,
          "Compile mode: median steady-state time of the eager model in the same process, its "
          "calls in blocks alternating with blocks of compiled calls.",
          COMPATLAB_MEMBER(result.eager_steady_median_s))),
      steady_compile);
  add(Metric(Member("eager_steady_p90_s", kSeconds,
                    "Compile mode: 90th percentile of those eager calls.",
                    COMPATLAB_MEMBER(result.eager_steady_p90_s))),
      steady_compile);
  add(Metric(Member("speedup", "",
                    "Compile mode: the eager blocks' median of medians over the compiled blocks'.",
                    COMPATLAB_MEMBER(result.speedup))),
      steady_compile);
  add(Metric(Member(
          "tokens_per_s", kTokensPerS,
          "Throughput in tokens per second: forward batch x seq_len per steady call, generate "
          "new tokens per second of decoding, train tokens per steady step; null for inputs "
          "that are not tokens.",
          COMPATLAB_MEMBER(result.tokens_per_s))),
      {{generate, all_modes, {}},
       {forward, all_modes, {FillWhen::kTokenInputs}},
       {forward, export_mode, {FillWhen::kTokenInputs}},
       {train, all_modes, {FillWhen::kTokenInputs, FillWhen::kMultiStep}}});
  add(Metric(
          Member("device_peak_bytes", kBytes,
                 "Peak device memory of the measured phases from the target's allocator statistics "
                 "(reset first); null on the CPU.",
                 COMPATLAB_MEMBER(result.device_peak_bytes))),
      {{all_kinds, all_modes, {FillWhen::kDevice}}});
  add(Metric(Member("device_memory_method", "",
                    "How device_peak_bytes was measured (the profile's statistics function).",
                    COMPATLAB_MEMBER(result.device_memory_method))),
      {{all_kinds, all_modes, {FillWhen::kDevice}}});
  add(Metric(Member(
          "acc_ref_dtype", "",
          "dtype of the CPU eager reference (float64, or float32 where float64 failed); empty "
          "when nothing was compared.",
          COMPATLAB_MEMBER(result.acc_ref_dtype))),
      {{all_kinds, all_modes, {FillWhen::kCompared}}});
  add(Metric(Member("acc_max_abs_err", "",
                    "Largest absolute difference between output and reference.",
                    COMPATLAB_MEMBER(result.acc_max_abs_err))),
      only(forward, {FillWhen::kCompared}));
  add(Metric(Member("acc_max_rel_err", "",
                    "Largest relative difference between output and reference.",
                    COMPATLAB_MEMBER(result.acc_max_rel_err))),
      only(forward, {FillWhen::kCompared}));
  add(Metric(Member("acc_rmse", "", "Root mean square error of the output against the reference.",
                    COMPATLAB_MEMBER(result.acc_rmse))),
      only(forward, {FillWhen::kCompared}));
  add(Metric(Member(
          "acc_eager_rmse", "",
          "Root mean square error of the eager run in the test's dtype on the target against "
          "the reference (the baseline of the RMSE-ratio rule).",
          COMPATLAB_MEMBER(result.acc_eager_rmse))),
      only(forward, {FillWhen::kCompared}));
  add(Metric(Member("acc_cosine", "", "Cosine similarity of the output and the reference.",
                    COMPATLAB_MEMBER(result.acc_cosine))),
      only(forward, {FillWhen::kCompared}));
  add(Metric(Member("acc_atol", "", "Absolute tolerance of the allclose rule used.",
                    COMPATLAB_MEMBER(result.acc_atol))),
      {{all_kinds, all_modes, {FillWhen::kCompared}}});
  add(Metric(Member("acc_rtol", "", "Relative tolerance of the allclose rule used.",
                    COMPATLAB_MEMBER(result.acc_rtol))),
      {{all_kinds, all_modes, {FillWhen::kCompared}}});
  add(Metric(Member("acc_multiplier", "", "Multiplier of the RMSE-ratio rule used.",
                    COMPATLAB_MEMBER(result.acc_multiplier))),
      {{all_kinds, all_modes, {FillWhen::kCompared}}});
  add(Metric(
      Member("acc_rule", "",
             "Accuracy rule that decided (doc/accuracy.md): allclose, rmse_ratio or cosine "
             "(forward), tokens_match or near_tie (generate), loss_and_grad (train), baseline "
             "(CPU eager rows: the gap to float64 only), or failed (fail_accuracy); empty when "
             "nothing was compared (acc_not_measured says why).",
             COMPATLAB_MEMBER(result.acc_rule))));
  add(Metric(Member("gen_new_tokens", "tokens", "generate: new tokens decoded per call.",
                    COMPATLAB_MEMBER(result.gen_new_tokens))),
      only(generate));
  add(Metric(Member("gen_prefill_s", kSeconds, "generate: time to the first new token (prefill).",
                    COMPATLAB_MEMBER(result.gen_prefill_s))),
      only(generate));
  add(Metric(Member("gen_decode_token_s", kSeconds, "generate: median time per decoded token.",
                    COMPATLAB_MEMBER(result.gen_decode_token_s))),
      only(generate));
  add(Metric(Member("gen_token_match_rate", "",
                    "generate: fraction of new tokens equal to the reference's greedy tokens.",
                    COMPATLAB_MEMBER(result.gen_token_match_rate))),
      only(generate, {FillWhen::kCompared}));
  add(Metric(Member("gen_first_divergence", "",
                    "generate: index of the first new token that differs from the reference; null "
                    "when all match.",
                    COMPATLAB_MEMBER(result.gen_first_divergence))));
  add(Metric(Member(
          "gen_divergence_logit_gap", "",
          "generate: at the first divergence, the reference's score of its own token minus its "
          "score of the target's token (a near-tie explains a divergence).",
          COMPATLAB_MEMBER(result.gen_divergence_logit_gap))),
      only(generate, {FillWhen::kDiverged}));
  add(Metric(
          Member("gen_tie_tolerance", "",
                 "generate: largest logit gap the rule still counts as a tie for the test's dtype.",
                 COMPATLAB_MEMBER(result.gen_tie_tolerance))),
      only(generate, {FillWhen::kDiverged}));
  add(Metric(Member("train_steps", "", "train: optimizer steps run.",
                    COMPATLAB_MEMBER(result.train_steps))),
      only(train));
  add(Metric(Member("train_first_step_s", kSeconds,
                    "train: the first step (forward, loss, backward, AdamW; includes compilation).",
                    COMPATLAB_MEMBER(result.train_first_step_s))),
      only(train));
  add(Metric(Member("train_steady_step_s", kSeconds,
                    "train: median time of the steps after the first.",
                    COMPATLAB_MEMBER(result.train_steady_step_s))),
      only(train, {FillWhen::kMultiStep}));
  add(Curve(ListKind::kReals,
            Metric(Member("train_loss", "", "train: loss of each step as a JSON array.",
                          COMPATLAB_MEMBER(result.train_loss)))),
      only(train));
  add(Curve(ListKind::kReals,
            Metric(Member("train_ref_loss", "",
                          "train: loss of each step of the CPU reference (JSON array).",
                          COMPATLAB_MEMBER(result.train_ref_loss)))),
      only(train, {FillWhen::kCompared}));
  add(Metric(Member(
          "train_grad_cosine", "",
          "train: cosine similarity of the first step's gradients and the reference's (before "
          "any update).",
          COMPATLAB_MEMBER(result.train_grad_cosine))),
      only(train, {FillWhen::kCompared}));
  add(Metric(Member("train_grad_cosine_last", "", "train: the same for the last step's gradients.",
                    COMPATLAB_MEMBER(result.train_grad_cosine_last))),
      only(train, {FillWhen::kCompared}));
  add(Metric(Member("train_grad_cosine_min", "", "train: gradient cosine the rule requires.",
                    COMPATLAB_MEMBER(result.train_grad_cosine_min))),
      only(train, {FillWhen::kCompared}));
  add(Metric(Member("train_loss_max_abs_err", "",
                    "train: largest absolute difference between the losses and the reference's.",
                    COMPATLAB_MEMBER(result.train_loss_max_abs_err))),
      only(train, {FillWhen::kCompared}));
  add(Metric(Member(
          "fallback_audit", "",
          "CPU-fallback audit: audited, not_applicable (cpu target), partitioner (mode export "
          "on executorch, mode compile on openvino: fallback_ops from the stack's partitioner), "
          "or unavailable: REASON; empty when no model ran.",
          COMPATLAB_MEMBER(result.fallback_audit))),
      every_pass);
  add(Metric(Member("ops_executed", "", "Distinct operator overloads the audited call executed.",
                    COMPATLAB_MEMBER(result.ops_executed))),
      {{all_kinds, all_modes, {FillWhen::kAudited}}});
  add(Metric(Member(
          "fallback_ops", "",
          "Executed operators with no kernel for the target's dispatch key (they ran through "
          "the CPU fallback) as a JSON object of op name to calls; executorch: op nodes left "
          "outside the XNNPACK partitions (portable kernels), op name to nodes.",
          COMPATLAB_MEMBER(result.fallback_ops))),
      {{all_kinds, all_modes, {FillWhen::kAudited}}});
  add(Metric(Member("backend_fallback_counts", "",
                    "The backend's own CPU-fallback counters as a JSON object of op name to calls; "
                    "empty when it has none.",
                    COMPATLAB_MEMBER(result.backend_fallback_counts))));
  add(Metric(Member("graph_breaks", "", "Compile mode: dynamo graph breaks.",
                    COMPATLAB_MEMBER(result.graph_breaks))),
      every_compile);
  add(Metric(Member("unique_graphs", "", "Compile mode: distinct graphs dynamo compiled.",
                    COMPATLAB_MEMBER(result.unique_graphs))),
      every_compile);
  add(Metric(Member("captured_calls", "", "Compile mode: calls dynamo captured into graphs.",
                    COMPATLAB_MEMBER(result.captured_calls))),
      every_compile);
  add(Metric(Member(
          "frames_run_eagerly", "",
          "Compile mode: frames dynamo gave up on (its recompile limit) whose calls then ran "
          "eagerly; a pass with some says so in status_detail.",
          COMPATLAB_MEMBER(result.frames_run_eagerly))),
      every_compile);
  add(Metric(Member(
          "graph_break_reasons", "",
          "Compile mode: distinct graph-break reasons as a JSON array (bounded); frames dynamo "
          "gave up on (its recompile limit), whose calls then ran eagerly, come first.",
          COMPATLAB_MEMBER(result.graph_break_reasons))),
      every_compile);
  add(Metric(Member("cache_hits", "",
                    "Compile cache hits (FX graph and AOTAutograd caches) of this run; its cache "
                    "directory started empty (cold).",
                    COMPATLAB_MEMBER(result.cache_hits))),
      every_compile);
  add(Metric(Member("cache_misses", "", "Compile cache misses of this run.",
                    COMPATLAB_MEMBER(result.cache_misses))),
      every_compile);
  add(Member("warm_state", "",
             "Warm rerun (--warm) in a second process sharing the cache directory: warm (cache "
             "hits > 0), no_cache_hits, or failed: STATUS; empty when there was none.",
             COMPATLAB_MEMBER(result.warm_state)));
  add(Member("warm_prepare_s", kSeconds, "prepare_s of the warm rerun.",
             COMPATLAB_MEMBER(result.warm_prepare_s)),
      {{all_kinds, compile, {FillWhen::kWarm}}});
  add(Member("warm_cache_hits", "", "Compile cache hits of the warm rerun.",
             COMPATLAB_MEMBER(result.warm_cache_hits)),
      {{all_kinds, compile, {FillWhen::kWarm}}});
  add(Member("warm_cache_misses", "", "Compile cache misses of the warm rerun.",
             COMPATLAB_MEMBER(result.warm_cache_misses)),
      {{all_kinds, compile, {FillWhen::kWarm}}});
  add(Member("error_signature", "",
             "The failure's normalised signature: error type and message (else the status "
             "detail) without numbers, addresses, paths and model names; what errors groups by. "
             "Empty for pass and skipped.",
             COMPATLAB_MEMBER(result.error_signature)));

  version = 3;
  add(Metric(Member("steady_min_s", kSeconds, "Fastest steady-state iteration.",
                    COMPATLAB_MEMBER(result.steady_min_s))),
      steady);

  // Version 4, the compiler's start-up apart from the model's compilation.
  version = 4;
  add(Member("compiler_startup_s", kSeconds,
             "Compile mode with inductor on a CPU target: the sweep's calibration compile "
             "(compile-stack imports, inductor's vector-ISA probe and one compile of a function "
             "of no model), paid once per sweep and left out of prepare_s; empty on a GPU "
             "target, whose compiler start-up (Triton's) stays in prepare_s.",
             COMPATLAB_MEMBER(result.compiler_startup_s)),
      {{all_kinds, compile, {FillWhen::kCpuInductor}}});

  // Version 5, load: a model under concurrent requests (serving benchmarks' figures).
  version = 5;
  add(Metric(Member("load_scenario", "",
                    "load: single_stream (one request at a time), offline (every request at "
                    "once) or server (Poisson arrivals at load_arrival_rate_per_s).",
                    COMPATLAB_MEMBER(result.load_scenario))),
      only(load));
  add(Metric(Member("load_engine", "",
                    "load: continuous_batching (transformers' manager) or static_batch "
                    "(batched static-cache generate where continuous batching cannot run; "
                    "status_detail says why).",
                    COMPATLAB_MEMBER(result.load_engine))),
      only(load));
  add(Metric(Member("load_requests", "", "load: requests served in the measured run.",
                    COMPATLAB_MEMBER(result.load_requests))),
      only(load));
  add(Metric(Member("load_output_tokens", "tokens", "load: new tokens of those requests.",
                    COMPATLAB_MEMBER(result.load_output_tokens))),
      only(load));
  add(Metric(Member("load_duration_s", kSeconds,
                    "load: the measured run, first arrival to last token.",
                    COMPATLAB_MEMBER(result.load_duration_s))),
      only(load));
  add(Metric(Member("load_offline_requests_per_s", "requests/s",
                    "load server: the offline throughput the rate multiplies (its group's offline "
                    "row's load_requests_per_s, or this process's own: load_base_source).",
                    COMPATLAB_MEMBER(result.load_offline_requests_per_s))),
      only(load, {FillWhen::kServer}));
  add(Metric(Member("load_arrival_rate_per_s", "requests/s",
                    "load server: the Poisson arrival rate (load_rate_multiple x "
                    "load_offline_requests_per_s).",
                    COMPATLAB_MEMBER(result.load_arrival_rate_per_s))),
      only(load, {FillWhen::kServer}));
  struct Percentile {
    std::string_view name;
    std::string_view description;
    std::optional<double> RunResult::*member;
  };
  const Percentile percentiles[] = {
      {"load_ttft_p50_s", "load: median time to first token (arrival to first new token).",
       &RunResult::load_ttft_p50_s},
      {"load_ttft_p90_s", "load: 90th percentile of the time to first token.",
       &RunResult::load_ttft_p90_s},
      {"load_ttft_p99_s", "load: 99th percentile of the time to first token.",
       &RunResult::load_ttft_p99_s},
      {"load_itl_p50_s", "load: median inter-token latency (gap between a request's tokens).",
       &RunResult::load_itl_p50_s},
      {"load_itl_p90_s", "load: 90th percentile of the inter-token latency.",
       &RunResult::load_itl_p90_s},
      {"load_itl_p99_s", "load: 99th percentile of the inter-token latency.",
       &RunResult::load_itl_p99_s},
      {"load_e2e_p50_s", "load: median end-to-end latency (arrival to last new token).",
       &RunResult::load_e2e_p50_s},
      {"load_e2e_p90_s", "load: 90th percentile of the end-to-end latency.",
       &RunResult::load_e2e_p90_s},
      {"load_e2e_p99_s", "load: 99th percentile of the end-to-end latency.",
       &RunResult::load_e2e_p99_s},
  };
  for (const Percentile& p : percentiles) {
    add(Metric(Member(
            p.name, kSeconds,
            p.description, [m = p.member](auto& r) -> auto& { return r.result.*m; })),
        only(load));
  }
  add(Metric(Member("load_output_tokens_per_s", kTokensPerS,
                    "load: new tokens per second of the measured run.",
                    COMPATLAB_MEMBER(result.load_output_tokens_per_s))),
      only(load));
  add(Metric(Member("load_requests_per_s", "requests/s",
                    "load: requests completed per second of the measured run.",
                    COMPATLAB_MEMBER(result.load_requests_per_s))),
      only(load));
  add(Metric(Member("load_goodput_per_s", "requests/s",
                    "load: requests per second that met both objectives (TTFT within "
                    "load_slo_ttft_s, mean inter-token latency within load_slo_itl_s).",
                    COMPATLAB_MEMBER(result.load_goodput_per_s))),
      only(load));
  add(Metric(Member("load_slo_ttft_s", kSeconds, "load: the goodput objective on TTFT.",
                    COMPATLAB_MEMBER(result.load_slo_ttft_s))),
      only(load));
  add(Metric(Member("load_slo_itl_s", kSeconds,
                    "load: the goodput objective on a request's mean inter-token latency.",
                    COMPATLAB_MEMBER(result.load_slo_itl_s))),
      only(load));
  add(Metric(Member("load_slo_source", "",
                    "load: where the objectives come from: kind_params (--slo), "
                    "single_stream_row (the objectives of its group's single_stream row in "
                    "this sweep, shared by every row of the group: load_slo_run_id) or "
                    "single_stream_p50x3 (3x the p50s of a single_stream run in the same "
                    "process: the single_stream row itself, or a row whose single_stream row "
                    "did not pass or that ran alone).",
                    COMPATLAB_MEMBER(result.load_slo_source))),
      only(load));
  add(Metric(Member("load_max_concurrency", "",
                    "load: most requests the engine served at once (scheduled and not yet "
                    "finished; static_batch: the largest batch).",
                    COMPATLAB_MEMBER(result.load_max_concurrency))),
      only(load));
  add(Metric(Member("load_recompiles", "",
                    "load, compile mode: graphs dynamo compiled during the measured runs "
                    "(shapes bucketed: doc/probe.md, \"Kind load\"); before version 17 "
                    "after the first request, with no warm-up.",
                    COMPATLAB_MEMBER(result.load_recompiles))),
      {{load, compile, {}}});
  // A list field since version 18 (kTypedLoadDistsVersion): list<double> in Parquet.
  add(Bulky(Curve(ListKind::kReals,
                  Metric(Member("load_ttft_dist", kSeconds,
                                "load: the TTFT distribution as a sorted JSON array (at most 256 "
                                "values: evenly spaced order statistics beyond).",
                                COMPATLAB_MEMBER(result.load_ttft_dist))),
                  kTypedLoadDistsVersion)),
      only(load));
  add(Bulky(Curve(ListKind::kReals,
                  Metric(Member("load_itl_dist", kSeconds,
                                "load: the inter-token latency distribution, the same way.",
                                COMPATLAB_MEMBER(result.load_itl_dist))),
                  kTypedLoadDistsVersion)),
      only(load));
  add(Bulky(Curve(ListKind::kReals,
                  Metric(Member("load_e2e_dist", kSeconds,
                                "load: the end-to-end latency distribution, the same way.",
                                COMPATLAB_MEMBER(result.load_e2e_dist))),
                  kTypedLoadDistsVersion)),
      only(load));

  // Version 6, load: the server rows of a group share their offline row's throughput.
  version = 6;
  add(Metric(Member("load_rate_multiple", "",
                    "load server: the rate as a multiple of load_offline_requests_per_s "
                    "(kind_params rate: 0.9 for 0.9x).",
                    COMPATLAB_MEMBER(result.load_rate_multiple))),
      only(load, {FillWhen::kServer}));
  add(Metric(Member("load_base_source", "",
                    "load server: where load_offline_requests_per_s comes from: offline_row (the "
                    "offline row of its group in this sweep, shared by every rate) or this_child "
                    "(measured in this process: that row did not pass, or the row ran alone).",
                    COMPATLAB_MEMBER(result.load_base_source))),
      only(load, {FillWhen::kServer}));
  add(Metric(Member("load_base_run_id", "",
                    "load server, load_base_source offline_row: the run_id of the offline row "
                    "whose load_requests_per_s is the base; empty otherwise.",
                    COMPATLAB_MEMBER(result.load_base_run_id))));

  // Version 7: verdicts that blame the right party, the test's own memory (issue 10).
  version = 7;
  add(Metric(Member("acc_not_measured", "",
                    "Why accuracy was not measured (doc/accuracy.md, \"Not measured\"): "
                    "reference_equals_target, reference_failed, random_output, sizes_differ or "
                    "no_float_output; empty when it was (or the test never got that far).",
                    COMPATLAB_MEMBER(result.acc_not_measured))));
  add(Metric(
      Member("acc_ref_fallback", "",
             "Why the float64 reference was not used (it raised, or was non-finite where the "
             "target is finite, with the count); empty when it was.",
             COMPATLAB_MEMBER(result.acc_ref_fallback))));
  add(Metric(Member("acc_nonfinite", "",
                    "forward: output values non-finite where the reference is not (any fails).",
                    COMPATLAB_MEMBER(result.acc_nonfinite))),
      only(forward, {FillWhen::kCompared}));
  add(Metric(Member("ill_conditioned", "",
                    "CPU eager rows (acc_rule baseline): 1 when the test's precision against "
                    "float64 fails the kind's rule (doc/accuracy.md), else 0.",
                    COMPATLAB_MEMBER(result.ill_conditioned))));
  add(Metric(Member("host_mem_bytes", kBytes,
                    "The test's own host memory (doc/results-schema.md, \"Host memory\"): the RSS "
                    "peak over build, first call and steady state minus host_rss_baseline_bytes; "
                    "what --mem-limit bounds.",
                    COMPATLAB_MEMBER(result.host_mem_bytes))),
      every_pass);
  add(Metric(Member("host_mem_build_bytes", kBytes,
                    "The build's share of host_mem_bytes: the RSS peak while building the model "
                    "and inputs minus host_rss_baseline_bytes.",
                    COMPATLAB_MEMBER(result.host_mem_build_bytes))),
      every_pass);
  add(Metric(Member("host_rss_baseline_bytes", kBytes,
                    "The test child's RSS after the target's set-up, right before the build (what "
                    "it was forked with: interpreter, torch, transformers).",
                    COMPATLAB_MEMBER(result.host_rss_baseline_bytes))),
      every_pass);
  add(Member(
      "blame", "",
      "Whose failure it is (doc/results-schema.md, \"Blame\"): model (the default, passes "
      "included), reduction (a rerun at full size or a milder reduction proved it), "
      "reference (the CPU reference failed), harness (harness_error) or environment (a package "
      "the environment lacks: missing_packages); a pass rate counts "
      "only the runs blamed on the model.",
      COMPATLAB_MEMBER(result.blame)));

  // Version 8, hub: where the model came from (a Hub repo at a commit) and at what size.
  version = 8;
  add(Metric(Member("model_source", "",
                    "Where the model came from: hf (an architecture's default config), hub (a Hub "
                    "repo's own config.json through huggingface_hub), ckpt (a local checkpoint) "
                    "or code (a team's own modelling code, --model-code).",
                    COMPATLAB_MEMBER(result.model_source))),
      every_pass);
  add(Metric(Member("hub_repo_id", "", "hub: the repo id (ORG/NAME).",
                    COMPATLAB_MEMBER(result.hub_repo_id))));
  add(Metric(Member("hub_commit", "",
                    "hub: the commit the revision resolved to (the Hub cache's snapshot).",
                    COMPATLAB_MEMBER(result.hub_commit))));
  add(Metric(Member("config_hash", "",
                    "SHA-256 of the config.json the model was built from (hub, ckpt).",
                    COMPATLAB_MEMBER(result.config_hash))));
  add(Metric(Member("reduced", "",
                    "1 when the model ran at a reduced configuration, 0 at full size "
                    "(param_count is what ran).",
                    COMPATLAB_MEMBER(result.reduced))),
      every_pass);
  add(Metric(Member("reduction", "",
                    "How: the reduced fields (hidden_size 1024->64, ...) and kept features, or "
                    "full size with random weights (init skipped) or the repo's own weights.",
                    COMPATLAB_MEMBER(result.reduction))),
      every_pass);

  // Version 9, mode export: torch.export, then a deployment stack's lowering and runtime.
  version = 9;
  const std::vector<FillRule> exported = {forward_export};
  add(Metric(Member("export_strict", "",
                    "Mode export: 1 when torch.export needed strict mode (non-strict failed), "
                    "else 0.",
                    COMPATLAB_MEMBER(result.export_strict))),
      exported);
  add(Metric(Member("export_s", kSeconds, "Mode export: torch.export of the model.",
                    COMPATLAB_MEMBER(result.export_s))),
      exported);
  add(Metric(Member("lower_s", kSeconds,
                    "Mode export: the target's lowering (converter, partitioner or AOT "
                    "compile) down to its artifact.",
                    COMPATLAB_MEMBER(result.lower_s))),
      exported);
  add(Metric(Member("load_s", kSeconds,
                    "Mode export: the target's runtime loading the artifact; prepare_s is "
                    "export_s + lower_s + load_s.",
                    COMPATLAB_MEMBER(result.load_s))),
      exported);
  add(Metric(Member("artifact_bytes", kBytes,
                    "Mode export: size of the lowered artifact on disk (.pt2, .onnx, OpenVINO "
                    ".xml and .bin, .pte).",
                    COMPATLAB_MEMBER(result.artifact_bytes))),
      exported);
  add(Metric(Member("unconverted_ops", "",
                    "Mode export: op names the target's converter reported it cannot convert "
                    "(JSON array; status fail_to_compile at stage lower); empty otherwise.",
                    COMPATLAB_MEMBER(result.unconverted_ops))));
  add(Child(ChildSection::kStack,
            Member("stack_versions", "",
                   "Mode export: versions of the target stack's packages as a JSON object "
                   "(onnxruntime, onnxscript, onnx, openvino, executorch, ...); part of the "
                   "stack beside torch and transformers; empty in other modes.",
                   COMPATLAB_MEMBER(result.stack_versions))),
      exported);

  // Version 10, own code: a code:NAME@HASH model's files and their hashes.
  version = 10;
  add(Metric(Member("code_files", "",
                    "code: models: the modelling code's files as a JSON array of {path, rel, "
                    "sha256}: FILE and every module it imports from its own directory tree, "
                    "sorted by rel (path relative to FILE's directory), with the hashes the child "
                    "read before it built the model; repro checks each; empty otherwise.",
                    COMPATLAB_MEMBER(result.code_files))));
  add(Metric(Member("baseline_ref_class", "",
                    "code: models, kind forward: the stock class the variant was compared with "
                    "(transformers' own class for its architecture, built from the variant's "
                    "config with its weights); none: or failed: with the reason.",
                    COMPATLAB_MEMBER(result.baseline_ref_class))));
  add(Metric(Member("baseline_max_abs_err", "",
                    "code: models, kind forward: largest absolute difference between the "
                    "variant's output and the baseline reference's (baseline_ref_class on the "
                    "same weights and inputs, CPU float64).",
                    COMPATLAB_MEMBER(result.baseline_max_abs_err))));
  add(Metric(Member("baseline_cosine", "",
                    "code: models, kind forward: cosine similarity of the variant's output and "
                    "the baseline reference's.",
                    COMPATLAB_MEMBER(result.baseline_cosine))));
  // Version 11, noise: the machine's state per measured phase, the steady median's
  // confidence interval, the noisy rule (doc/results-schema.md, "Noise").
  version = 11;
  const std::vector<FillRule> first_call = {{all_kinds, all_modes, {}}};
  add(Metric(Member("prepare_load_avg", "",
                    "The machine's 1-minute load average around the first call (the larger of "
                    "its samples at the call's start and end).",
                    COMPATLAB_MEMBER(result.prepare_load_avg))),
      first_call);
  add(Metric(Member("prepare_cpu_per_wall", "",
                    "The test child's CPU time (user + system, every thread) over the first "
                    "call's wall time; above 1 with several threads.",
                    COMPATLAB_MEMBER(result.prepare_cpu_per_wall))),
      first_call);
  add(Metric(Member("prepare_invol_switches", "",
                    "Involuntary context switches of the test child during the first call.",
                    COMPATLAB_MEMBER(result.prepare_invol_switches))),
      first_call);
  add(Metric(Member("prepare_procs_running", "",
                    "Runnable tasks of the machine outside the test child's process group and "
                    "its parent, the supervisor (state R in /proc), mean of the first call's "
                    "samples.",
                    COMPATLAB_MEMBER(result.prepare_procs_running))),
      first_call);
  add(Metric(Member("steady_load_avg", "",
                    "The machine's 1-minute load average around the steady phase (the larger "
                    "of its samples at the phase's start and end).",
                    COMPATLAB_MEMBER(result.steady_load_avg))),
      every_pass);
  add(Metric(Member("steady_cpu_per_wall", "",
                    "The test child's CPU time (user + system, every thread) over the steady "
                    "phase's wall time; above 1 with several threads.",
                    COMPATLAB_MEMBER(result.steady_cpu_per_wall))),
      every_pass);
  add(Metric(Member("steady_invol_switches", "",
                    "Involuntary context switches of the test child during the steady phase.",
                    COMPATLAB_MEMBER(result.steady_invol_switches))),
      every_pass);
  add(Metric(Member("steady_procs_running", "",
                    "Runnable tasks of the machine outside the test child's process group and "
                    "its parent, the supervisor (state R in /proc), mean of the steady phase's "
                    "samples.",
                    COMPATLAB_MEMBER(result.steady_procs_running))),
      every_pass);
  add(Metric(Member("steady_ci_low_s", kSeconds,
                    "Low end of the interval steady_median_s holds to from run to run: the "
                    "lowest of the calls' 95% interval (order statistics), the block medians' "
                    "interval and the median -10% (doc/probe.md, \"Steady state: drift\"; rows "
                    "stored before 2026-12-06: the calls' interval only); diff widens it when "
                    "noisy.",
                    COMPATLAB_MEMBER(result.steady_ci_low_s))),
      steady);
  add(Metric(Member("steady_ci_high_s", kSeconds,
                    "High end of the interval steady_median_s holds to from run to run: the "
                    "highest of the calls' and the block medians' intervals and the median "
                    "+10%.",
                    COMPATLAB_MEMBER(result.steady_ci_high_s))),
      steady);
  add(Metric(Member("noisy", "",
                    "1 when the noisy rule held in the steady phase (other runnable tasks "
                    "beyond the free cores, or the load average above the cores when they "
                    "cannot be read; CPU time below half the wall time on a CPU target; over "
                    "100 involuntary switches/s), else 0.",
                    COMPATLAB_MEMBER(result.noisy))),
      every_pass);
  add(Metric(Member("noisy_reason", "", "Which noisy rules held, in words; empty when quiet.",
                    COMPATLAB_MEMBER(result.noisy_reason))));
  // Version 12, curves: learning equivalence over many train steps.
  version = 12;
  add(Curve(ListKind::kReals,
            Metric(Member("train_grad_norm", "",
                          "train: the global gradient norm (float64 over every parameter) of each "
                          "step as a JSON array.",
                          COMPATLAB_MEMBER(result.train_grad_norm)))),
      only(train));
  add(Curve(ListKind::kReals,
            Metric(Member("train_ref_grad_norm", "",
                          "train: the same for each step of the CPU reference (JSON array).",
                          COMPATLAB_MEMBER(result.train_ref_grad_norm)))),
      only(train, {FillWhen::kCompared}));
  add(Curve(
      ListKind::kReals,
      Metric(Member("train_eager_loss", "",
                    "train, learning runs (steps >= 20): loss of each step of the CPU eager run "
                    "at the test's dtype in the same child (JSON array); empty for the CPU eager "
                    "row itself.",
                    COMPATLAB_MEMBER(result.train_eager_loss)))));
  add(Metric(Member("train_loss_rmse", "",
                    "train, learning runs: RMSE of the loss curve against the reference's.",
                    COMPATLAB_MEMBER(result.train_loss_rmse))));
  add(Metric(Member("train_eager_loss_rmse", "",
                    "train, learning runs: RMSE of train_eager_loss against the reference's loss "
                    "curve; the learning rule allows acc_multiplier times it (doc/accuracy.md).",
                    COMPATLAB_MEMBER(result.train_eager_loss_rmse))));
  // Version 10, curves: long outputs.
  add(Curve(ListKind::kRealPoints,
            Metric(Member(
                "gen_match_curve", "",
                "generate: the token match against the reference over positions, a JSON array "
                "of [p, match rate of new tokens 0..p-1] at p = 64, 256, 1024, 4096 below N, "
                "then N.",
                COMPATLAB_MEMBER(result.gen_match_curve)))),
      only(generate, {FillWhen::kCompared}));
  add(Curve(ListKind::kRealPoints,
            Metric(Member(
                "gen_decode_curve", "",
                "generate: decode time per token against position, a JSON array of [p, median "
                "seconds of the decode steps from new token p] (at most 64 buckets).",
                COMPATLAB_MEMBER(result.gen_decode_curve)))),
      only(generate));
  add(Curve(
      ListKind::kIntegerPoints,
      Metric(Member("gen_mem_curve", "",
                    "generate: host memory growth against position, a JSON array of [p, the "
                    "process RSS at new token p minus at new token 0, bytes] (first clocked call).",
                    COMPATLAB_MEMBER(result.gen_mem_curve)))));
  add(Metric(Member("gen_mem_growth_bytes", kBytes,
                    "generate: the process RSS at the last new token minus at the first.",
                    COMPATLAB_MEMBER(result.gen_mem_growth_bytes))));
  add(Metric(Member("gen_ref_distinct_tokens", "",
                    "generate: distinct tokens among the reference's new tokens; below 8 in 32 or "
                    "more new tokens the reference is degenerate (acc_not_measured).",
                    COMPATLAB_MEMBER(result.gen_ref_distinct_tokens))),
      only(generate, {FillWhen::kCompared}));
  add(Metric(Member("gen_ref_near_tie_share", "",
                    "generate: share of the reference's steps whose top-2 score gap is within the "
                    "tie tolerance.",
                    COMPATLAB_MEMBER(result.gen_ref_near_tie_share))),
      only(generate, {FillWhen::kCompared}));
  // Version 13, noise of the first call: the noisy rule over the phase prepare_s times.
  version = 13;
  add(Metric(Member("prepare_noisy", "",
                    "1 when the noisy rule held during the first call (the rule of noisy, over "
                    "the call prepare_s times), else 0; diff widens prepare_s by it.",
                    COMPATLAB_MEMBER(result.prepare_noisy))),
      first_call);
  add(Metric(Member("prepare_noisy_reason", "",
                    "Which noisy rules held during the first call, in words; empty when quiet.",
                    COMPATLAB_MEMBER(result.prepare_noisy_reason))));
  // Version 14: a reduced model's failure rerun at full size or a milder reduction, the proof
  // a failure is the reduction's (doc/results-schema.md, "Blame"; issue 10).
  version = 14;
  add(Member("rerun_status", "",
             "A reduced model's failure, rerun once by the sweep at full size (or a milder "
             "reduction, rerun_size): the rerun's status; empty when no rerun ran.",
             COMPATLAB_MEMBER(result.rerun_status)));
  add(Member("rerun_error_signature", "",
             "The rerun's error signature (empty when it passed); blame is reduction only when "
             "it is not error_signature and the rerun was conclusive.",
             COMPATLAB_MEMBER(result.rerun_error_signature)));
  add(Member("rerun_size", "",
             "What the rerun ran at: full (the full config, random weights) or milder (the "
             "documented milder reduction: full size did not fit the memory budget).",
             COMPATLAB_MEMBER(result.rerun_size)));
  add(Member("rerun_reduction", "", "The rerun's own reduction text (what it ran at, in words).",
             COMPATLAB_MEMBER(result.rerun_reduction)));
  // Version 16, load: every row of a group judged by one objective, its single_stream row's.
  version = 16;
  add(Metric(Member("load_slo_run_id", "",
                    "load, load_slo_source single_stream_row: the run_id of the single_stream "
                    "row whose objectives (load_slo_ttft_s, load_slo_itl_s) the row took; "
                    "empty otherwise.",
                    COMPATLAB_MEMBER(result.load_slo_run_id))));
  // Version 17, load: compile mode's warm-up before the measured runs, its time and graphs apart.
  version = 17;
  add(Metric(Member("load_warmup_s", kSeconds,
                    "load, compile mode: the warm-up between the first request and the steady "
                    "phase: the steady phase's runs served once un-timed, so that the shapes "
                    "they meet compile before they are measured (doc/probe.md, \"Kind load\").",
                    COMPATLAB_MEMBER(result.load_warmup_s))),
      {{load, compile, {}}});
  add(Metric(Member("load_warmup_recompiles", "",
                    "load, compile mode: graphs dynamo compiled during the warm-up "
                    "(load_recompiles counts those of the measured runs).",
                    COMPATLAB_MEMBER(result.load_warmup_recompiles))),
      {{load, compile, {}}});
  // Version 18 adds no field: kind load's distributions are typed list columns in Parquet
  // (kTypedLoadDistsVersion above).
  // Version 19, blame environment: the packages a failure's message names as missing.
  version = 19;
  add(Member("missing_packages", "",
             "The packages the failure's error message says the environment lacks (transformers' "
             "\"requires the X library but it was not found\", Python's \"No module named 'X'\"), "
             "joined with \", \"; set by compatlab from error_message when the record is made or "
             "imported (core/blame.h, MissingPackages), empty otherwise. Not empty: blame is "
             "environment (unless harness).",
             COMPATLAB_MEMBER(result.missing_packages)));
  // Version 22 (issue 46): where a sweep's time went, and noisy tests measured again.
  version = 22;
  add(Metric(Member("steady_wall_s", kSeconds,
                    "Wall seconds of the steady phase (its warm-up included; compile and export "
                    "modes: the alternating blocks of both callables): where a sweep's time went.",
                    COMPATLAB_MEMBER(result.steady_wall_s))));
  add(Metric(Member("reference_s", kSeconds,
                    "Wall seconds of the CPU reference and the comparison with it (stage "
                    "compare).",
                    COMPATLAB_MEMBER(result.reference_s))));
  add(Member("remeasure_state", "",
             "A noisy passing test measured again at the end of the sweep (--remeasure-noisy, "
             "doc/results-schema.md, \"Noise\"): quiet (the new measurement was quiet: its "
             "figures are the row's), still_noisy (noisy again: the row has the measurement "
             "with the lower steady median, still marked), failed: STATUS (the row keeps the "
             "first), machine_busy (the machine stayed busy: not measured again); empty when "
             "not measured again.",
             COMPATLAB_MEMBER(result.remeasure_state)));
  add(Member("remeasure_other_steady_median_s", kSeconds,
             "steady_median_s of the measurement that is not the row's (remeasure_state quiet "
             "or still_noisy).",
             COMPATLAB_MEMBER(result.remeasure_other_steady_median_s)));
  add(Member("remeasure_other_prepare_s", kSeconds,
             "prepare_s of the measurement that is not the row's.",
             COMPATLAB_MEMBER(result.remeasure_other_prepare_s)));
  add(Member("remeasure_other_noisy_reason", "",
             "noisy_reason of the measurement that is not the row's.",
             COMPATLAB_MEMBER(result.remeasure_other_noisy_reason)));
  // Version 23, where the time goes: --profile's window (doc/probe.md, "Profile"). The lists
  // of named rows are JSON text as fallback_ops is (a ListKind holds numbers only).
  version = 23;
  add(Metric(Member("profile", "",
                    "--profile: steady (a window of steady calls after the measured ones) or "
                    "prepare (the first call), with a note in parentheses when the trace was not "
                    "kept; unavailable: REASON when the profiler failed; empty when not profiled.",
                    COMPATLAB_MEMBER(result.profile))));
  add(Metric(Member("profile_calls", "", "--profile: the calls the profiled window holds.",
                    COMPATLAB_MEMBER(result.profile_calls))));
  add(Metric(Member("profile_median_s", kSeconds,
                    "--profile: the median call under the profiler (steady_median_s is the "
                    "median without it: their ratio is the profiler's overhead).",
                    COMPATLAB_MEMBER(result.profile_median_s))));
  add(Metric(Member("profile_compute_s", kSeconds,
                    "--profile: per call, the ops' own compute (self time; with device "
                    "activities the device's kernel time).",
                    COMPATLAB_MEMBER(result.profile_compute_s))));
  add(Metric(Member("profile_copy_s", kSeconds,
                    "--profile: per call, copies outside fallback ops on a target other than "
                    "the cpu (host-device and on the device); 0 on the cpu target.",
                    COMPATLAB_MEMBER(result.profile_copy_s))));
  add(Metric(Member("profile_fallback_s", kSeconds,
                    "--profile: per call, the ops the fallback audit names as CPU fallback, "
                    "their whole time.",
                    COMPATLAB_MEMBER(result.profile_fallback_s))));
  add(Metric(Member("profile_framework_s", kSeconds,
                    "--profile: per call, Python, modules and dispatch around the ops.",
                    COMPATLAB_MEMBER(result.profile_framework_s))));
  add(Metric(Member("profile_idle_s", kSeconds,
                    "--profile: per call, wall time the calling thread spent off the CPU.",
                    COMPATLAB_MEMBER(result.profile_idle_s))));
  add(Metric(Member("profile_top_ops", "",
                    "--profile: the ops (by name and input shapes) with the most self time, a "
                    "JSON array of {name, shapes, calls, self_s, share} (calls and self_s per "
                    "call, share of the window's wall time), at most 10.",
                    COMPATLAB_MEMBER(result.profile_top_ops))));
  add(Metric(Member("profile_top_lines", "",
                    "--profile: the model's source lines (an op's first frame outside the "
                    "framework) with the most op self time below them, a JSON array of {line, "
                    "self_s, share}, at most 10.",
                    COMPATLAB_MEMBER(result.profile_top_lines))));
  add(Metric(Member("profile_fallback_ops", "",
                    "--profile: the fallback category's ops as a JSON object of op name to calls "
                    "per call (outermost calls; compare fallback_ops).",
                    COMPATLAB_MEMBER(result.profile_fallback_ops))));
  add(Member("profile_trace_sha256", "",
             "--profile: SHA-256 of the gzip Chrome trace kept in the store's artifact "
             "directory as <digest>.json.gz (doc/results-schema.md, \"Profile traces\"); empty "
             "when none was kept.",
             COMPATLAB_MEMBER(result.profile_trace_sha256)));
  add(Member("profile_trace_bytes", kBytes, "--profile: the kept trace's size.",
             COMPATLAB_MEMBER(result.profile_trace_bytes)));
  // Version 24, builds: what the torch build is made of beyond its version, so that a diff
  // between two stacks says when it compares builds and not only releases.
  version = 24;
  add(Child(ChildSection::kStack,
            Member("torch_build", "",
                   "What the torch build was made for: cpu, cuda and its version (\"cuda 13.0\") "
                   "or rocm and its version (torch.version.cuda, torch.version.hip).",
                   COMPATLAB_MEMBER(result.torch_build))),
      every_pass);
  add(Child(ChildSection::kStack,
            Member("blas", "",
                   "The torch build's BLAS (BLAS_INFO of torch.__config__.show(), with MKL's "
                   "version: \"mkl 2024.2\"); empty when the build names none.",
                   COMPATLAB_MEMBER(result.blas))));
  add(Child(ChildSection::kStack,
            Member("openmp", "",
                   "The torch build's OpenMP version and the runtime library loaded in the test "
                   "process (\"OpenMP 201511 libgomp\"); empty without OpenMP.",
                   COMPATLAB_MEMBER(result.openmp))));
  add(Child(
      ChildSection::kStack,
      Member("cxx_compiler", "",
             "Inductor's C++ compiler on the CPU and its version's first line (\"g++ "
             "(Debian 12.2.0-14+deb12u1) 12.2.0\"); empty when inductor's C++ builder had "
             "not been imported in the test process (it usually has: the model imports load it).",
             COMPATLAB_MEMBER(result.cxx_compiler))));
  // Version 25, stacks as data: the stack a run ran on (`sweep --stacks`, doc/stacks.md).
  version = 25;
  add(Member("stack", "",
             "The named stack the run ran on (doc/stacks.md): default (the project's own "
             "environment), a name made by `compatlab stack add`, empty for an interpreter given "
             "with --python and for runs stored before schema 25.",
             COMPATLAB_MEMBER(result.stack)));

  // Version 27, the compile store (doc/compile-cache.md).
  version = 27;
  add(Metric(Member(
          "compile_key", "",
          "Compile mode: the compile store's key of this test as a JSON object of readable "
          "parts (torch and its commit, python, backend and its version, device model: a GPU's "
          "name or the CPU's vector ISA as inductor picks it, inductor's C++ compiler, compile "
          "options, dtype, shapes, test id); what cache explain compares.",
          COMPATLAB_MEMBER(result.compile_key))),
      every_compile);
  add(Metric(Member("prepare_state", "",
                    "Compile mode: what prepare_s measured: model-cold (no artifact of this "
                    "model) or warm-remote (a compile-store entry loaded before the first call, "
                    "sweep --cache-from).",
                    COMPATLAB_MEMBER(result.prepare_state))),
      every_compile);
  add(Metric(Member("cache_bundle", "",
                    "sweep --cache-from: hit (the entry loaded and gave cache hits), inert (it "
                    "loaded but gave none), or none: WHY (no entry for this key, or it did not "
                    "load); empty without --cache-from.",
                    COMPATLAB_MEMBER(result.cache_bundle))));
  add(Metric(Member("compile_entry", "",
                    "Compile mode, a model-cold pass: kept ID (its compile-store entry, in the "
                    "local store) or not kept: WHY; empty when none was to be kept.",
                    COMPATLAB_MEMBER(result.compile_entry))));
  struct CacheCount {
    std::string_view name;
    std::string_view description;
    std::optional<int64_t> RunResult::*member;
  };
  const CacheCount cache_counts[] = {
      {"fx_graph_cache_hits", "Compile mode: inductor's FX graph cache hits of the first call.",
       &RunResult::fx_graph_cache_hits},
      {"fx_graph_cache_misses",
       "Compile mode: FX graph cache misses of the first call (graphs compiled).",
       &RunResult::fx_graph_cache_misses},
      {"aot_autograd_cache_hits", "Compile mode: AOTAutograd cache hits of the first call.",
       &RunResult::aot_autograd_cache_hits},
      {"aot_autograd_cache_misses", "Compile mode: AOTAutograd cache misses of the first call.",
       &RunResult::aot_autograd_cache_misses},
      {"autotune_cache_hits",
       "Compile mode: inductor's autotune cache hits of the first call (Triton's kernels; 0 "
       "on the CPU).",
       &RunResult::autotune_cache_hits},
      {"autotune_cache_misses", "Compile mode: autotune cache misses of the first call.",
       &RunResult::autotune_cache_misses},
      {"fx_graph_remote_cache_hits",
       "Compile mode, a target with redis_cache: inductor's Redis remote FX graph cache hits of "
       "the first call (counted in fx_graph_cache_hits too).",
       &RunResult::fx_graph_remote_cache_hits},
      {"fx_graph_remote_cache_misses",
       "Compile mode, a target with redis_cache: Redis remote FX graph cache misses of the first "
       "call.",
       &RunResult::fx_graph_remote_cache_misses},
      {"aot_autograd_remote_cache_hits",
       "Compile mode, a target with redis_cache: Redis remote AOTAutograd cache hits of the first "
       "call.",
       &RunResult::aot_autograd_remote_cache_hits},
      {"aot_autograd_remote_cache_misses",
       "Compile mode, a target with redis_cache: Redis remote AOTAutograd cache misses of the "
       "first call.",
       &RunResult::aot_autograd_remote_cache_misses},
  };
  for (const CacheCount& c : cache_counts) {
    add(Metric(Member(
            c.name, "", c.description, [m = c.member](auto& r) -> auto& { return r.result.*m; })),
        every_compile);
  }

  // Version 28 (issue 44): a test over several ranks,
  // one process group (doc/ranks.md). `ranks` is part of the test's identity.
  version = 28;
  group = FieldGroup::kSpec;
  add(Member("ranks", "",
             "Processes of one process group the test ran as (sweep --ranks, doc/ranks.md); 1 "
             "is the one-process test. Part of the identity when not 1.",
             COMPATLAB_MEMBER(spec.ranks)));
  group = FieldGroup::kResult;
  add(Metric(Member("dist_backend", "",
                    "ranks > 1: the process group's backend (gloo on the cpu, nccl on cuda, the "
                    "profile's ranks_backend elsewhere); empty for one rank.",
                    COMPATLAB_MEMBER(result.dist_backend))));
  add(Metric(Member("parallel_plan", "",
                    "ranks > 1: how the model was split, in words: tp with transformers' tp_plan "
                    "(its rule count), tp with parallelize_module and compatlab's plan of the "
                    "architecture family, or dp (DistributedDataParallel, train); empty for one "
                    "rank.",
                    COMPATLAB_MEMBER(result.parallel_plan))));
  add(Curve(ListKind::kReals,
            Metric(Member("rank_host_mem", kBytes,
                          "ranks > 1: each rank's host_mem_bytes (its own process's peak over "
                          "its baseline), rank 0 first, as a JSON array; host_mem_bytes is "
                          "rank 0's.",
                          COMPATLAB_MEMBER(result.rank_host_mem)))));
  add(Curve(ListKind::kReals,
            Metric(Member("rank_steady_median", kSeconds,
                          "ranks > 1: each rank's steady_median_s (train: train_steady_step_s), "
                          "rank 0 first, as a JSON array; steady_median_s is rank 0's.",
                          COMPATLAB_MEMBER(result.rank_steady_median)))));
  add(Metric(Member("profile_collective_share", "",
                    "ranks > 1, --profile: the share of the profiled window's op self time "
                    "spent in collectives (c10d and the backend's ops), rank 0's.",
                    COMPATLAB_MEMBER(result.profile_collective_share))));

  // Version 29, dynamic shapes (doc/probe.md, "Dynamic shapes").
  AddDynamicShapeFields(add, group, version, compile);

  // Version 30, inductor's own cache-key details (doc/compile-cache.md, "Why a miss").
  version = 30;
  group = FieldGroup::kResult;
  add(Bulky(Metric(Member(
          "fx_graph_details", "",
          "Compile mode, inductor: its FX graph cache's key details of the first call as JSON "
          "({format, graphs: [{key, lines}], truncated}): per graph its key and "
          "FxGraphHashDetails' debug lines ([HASH] NAME: VALUE, a value cut past 160 "
          "characters, 64 KiB in all: truncated says what was left out); what cache explain "
          "compares with an entry's.",
          COMPATLAB_MEMBER(result.fx_graph_details)))),
      {{all_kinds, compile, {FillWhen::kCpuInductor}}});
  return fields;
}

#undef COMPATLAB_MEMBER

}  // namespace

std::string_view FillWhenName(FillWhen when) {
  switch (when) {
    case FillWhen::kCompared:
      return "compared";
    case FillWhen::kTokenInputs:
      return "token_inputs";
    case FillWhen::kMultiStep:
      return "multi_step";
    case FillWhen::kDiverged:
      return "diverged";
    case FillWhen::kAudited:
      return "audited";
    case FillWhen::kDevice:
      return "device";
    case FillWhen::kWarm:
      return "warm";
    case FillWhen::kCpuInductor:
      return "cpu_inductor";
    case FillWhen::kServer:
      return "server";
    case FillWhen::kDynamic:
      return "dynamic";
  }
  return "";
}

const std::vector<FillWhen>& AllFillWhens() {
  static const std::vector<FillWhen>* const all = new std::vector<FillWhen>{
      FillWhen::kCompared, FillWhen::kTokenInputs, FillWhen::kMultiStep, FillWhen::kDiverged,
      FillWhen::kAudited,  FillWhen::kDevice,      FillWhen::kWarm,      FillWhen::kCpuInductor,
      FillWhen::kServer,   FillWhen::kDynamic};
  return *all;
}

const std::vector<FieldDef>& ResultFields() {
  static const std::vector<FieldDef>* const fields = new std::vector<FieldDef>(MakeResultFields());
  return *fields;
}

const FieldDef* FindResultField(std::string_view name) {
  for (const FieldDef& f : ResultFields()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

namespace {

absl::Status BadList(const FieldDef& field, std::string_view what) {
  return absl::InvalidArgumentError(fmt::format("field {}: {}", field.name, what));
}

// Python's json.dumps writes NaN, Infinity and -Infinity for non-finite
// floats; a list of numbers holds no strings, so the words can only be those.
std::string NonFiniteAsNull(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    bool replaced = false;
    for (std::string_view word : {"-Infinity", "Infinity", "NaN"}) {
      if (text.substr(i, word.size()) == word) {
        out += "null";
        i += word.size();
        replaced = true;
        break;
      }
    }
    if (!replaced) out += text[i++];
  }
  return out;
}

}  // namespace

absl::StatusOr<ListValue> ParseListText(const FieldDef& field, std::string_view text) {
  if (field.list == ListKind::kNone) return BadList(field, "not a list field");
  const nlohmann::json parsed = nlohmann::json::parse(
      field.list == ListKind::kReals ? NonFiniteAsNull(text) : std::string(text), nullptr,
      /*allow_exceptions=*/false);
  if (!parsed.is_array()) return BadList(field, "not a JSON array");
  if (parsed.size() > kMaxListElements) {
    return BadList(field, fmt::format("{} elements, over the limit of {} (doc/limits.md)",
                                      parsed.size(), kMaxListElements));
  }
  ListValue value;
  auto integer = [](const nlohmann::json& v) -> std::optional<int64_t> {
    if (v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX)) {
      return v.get<int64_t>();
    }
    return std::nullopt;
  };
  for (size_t i = 0; i < parsed.size(); ++i) {
    const nlohmann::json& element = parsed[i];
    if (field.list == ListKind::kReals) {
      if (element.is_null()) {
        value.reals.push_back(std::nullopt);
      } else if (element.is_number()) {
        value.reals.push_back(element.get<double>());
      } else {
        return BadList(field, fmt::format("element {} is not a number or null", i));
      }
      continue;
    }
    if (!element.is_array() || element.size() != 2) {
      return BadList(field, fmt::format("element {} is not a [position, value] pair", i));
    }
    const std::optional<int64_t> position = integer(element[0]);
    if (!position.has_value() || *position < 0) {
      return BadList(field, fmt::format("element {}: the position is not an integer >= 0", i));
    }
    value.positions.push_back(*position);
    if (field.list == ListKind::kRealPoints) {
      if (!element[1].is_number()) {
        return BadList(field, fmt::format("element {}: the value is not a number", i));
      }
      value.reals.push_back(element[1].get<double>());
    } else {
      const std::optional<int64_t> n = integer(element[1]);
      if (!n.has_value()) {
        return BadList(field, fmt::format("element {}: the value is not an integer", i));
      }
      value.integers.push_back(*n);
    }
  }
  return value;
}

size_t ListSize(const ListValue& value) {
  return value.positions.empty() ? value.reals.size() : value.positions.size();
}

nlohmann::ordered_json ListJson(const FieldDef& field, const ListValue& value) {
  nlohmann::ordered_json json = nlohmann::ordered_json::array();
  const size_t size = ListSize(value);
  for (size_t i = 0; i < size; ++i) {
    switch (field.list) {
      case ListKind::kReals:
        if (value.reals[i].has_value()) {
          json.push_back(*value.reals[i]);
        } else {
          json.push_back(nullptr);
        }
        break;
      case ListKind::kRealPoints:
        json.push_back({value.positions[i], value.reals[i].value_or(0.0)});
        break;
      case ListKind::kIntegerPoints:
        json.push_back({value.positions[i], value.integers[i]});
        break;
      case ListKind::kNone:
        break;
    }
  }
  return json;
}

std::string ListText(const FieldDef& field, const ListValue& value) {
  return ListJson(field, value).dump();
}

std::string_view ListKindName(ListKind kind) {
  switch (kind) {
    case ListKind::kReals:
      return "list<double>";
    case ListKind::kRealPoints:
      return "list<struct<position: int64, value: double>>";
    case ListKind::kIntegerPoints:
      return "list<struct<position: int64, value: int64>>";
    case ListKind::kNone:
      break;
  }
  return "";
}

std::string DocTypeName(const FieldDef& field) {
  std::string name;
  switch (field.type) {
    case FieldType::kText:
      name = "text";
      break;
    case FieldType::kInteger:
      name = "integer";
      break;
    case FieldType::kReal:
      name = "real";
      break;
  }
  if (field.nullable) name += " or null";
  return name;
}

std::string KindParamsToJson(const std::map<std::string, std::string>& kind_params) {
  // nlohmann::json keeps object keys sorted, so the text is canonical.
  return nlohmann::json(kind_params).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

absl::StatusOr<std::map<std::string, std::string>> KindParamsFromJson(std::string_view json) {
  nlohmann::json parsed = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) {
    return absl::InvalidArgumentError(
        fmt::format("kind_params: expected a JSON object, got '{}'", json));
  }
  return KindParamsFromJsonValue(parsed);
}

absl::StatusOr<std::map<std::string, std::string>> KindParamsFromJsonValue(
    const nlohmann::json& parsed) {
  if (!parsed.is_object()) {
    return absl::InvalidArgumentError(
        fmt::format("kind_params: expected a JSON object, got '{}'",
                    parsed.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
  }
  std::map<std::string, std::string> params;
  for (const auto& [key, value] : parsed.items()) {
    if (!value.is_string()) {
      return absl::InvalidArgumentError(
          fmt::format("kind_params: value of '{}' is not a string", key));
    }
    params[key] = value.get<std::string>();
  }
  return params;
}

}  // namespace compatlab
