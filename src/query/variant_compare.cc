#include "query/variant_compare.h"

#include <algorithm>
#include <utility>

#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "query/noise_mark.h"
#include "query/profile_compare.h"
#include "query/text_table.h"
#include "store/store.h"
#include "util/status.h"

namespace compatlab {
namespace {

using nlohmann::ordered_json;

bool VcLooksLikeModelId(std::string_view text) {
  for (std::string_view prefix : {"hf:", "hub:", "ckpt:", "code:"}) {
    if (text.starts_with(prefix) && text.size() > prefix.size()) return true;
  }
  return false;
}

// The model id a selector's model names: a model id as given, a model type as its hf: id.
std::string VcModelIdOf(std::string_view name) {
  if (VcLooksLikeModelId(name) || name == kHarnessModelId) return std::string(name);
  return "hf:" + std::string(name);
}

std::optional<double> VcAsReal(const std::optional<int64_t>& v) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}

// The test's own host memory when measured (schema 6), else the process peak: as diff.
std::optional<double> VcMemory(const RunResult& r) {
  return r.host_mem_bytes ? VcAsReal(r.host_mem_bytes) : VcAsReal(r.host_peak_rss_bytes);
}

// Number of distinct ops of a fallback_ops object; nullopt when not audited.
std::optional<int64_t> VcFallbackOpCount(const RunResult& r) {
  if (r.fallback_ops.empty()) return std::nullopt;
  ordered_json j = ordered_json::parse(r.fallback_ops, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return static_cast<int64_t>(j.size());
}

std::string VcNum(std::optional<double> v, const char* format) {
  return v ? fmt::format(fmt::runtime(format), *v) : "-";
}

std::string VcInt(std::optional<int64_t> v) { return v ? std::to_string(*v) : "-"; }

std::string VcPair(const std::string& base, const std::string& head) {
  return base == head ? base : base + "->" + head;
}

std::string VcMiB(std::optional<double> bytes) {
  return bytes ? fmt::format("{:.1f}", *bytes / (1024.0 * 1024.0)) : "-";
}

std::string VcStatusOf(const RunRecord& run) {
  return std::string(TestStatusName(run.result.status));
}

// BATCHxSEQ, or a dynamic test's every shape (BxS,BxS,...).
std::string VcShape(const TestSpec& s) {
  return s.IsDynamic() ? s.shapes : fmt::format("{}x{}", s.batch_size, s.seq_len);
}

// What tells a test from its twins beside its shape: "ranks=2" past one rank, "dynamic=true"
// for a dynamic test; "" for a one-rank static test.
std::string VcRanksDynamic(const TestSpec& s) {
  std::string out = s.ranks != 1 ? fmt::format(" ranks={}", s.ranks) : "";
  if (s.IsDynamic()) out += " dynamic=" + s.dynamic;
  return out;
}

ordered_json VcOpt(std::optional<double> v) { return v ? ordered_json(*v) : ordered_json(nullptr); }
ordered_json VcOpt(std::optional<int64_t> v) {
  return v ? ordered_json(*v) : ordered_json(nullptr);
}

// [low, high], or null.
ordered_json VcIntervalJson(const std::optional<TimingInterval>& i) {
  if (!i) return nullptr;
  return ordered_json::array({i->low, i->high});
}

// "1.50x [1.20-1.90]": a ratio and the range its figures' intervals allow.
std::string VcRatioText(std::optional<double> ratio, std::optional<TimingInterval> range) {
  if (!ratio) return "-";
  std::string text = fmt::format("{:.2f}x", *ratio);
  if (range && (range->low != *ratio || range->high != *ratio)) {
    text += fmt::format(" [{:.2f}-{:.2f}]", range->low, range->high);
  }
  return text;
}

ordered_json VcSideJson(const RunRecord& run) {
  const RunResult& r = run.result;
  return {{"run_id", run.run_id},
          {"sweep_id", run.sweep_id},
          {"model_id", run.spec.model_id},
          {"status", VcStatusOf(run)},
          {"error_signature", r.error_signature},
          {"acc_max_abs_err", VcOpt(r.acc_max_abs_err)},
          {"acc_cosine", VcOpt(r.acc_cosine)},
          {"baseline_ref_class", r.baseline_ref_class},
          {"baseline_max_abs_err", VcOpt(r.baseline_max_abs_err)},
          {"baseline_cosine", VcOpt(r.baseline_cosine)},
          {"prepare_s", VcOpt(r.prepare_s)},
          {"steady_median_s", VcOpt(r.steady_median_s)},
          {"steady_interval", VcIntervalJson(SteadyInterval(r))},
          {"noisy", VcOpt(r.noisy)},
          {"noisy_reason", r.noisy_reason},
          {"prepare_noisy", PrepareNoisy(r) ? 1 : 0},
          {"prepare_noisy_reason", r.prepare_noisy_reason},
          {"tokens_per_s", VcOpt(r.tokens_per_s)},
          {"graph_breaks", VcOpt(r.graph_breaks)},
          {"fallback_op_count", VcOpt(VcFallbackOpCount(r))},
          {"memory_bytes", VcOpt(VcMemory(r))},
          {"device_peak_bytes", VcOpt(r.device_peak_bytes)},
          {"torch_version", r.torch_version},
          {"transformers_version", r.transformers_version}};
}

ordered_json VcUnpairedJson(const RunRecord& run) {
  return {{"run_id", run.run_id},
          {"model_id", run.spec.model_id},
          {"target", run.spec.target},
          {"mode", run.spec.mode},
          {"kind", run.spec.kind},
          {"dtype", run.spec.dtype},
          {"batch_size", run.spec.batch_size},
          {"seq_len", run.spec.seq_len},
          {"ranks", run.spec.ranks},
          {"dynamic", run.spec.dynamic},
          {"shapes", run.spec.shapes},
          {"status", VcStatusOf(run)}};
}

// `side`, a bare word resolved against the store as serve resolves it: the sweep of that
// id when that sweep has runs, else the model of that type.
absl::StatusOr<CompareSide> VcResolveSide(Store& store, const CompareSide& side) {
  if (side.bare_word.empty()) return side;
  RunFilter filter;
  filter.sweep_id = side.runs.sweep_id;
  absl::StatusOr<int64_t> runs = store.CountRuns(filter);
  if (!runs.ok()) return Recode(runs.status(), absl::StatusCode::kInternal);
  return *runs > 0 ? side : ModelTypeSide(side);
}

// The runs of one side, from the store.
absl::StatusOr<std::vector<RunRecord>> VcSideRuns(Store& store, const std::string& option,
                                                  const CompareSide& side) {
  if (!side.runs.sweep_id.empty()) {
    if (absl::Status s = store.GetSweep(side.runs.sweep_id).status(); !s.ok()) {
      return absl::InvalidArgumentError(fmt::format("{}: {}", option, std::string(s.message())));
    }
  }
  RunFilter filter = side.runs.Filter();
  filter.model = side.model_id;
  absl::StatusOr<std::vector<RunRecord>> runs = store.QueryRuns(filter);
  if (!runs.ok()) return Recode(runs.status(), absl::StatusCode::kInternal);
  if (!side.model_id.empty()) {  // the filter matches substrings; a side is one model
    std::erase_if(*runs, [&](const RunRecord& r) { return r.spec.model_id != side.model_id; });
  }
  if (runs->empty() && !side.bare_word.empty() && !side.model_id.empty()) {
    return absl::InvalidArgumentError(fmt::format("{} {}: no runs of sweep {} or of {} in {}",
                                                  option, side.bare_word, side.bare_word,
                                                  side.model_id, store.path().string()));
  }
  if (runs->empty()) {
    return absl::InvalidArgumentError(
        fmt::format("{} {}: no runs in {}", option, side.Describe(), store.path().string()));
  }
  return runs;
}

}  // namespace

std::string CompareSide::Describe() const {
  std::string runs_text = runs.Describe();
  if (model_id.empty()) return runs_text;
  return runs_text.empty() ? "model=" + model_id : "model=" + model_id + "," + runs_text;
}

absl::StatusOr<CompareSide> ParseCompareSide(std::string_view text) {
  CompareSide side;
  if (text.empty()) return absl::InvalidArgumentError("an empty compare side");
  if (VcLooksLikeModelId(text) && text.find(',') == std::string_view::npos) {
    side.model_id = std::string(text);
    return side;
  }
  if (text.find('=') == std::string_view::npos) {
    side.runs.sweep_id = std::string(text);
    if (text.find(',') == std::string_view::npos) side.bare_word = std::string(text);
    return side;
  }
  std::string rest;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(start, end - start);
    if (item.starts_with("model=")) {
      if (!side.model_id.empty()) {
        return absl::InvalidArgumentError(fmt::format("'{}': model given twice", text));
      }
      if (item.size() == 6) {
        return absl::InvalidArgumentError(fmt::format("'{}': no value for model", text));
      }
      side.model_id = VcModelIdOf(item.substr(6));
    } else {
      rest += (rest.empty() ? "" : ",") + std::string(item);
    }
    start = end + 1;
  }
  if (!rest.empty()) {
    absl::StatusOr<DiffSide> runs = ParseDiffSide(rest);
    if (!runs.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("'{}': {} (or model=ID)", text, std::string(runs.status().message())));
    }
    side.runs = *std::move(runs);
  }
  return side;
}

CompareSide ModelTypeSide(const CompareSide& bare) {
  CompareSide side;
  side.model_id = VcModelIdOf(bare.bare_word);
  side.bare_word = bare.bare_word;
  return side;
}

std::string CrossModelKey(const TestSpec& spec) {
  TestSpec key = spec;
  key.model_id = "model";
  key.model_type.clear();
  key.model_class.clear();
  key.model_path.clear();
  key.kind_params.erase("trust_remote_code");
  return key.TestId();
}

std::optional<TimingInterval> RatioInterval(std::optional<TimingInterval> base,
                                            std::optional<TimingInterval> head) {
  if (!base || !head || base->low <= 0 || base->high <= 0 || head->low < 0) return std::nullopt;
  return TimingInterval{head->low / base->high, head->high / base->low};
}

std::optional<double> Ratio(std::optional<double> base, std::optional<double> head) {
  if (!base || !head || *base <= 0 || *head <= 0) return std::nullopt;
  return *head / *base;
}

VariantReport CompareVariant(std::vector<RunRecord> base_runs, std::vector<RunRecord> head_runs,
                             bool cross_model, const DiffThresholds& thresholds) {
  if (cross_model) {
    for (std::vector<RunRecord>* runs : {&base_runs, &head_runs}) {
      for (RunRecord& r : *runs) r.test_id = CrossModelKey(r.spec);
    }
  }
  // diff's engine: the current run per key on each side, paired, each pair's changes.
  DiffReport diff = DiffRuns(std::move(base_runs), std::move(head_runs), thresholds);
  VariantReport report;
  report.cross_model = cross_model;
  report.regressions = diff.Regressions();
  report.improvements = diff.Improvements();
  size_t h = 0;
  for (size_t b = 0; b < diff.base.size(); ++b) {
    while (h < diff.head.size() && diff.head[h].test_id < diff.base[b].test_id) ++h;
    if (h < diff.head.size() && diff.head[h].test_id == diff.base[b].test_id) {
      ComparedTest test{diff.base[b], diff.head[h], {}};
      for (const Change& c : diff.changes) {
        if (c.base == static_cast<int>(b) && c.head == static_cast<int>(h)) {
          test.changes.push_back(c);
        }
      }
      report.tests.push_back(std::move(test));
    }
  }
  for (const Change& c : diff.changes) {
    if (c.kind == ChangeKind::kOnlyInBase) report.only_in_base.push_back(diff.base[c.base]);
    if (c.kind == ChangeKind::kOnlyInHead) report.only_in_head.push_back(diff.head[c.head]);
  }
  return report;
}

std::string FormatVariantReport(const VariantReport& report) {
  std::string out = fmt::format("base: {}\nhead: {}\n", report.base_name, report.head_name);
  if (report.cross_model) out += "paired by test, across models (everything but the model)\n";
  using C = TextTable::Column;
  TextTable table({C{"target", TextTable::kLeft}, C{"mode", TextTable::kLeft},
                   C{"ranks", TextTable::kRight}, C{"kind", TextTable::kLeft},
                   C{"dtype", TextTable::kLeft}, C{"dynamic", TextTable::kLeft},
                   C{"shape", TextTable::kLeft}, C{"status", TextTable::kLeft},
                   C{"acc vs own ref", TextTable::kLeft},
                   C{"acc vs baseline ref", TextTable::kLeft}, C{"prepare h/b", TextTable::kRight},
                   C{"steady h/b", TextTable::kRight}, C{"tok/s b->h", TextTable::kLeft},
                   C{"breaks", TextTable::kLeft}, C{"fallback ops", TextTable::kLeft},
                   C{"mem MiB b->h", TextTable::kLeft}, C{"changes", TextTable::kLeft}});
  for (const ComparedTest& t : report.tests) {
    const RunResult& b = t.base.result;
    const RunResult& h = t.head.result;
    std::string changes;
    for (const Change& c : t.changes) {
      changes += (changes.empty() ? "" : "; ") + std::string(ChangeKindName(c.kind));
      if (!c.detail.empty()) changes += " " + c.detail;
    }
    std::string acc = "-";
    if (h.acc_max_abs_err || h.acc_cosine) {
      acc = VcNum(h.acc_max_abs_err, "{:.2e}") + " / " + VcNum(h.acc_cosine, "{:.6f}");
    }
    std::string base_acc = "-";
    if (h.baseline_max_abs_err || h.baseline_cosine) {
      base_acc =
          VcNum(h.baseline_max_abs_err, "{:.2e}") + " / " + VcNum(h.baseline_cosine, "{:.6f}");
    }
    const TestSpec& s = t.head.spec;
    table.AddRow({s.target, s.mode, std::to_string(s.ranks), s.kind, s.dtype,
                  s.IsDynamic() ? s.dynamic : "-", VcShape(s),
                  VcPair(VcStatusOf(t.base), VcStatusOf(t.head)), acc, base_acc,
                  MarkedFigure(VcRatioText(Ratio(b.prepare_s, h.prepare_s),
                                           RatioInterval(PrepareInterval(b), PrepareInterval(h))),
                               PrepareNoisy(b) || PrepareNoisy(h)),
                  MarkedFigure(VcRatioText(Ratio(b.steady_median_s, h.steady_median_s),
                                           RatioInterval(SteadyInterval(b), SteadyInterval(h))),
                               SteadyNoisy(b) || SteadyNoisy(h)),
                  VcNum(b.tokens_per_s, "{:.0f}") + "->" + VcNum(h.tokens_per_s, "{:.0f}"),
                  VcPair(VcInt(b.graph_breaks), VcInt(h.graph_breaks)),
                  VcPair(VcInt(VcFallbackOpCount(b)), VcInt(VcFallbackOpCount(h))),
                  VcMiB(VcMemory(b)) + "->" + VcMiB(VcMemory(h)),
                  Truncate(changes.empty() ? "none" : changes, 80)});
  }
  out += "\n" + table.Render();
  std::vector<const RunRecord*> paired;
  for (const ComparedTest& t : report.tests) paired.insert(paired.end(), {&t.base, &t.head});
  if (const std::string note = NoisyFootnote(paired, &NoisyRunLabel); !note.empty()) {
    out += "\n" + note;
  }
  for (const auto& [title, runs] : {std::pair{"only in base", &report.only_in_base},
                                    std::pair{"only in head", &report.only_in_head}}) {
    if (runs->empty()) continue;
    out += fmt::format("\n{} ({}):\n", title, runs->size());
    for (const RunRecord& r : *runs) {
      out += fmt::format("  {} {} {} {} {} {}{} {}\n", r.spec.model_id, r.spec.target, r.spec.mode,
                         r.spec.kind, r.spec.dtype, VcShape(r.spec), VcRanksDynamic(r.spec),
                         VcStatusOf(r));
    }
  }
  out += fmt::format(
      "\nsummary: {} compared, {} only in base, {} only in head; {} regressions, {} "
      "improvements\n",
      report.tests.size(), report.only_in_base.size(), report.only_in_head.size(),
      report.regressions, report.improvements);
  return out;
}

ordered_json VariantReportToJson(const VariantReport& report) {
  ordered_json tests = ordered_json::array();
  for (const ComparedTest& t : report.tests) {
    ordered_json changes = ordered_json::array();
    for (const Change& c : t.changes) {
      changes.push_back({{"kind", std::string(ChangeKindName(c.kind))},
                         {"regression", IsRegression(c.kind)},
                         {"detail", c.detail},
                         {"rule", c.rule}});
    }
    const RunResult& b = t.base.result;
    const RunResult& h = t.head.result;
    tests.push_back({{"key", t.head.test_id},
                     {"target", t.head.spec.target},
                     {"mode", t.head.spec.mode},
                     {"kind", t.head.spec.kind},
                     {"dtype", t.head.spec.dtype},
                     {"batch_size", t.head.spec.batch_size},
                     {"seq_len", t.head.spec.seq_len},
                     {"ranks", t.head.spec.ranks},
                     {"dynamic", t.head.spec.dynamic},
                     {"shapes", t.head.spec.shapes},
                     {"kind_params", t.head.spec.kind_params},
                     {"base", VcSideJson(t.base)},
                     {"head", VcSideJson(t.head)},
                     {"prepare_ratio", VcOpt(Ratio(b.prepare_s, h.prepare_s))},
                     {"prepare_ratio_interval",
                      VcIntervalJson(RatioInterval(PrepareInterval(b), PrepareInterval(h)))},
                     {"steady_ratio", VcOpt(Ratio(b.steady_median_s, h.steady_median_s))},
                     {"steady_ratio_interval",
                      VcIntervalJson(RatioInterval(SteadyInterval(b), SteadyInterval(h)))},
                     {"tokens_per_s_ratio", VcOpt(Ratio(b.tokens_per_s, h.tokens_per_s))},
                     {"memory_ratio", VcOpt(Ratio(VcMemory(b), VcMemory(h)))},
                     {"changes", changes}});
  }
  ordered_json only_base = ordered_json::array();
  for (const RunRecord& r : report.only_in_base) only_base.push_back(VcUnpairedJson(r));
  ordered_json only_head = ordered_json::array();
  for (const RunRecord& r : report.only_in_head) only_head.push_back(VcUnpairedJson(r));
  ordered_json out = {{"base", report.base_name},           {"head", report.head_name},
                      {"cross_model", report.cross_model},  {"tests", tests},
                      {"only_in_base", only_base},          {"only_in_head", only_head},
                      {"compared", report.tests.size()},    {"regressions", report.regressions},
                      {"improvements", report.improvements}};
  return out;
}

std::string VariantReportJson(const VariantReport& report) {
  return VariantReportToJson(report).dump(2, ' ', false, ordered_json::error_handler_t::replace) +
         "\n";
}

std::string FormatProfileComparisons(const VariantReport& report) {
  std::string out = "\nprofiles (--profile: time per call, head against base):\n";
  int64_t shown = 0;
  for (const ComparedTest& t : report.tests) {
    if (!HasProfile(t.base.result) || !HasProfile(t.head.result)) continue;
    const TestSpec& s = t.head.spec;
    out += fmt::format("  {} {} {} {} {}{}\n", s.target, s.mode, s.kind, s.dtype, VcShape(s),
                       VcRanksDynamic(s));
    out += FormatProfileComparison(CompareProfiles(t.base.result, t.head.result));
    ++shown;
  }
  if (shown == 0) out += "  no paired test was profiled on both sides (sweep --profile)\n";
  return out;
}

nlohmann::ordered_json ProfileComparisonsJson(const VariantReport& report) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const ComparedTest& t : report.tests) {
    if (!HasProfile(t.base.result) || !HasProfile(t.head.result)) continue;
    const TestSpec& s = t.head.spec;
    nlohmann::ordered_json item = {{"target", s.target},
                                   {"mode", s.mode},
                                   {"kind", s.kind},
                                   {"dtype", s.dtype},
                                   {"shape", VcShape(s)},
                                   {"ranks", s.ranks},
                                   {"dynamic", s.dynamic},
                                   {"base_run_id", t.base.run_id},
                                   {"head_run_id", t.head.run_id}};
    const ordered_json comparison =
        ProfileComparisonJson(CompareProfiles(t.base.result, t.head.result));
    item["categories"] = comparison["categories"];
    item["ops"] = comparison["ops"];
    out.push_back(std::move(item));
  }
  return out;
}

absl::StatusOr<std::string> RunVariantCompare(const VariantCompareOptions& options) {
  absl::StatusOr<CompareSide> base = ParseCompareSide(options.base);
  if (!base.ok()) {
    return absl::InvalidArgumentError("--base: " + std::string(base.status().message()));
  }
  absl::StatusOr<CompareSide> head = ParseCompareSide(options.head);
  if (!head.ok()) {
    return absl::InvalidArgumentError("--head: " + std::string(head.status().message()));
  }
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options.db, OpenMode::kReadOnly);
  if (!store.ok()) return Recode(store.status(), absl::StatusCode::kFailedPrecondition);
  base = VcResolveSide(**store, *base);
  if (!base.ok()) return base.status();
  head = VcResolveSide(**store, *head);
  if (!head.ok()) return head.status();
  absl::StatusOr<std::vector<RunRecord>> base_runs = VcSideRuns(**store, "--base", *base);
  if (!base_runs.ok()) return base_runs.status();
  absl::StatusOr<std::vector<RunRecord>> head_runs = VcSideRuns(**store, "--head", *head);
  if (!head_runs.ok()) return head_runs.status();
  const bool cross_model = base->model_id != head->model_id;
  VariantReport report =
      CompareVariant(*std::move(base_runs), *std::move(head_runs), cross_model, options.thresholds);
  report.base_name = base->Describe();
  report.head_name = head->Describe();
  if (options.json) {
    nlohmann::ordered_json out = VariantReportToJson(report);
    if (options.profile) out["profiles"] = ProfileComparisonsJson(report);
    return out.dump(2, ' ', false, ordered_json::error_handler_t::replace) + "\n";
  }
  std::string text = FormatVariantReport(report);
  if (options.profile) text += FormatProfileComparisons(report);
  return text;
}

}  // namespace compatlab
