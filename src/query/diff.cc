#include "query/diff.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "core/blame.h"
#include "fmt/format.h"
#include "query/builds.h"
#include "query/noise_mark.h"
#include "query/one_sample.h"
#include "query/text_table.h"

namespace compatlab {
namespace {

constexpr ChangeKind kAllKinds[] = {
    ChangeKind::kNewlyFailing,     ChangeKind::kNewlyPassing, ChangeKind::kStatusChanged,
    ChangeKind::kSignatureChanged, ChangeKind::kSlowerSteady, ChangeKind::kSlowerPrepare,
    ChangeKind::kMoreMemory,       ChangeKind::kFasterSteady, ChangeKind::kFasterPrepare,
    ChangeKind::kLessMemory,       ChangeKind::kDifferentCpu, ChangeKind::kDifferentStack,
    ChangeKind::kOnlyInBase,       ChangeKind::kOnlyInHead,
};

std::string StatusText(const RunRecord& run) {
  std::string status(TestStatusName(run.result.status));
  if (run.result.status == TestStatus::kCrash && !run.result.status_detail.empty()) {
    status += "(" + run.result.status_detail + ")";
  }
  return status;
}

const std::string& Signature(const RunRecord& run) { return run.result.error_signature; }

std::optional<double> AsDouble(const std::optional<int64_t>& v) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}

std::string Figure(double value, bool bytes) { return FigureText(value, bytes); }

// A Change of a one-sample figure (query/one_sample.h: prepare_s, memory): `higher` or
// `lower` when the rule says so, with its figures and the rule's words.
std::optional<Change> OneSampleChangeOf(const OneSample& base, const OneSample& head,
                                        const OneSampleRule& rule, bool bytes, ChangeKind higher,
                                        ChangeKind lower) {
  const OneSampleVerdict verdict = JudgeOneSample(base, head, rule, bytes);
  if (verdict.direction == OneSampleDirection::kNone) return std::nullopt;
  return Change{verdict.direction == OneSampleDirection::kHigher ? higher : lower, -1, -1,
                fmt::format("{:+.1f}% ({} -> {})", 100.0 * (head.value - base.value) / base.value,
                            Figure(base.value, bytes), Figure(head.value, bytes)),
                verdict.rule};
}

// A memory Change (more or less): one sample each, beyond `threshold` and `floor` bytes.
std::optional<Change> MemoryChange(std::optional<double> base, std::optional<double> head,
                                   double threshold, double floor) {
  if (!base || !head) return std::nullopt;
  return OneSampleChangeOf({*base, false, std::nullopt}, {*head, false, std::nullopt},
                           {threshold, floor}, true, ChangeKind::kMoreMemory,
                           ChangeKind::kLessMemory);
}

// A prepare_s Change (slower or faster) by the one-sample rule, beyond kPrepareFloorS; counts
// the pair in `*not_judged` when a first call was noisy.
std::optional<Change> PrepareChange(const RunResult& base, const RunResult& head, double threshold,
                                    int64_t* not_judged) {
  const std::optional<OneSample> b = PrepareSample(base);
  const std::optional<OneSample> h = PrepareSample(head);
  if (!b || !h) return std::nullopt;
  const OneSampleRule rule{threshold, kPrepareFloorS};
  if (!JudgeOneSample(*b, *h, rule, false).judged) ++*not_judged;
  return OneSampleChangeOf(*b, *h, rule, false, ChangeKind::kSlowerPrepare,
                           ChangeKind::kFasterPrepare);
}

std::string IntervalText(const TimingInterval& i, bool noisy) {
  return fmt::format("[{}, {}]{}", Figure(i.low, false), Figure(i.high, false),
                     noisy ? " noisy" : "");
}

// The Change of two intervals apart (TimingChange), with their figures.
std::optional<Change> TimingChangeOf(TimingChange change, ChangeKind slower, ChangeKind faster,
                                     double base, double head, const TimingInterval& bi,
                                     const TimingInterval& hi, bool base_noisy, bool head_noisy) {
  if (change == TimingChange::kNone) return std::nullopt;
  return Change{change == TimingChange::kSlower ? slower : faster, -1, -1,
                fmt::format("{:+.1f}% ({} -> {}; intervals {} / {})", 100.0 * (head - base) / base,
                            MarkedFigure(Figure(base, false), base_noisy),
                            MarkedFigure(Figure(head, false), head_noisy),
                            IntervalText(bi, base_noisy), IntervalText(hi, head_noisy)),
                ""};
}

TimingInterval Widened(TimingInterval i, bool noisy) {
  if (noisy) {
    i.low /= kNoisyWidening;
    i.high *= kNoisyWidening;
  }
  return i;
}

// Two intervals apart and their figures beyond `min_relative`.
TimingChange IntervalsApart(double base, double head, const TimingInterval& bi,
                            const TimingInterval& hi, double min_relative) {
  if (base <= 0 || head <= 0) return TimingChange::kNone;
  if (hi.low > bi.high && head > base * (1.0 + min_relative)) return TimingChange::kSlower;
  if (hi.high < bi.low && base > head * (1.0 + min_relative)) return TimingChange::kFaster;
  return TimingChange::kNone;
}

// The rule that decides a change of `kind` other than a one-sample figure's (whose Change
// names its own), in words: the report's rule column (doc/dataset.md, "Diff").
std::string FixedRule(ChangeKind kind, const DiffThresholds& thresholds) {
  switch (kind) {
    case ChangeKind::kNewlyFailing:
    case ChangeKind::kNewlyPassing:
    case ChangeKind::kStatusChanged:
      return "status";
    case ChangeKind::kSignatureChanged:
      return "error signature";
    case ChangeKind::kSlowerSteady:
    case ChangeKind::kFasterSteady:
      return fmt::format("intervals apart and > {:.0f}%", 100.0 * thresholds.steady);
    case ChangeKind::kDifferentCpu:
      return "cpu_model differs: not timed";
    case ChangeKind::kDifferentStack:
      return "stack_versions differ: not timed";
    case ChangeKind::kOnlyInBase:
    case ChangeKind::kOnlyInHead:
      return "no run on the other side";
    default:
      return "";
  }
}

// Below this, a change of host_mem_bytes is not compared (doc/dataset.md, "diff").
constexpr double kMemoryFloorBytes = 4.0 * 1024 * 1024;

// The changes between two runs of one test.
std::vector<Change> Compare(const RunRecord& base, const RunRecord& head,
                            const DiffThresholds& thresholds, int64_t* not_judged) {
  std::vector<Change> changes;
  const TestStatus b = base.result.status;
  const TestStatus h = head.result.status;
  if (b != h) {
    Change change;
    if (b == TestStatus::kPass) {
      change.kind = ChangeKind::kNewlyFailing;
      change.detail = Signature(head);
    } else if (h == TestStatus::kPass) {
      change.kind = ChangeKind::kNewlyPassing;
      change.detail = Signature(base);
    } else {
      change.kind = ChangeKind::kStatusChanged;
      change.detail = Signature(head);
    }
    changes.push_back(std::move(change));
  } else if (b != TestStatus::kPass) {
    const std::string& base_signature = Signature(base);
    const std::string& head_signature = Signature(head);
    if (base_signature != head_signature) {
      changes.push_back({ChangeKind::kSignatureChanged, -1, -1,
                         fmt::format("{} -> {}", base_signature.empty() ? "(none)" : base_signature,
                                     head_signature.empty() ? "(none)" : head_signature),
                         ""});
    }
  }
  if (base.cpu_model != head.cpu_model) {
    changes.push_back(
        {ChangeKind::kDifferentCpu, -1, -1,
         fmt::format("{} -> {}", base.cpu_model.empty() ? "(unknown)" : base.cpu_model,
                     head.cpu_model.empty() ? "(unknown)" : head.cpu_model),
         ""});
    return changes;
  }
  if (base.result.stack_versions != head.result.stack_versions) {
    changes.push_back(
        {ChangeKind::kDifferentStack, -1, -1,
         fmt::format("{} -> {}",
                     base.result.stack_versions.empty() ? "(none)" : base.result.stack_versions,
                     head.result.stack_versions.empty() ? "(none)" : head.result.stack_versions),
         ""});
    return changes;
  }
  if (b != h) return changes;
  const RunResult& br = base.result;
  const RunResult& hr = head.result;
  if (auto bi = SteadyInterval(br), hi = SteadyInterval(hr); bi && hi) {
    if (auto c = TimingChangeOf(SteadyChange(br, hr, thresholds.steady), ChangeKind::kSlowerSteady,
                                ChangeKind::kFasterSteady, *br.steady_median_s, *hr.steady_median_s,
                                *bi, *hi, SteadyNoisy(br), SteadyNoisy(hr))) {
      changes.push_back(*std::move(c));
    }
  }
  if (auto c = PrepareChange(br, hr, thresholds.prepare, not_judged)) {
    changes.push_back(*std::move(c));
  }
  // The test's own memory when both sides measured it (schema 6), else the process peak; a
  // change within kMemoryFloorBytes is page and allocator noise, never a change.
  const bool own = br.host_mem_bytes.has_value() && hr.host_mem_bytes.has_value();
  if (auto c = MemoryChange(AsDouble(own ? br.host_mem_bytes : br.host_peak_rss_bytes),
                            AsDouble(own ? hr.host_mem_bytes : hr.host_peak_rss_bytes),
                            thresholds.memory, own ? kMemoryFloorBytes : 0)) {
    changes.push_back(*std::move(c));
  }
  return changes;
}

}  // namespace

std::optional<TimingInterval> PrepareInterval(const RunResult& r) {
  if (!r.prepare_s) return std::nullopt;
  return Widened({*r.prepare_s, *r.prepare_s}, PrepareNoisy(r));
}

std::optional<TimingInterval> SteadyInterval(const RunResult& r) {
  if (!r.steady_median_s) return std::nullopt;
  const double median = *r.steady_median_s;
  TimingInterval i{median, median};
  if (r.steady_ci_low_s && r.steady_ci_high_s) {
    i = {std::min(median, *r.steady_ci_low_s), std::max(median, *r.steady_ci_high_s)};
  } else if (r.steady_p90_s) {  // a row before schema 11
    const double spread = std::max(0.0, *r.steady_p90_s - median);
    i = {median - spread, median + spread};
  }
  return Widened(i, SteadyNoisy(r));
}

TimingChange SteadyChange(const RunResult& base, const RunResult& head, double min_relative) {
  const std::optional<TimingInterval> bi = SteadyInterval(base);
  const std::optional<TimingInterval> hi = SteadyInterval(head);
  if (!bi || !hi) return TimingChange::kNone;
  return IntervalsApart(*base.steady_median_s, *head.steady_median_s, *bi, *hi, min_relative);
}

std::string DiffSide::Describe() const {
  std::vector<std::string> parts;
  if (!sweep_id.empty()) parts.push_back("sweep=" + sweep_id);
  if (!torch_version.empty()) parts.push_back("torch=" + torch_version);
  if (!transformers_version.empty()) parts.push_back("transformers=" + transformers_version);
  if (!stack.empty()) parts.push_back("stack=" + stack);
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

RunFilter DiffSide::Filter() const {
  RunFilter filter;
  filter.sweep_id = sweep_id;
  filter.torch_version = torch_version;
  filter.transformers_version = transformers_version;
  filter.stack = stack;
  return filter;
}

absl::StatusOr<DiffSide> ParseDiffSide(std::string_view text) {
  DiffSide side;
  if (text.empty()) return absl::InvalidArgumentError("an empty diff side");
  if (text.find('=') == std::string_view::npos) {
    side.sweep_id = std::string(text);
    return side;
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(start, end - start);
    const size_t eq = item.find('=');
    const std::string_view key = item.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    std::string* slot = nullptr;
    if (key == "sweep") slot = &side.sweep_id;
    if (key == "torch") slot = &side.torch_version;
    if (key == "transformers") slot = &side.transformers_version;
    if (key == "stack") slot = &side.stack;
    if (slot == nullptr) {
      return absl::InvalidArgumentError(fmt::format(
          "'{}': unknown key '{}' (expected a sweep id or stack name, or sweep=, torch=, "
          "transformers=, stack=)",
          text, key));
    }
    if (value.empty()) {
      return absl::InvalidArgumentError(fmt::format("'{}': no value for {}", text, key));
    }
    if (!slot->empty()) {
      return absl::InvalidArgumentError(fmt::format("'{}': {} given twice", text, key));
    }
    *slot = std::string(value);
    start = end + 1;
  }
  return side;
}

std::string_view ChangeKindName(ChangeKind kind) {
  switch (kind) {
    case ChangeKind::kNewlyFailing:
      return "newly failing";
    case ChangeKind::kNewlyPassing:
      return "newly passing";
    case ChangeKind::kStatusChanged:
      return "status changed";
    case ChangeKind::kSignatureChanged:
      return "error changed";
    case ChangeKind::kSlowerSteady:
      return "slower steady";
    case ChangeKind::kSlowerPrepare:
      return "slower prepare";
    case ChangeKind::kMoreMemory:
      return "more memory";
    case ChangeKind::kFasterSteady:
      return "faster steady";
    case ChangeKind::kFasterPrepare:
      return "faster prepare";
    case ChangeKind::kLessMemory:
      return "less memory";
    case ChangeKind::kDifferentCpu:
      return "different cpu";
    case ChangeKind::kDifferentStack:
      return "different stack";
    case ChangeKind::kOnlyInBase:
      return "only in base";
    case ChangeKind::kOnlyInHead:
      return "only in head";
  }
  return "?";
}

bool IsRegression(ChangeKind kind) {
  return kind == ChangeKind::kNewlyFailing || kind == ChangeKind::kSlowerSteady ||
         kind == ChangeKind::kSlowerPrepare || kind == ChangeKind::kMoreMemory;
}

bool IsImprovement(ChangeKind kind) {
  return kind == ChangeKind::kNewlyPassing || kind == ChangeKind::kFasterSteady ||
         kind == ChangeKind::kFasterPrepare || kind == ChangeKind::kLessMemory;
}

int64_t DiffReport::Improvements() const {
  return std::count_if(changes.begin(), changes.end(),
                       [](const Change& c) { return IsImprovement(c.kind); });
}

int64_t DiffReport::Count(ChangeKind kind) const {
  return std::count_if(changes.begin(), changes.end(),
                       [kind](const Change& c) { return c.kind == kind; });
}

int64_t DiffReport::Regressions() const {
  return std::count_if(changes.begin(), changes.end(),
                       [](const Change& c) { return IsRegression(c.kind); });
}

DiffReport DiffRuns(std::vector<RunRecord> base_runs, std::vector<RunRecord> head_runs,
                    const DiffThresholds& thresholds) {
  DiffReport report;
  report.base = LatestPerTest(std::move(base_runs));
  report.head = LatestPerTest(std::move(head_runs));
  size_t b = 0;
  size_t h = 0;
  while (b < report.base.size() || h < report.head.size()) {
    const bool take_base =
        h == report.head.size() ||
        (b < report.base.size() && report.base[b].test_id < report.head[h].test_id);
    const bool take_head =
        b == report.base.size() ||
        (h < report.head.size() && report.head[h].test_id < report.base[b].test_id);
    if (take_base) {
      report.changes.push_back({ChangeKind::kOnlyInBase, static_cast<int>(b), -1, "", ""});
      ++b;
    } else if (take_head) {
      report.changes.push_back({ChangeKind::kOnlyInHead, -1, static_cast<int>(h), "", ""});
      ++h;
    } else {
      ++report.compared;
      for (Change& change :
           Compare(report.base[b], report.head[h], thresholds, &report.prepare_not_judged)) {
        change.base = static_cast<int>(b);
        change.head = static_cast<int>(h);
        report.changes.push_back(std::move(change));
      }
      ++b;
      ++h;
    }
  }
  for (Change& change : report.changes) {
    if (change.rule.empty()) change.rule = FixedRule(change.kind, thresholds);
  }
  return report;
}

namespace {

// The footnote of the runs behind the timing changes whose figures are marked noisy.
std::string DiffNoisyFootnote(const DiffReport& report) {
  std::vector<const RunRecord*> timed;
  for (const Change& c : report.changes) {
    if (c.kind != ChangeKind::kSlowerSteady && c.kind != ChangeKind::kFasterSteady &&
        c.kind != ChangeKind::kSlowerPrepare && c.kind != ChangeKind::kFasterPrepare) {
      continue;
    }
    if (c.base >= 0) timed.push_back(&report.base[c.base]);
    if (c.head >= 0) timed.push_back(&report.head[c.head]);
  }
  const std::string note = NoisyFootnote(timed, &NoisyRunLabel);
  return note.empty() ? "" : "\n" + note;
}

}  // namespace

std::string FormatDiffReport(const DiffReport& report, const std::string& base_name,
                             const std::string& head_name) {
  std::string out = fmt::format("base: {} ({} tests)\nhead: {} ({} tests)\n", base_name,
                                report.base.size(), head_name, report.head.size());
  out += BuildsDifferLine(report.base, report.head);
  for (ChangeKind kind : kAllKinds) {
    std::vector<const Change*> section;
    for (const Change& change : report.changes) {
      if (change.kind == kind) section.push_back(&change);
    }
    if (section.empty()) continue;
    auto run_of = [&](const Change* c) -> const RunRecord& {
      return c->head >= 0 ? report.head[c->head] : report.base[c->base];
    };
    std::stable_sort(section.begin(), section.end(), [&](const Change* x, const Change* y) {
      return run_of(x).spec.model_id < run_of(y).spec.model_id;
    });
    using C = TextTable::Column;
    TextTable table(
        {C{"test", TextTable::kLeft}, C{"model", TextTable::kLeft}, C{"target", TextTable::kLeft},
         C{"mode", TextTable::kLeft}, C{"ranks", TextTable::kRight}, C{"kind", TextTable::kLeft},
         C{"dtype", TextTable::kLeft}, C{"dynamic", TextTable::kLeft}, C{"base", TextTable::kLeft},
         C{"head", TextTable::kLeft}, C{"detail", TextTable::kLeft}, C{"rule", TextTable::kLeft}});
    for (const Change* change : section) {
      const RunRecord& run = run_of(change);
      const std::string base = change->base >= 0 ? StatusText(report.base[change->base]) : "-";
      const std::string head = change->head >= 0 ? StatusText(report.head[change->head]) : "-";
      table.AddRow({run.test_id.substr(0, 12), Truncate(run.spec.model_id, 40), run.spec.target,
                    run.spec.mode, std::to_string(run.spec.ranks), run.spec.kind, run.spec.dtype,
                    run.spec.IsDynamic() ? run.spec.dynamic : "-", base, head,
                    Truncate(change->detail, 100), change->rule});
    }
    out += fmt::format("\n{} ({}){}\n", ChangeKindName(kind), section.size(),
                       IsRegression(kind)    ? ", regression"
                       : IsImprovement(kind) ? ", improvement"
                                             : "");
    out += table.Render();
  }
  out += DiffNoisyFootnote(report);
  std::string counts;
  for (ChangeKind kind : kAllKinds) {
    counts += fmt::format(", {} {}", report.Count(kind), ChangeKindName(kind));
  }
  out += fmt::format("\npass rate: base {}; head {}\n", PassRateOf(report.base).Describe(),
                     PassRateOf(report.head).Describe());
  out += fmt::format("summary: {} compared{}; {} regressions, {} improvements\n", report.compared,
                     counts, report.Regressions(), report.Improvements());
  if (report.prepare_not_judged > 0) {
    out += fmt::format(
        "not judged: prepare_s of {} tests, a first call measured on a noisy machine (one-sample "
        "rule)\n",
        report.prepare_not_judged);
  }
  return out;
}

}  // namespace compatlab
