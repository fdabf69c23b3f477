#include "query/one_sample.h"

#include <cmath>

#include "fmt/format.h"
#include "query/noise_mark.h"

namespace compatlab {
namespace {

// "; quiet, load 0.4 / 0.6": the machine's state over both samples; empty when neither
// recorded one (memory, rows before schema 11).
std::string MachineText(const OneSample& base, const OneSample& head) {
  if (!base.load_avg || !head.load_avg) return "";
  return fmt::format("; quiet, load {:.1f} / {:.1f}", *base.load_avg, *head.load_avg);
}

}  // namespace

std::string FigureText(double value, bool bytes) {
  if (bytes) return fmt::format("{:.1f} MiB", value / (1024.0 * 1024.0));
  if (value < 1.0) return fmt::format("{:.2f} ms", value * 1000.0);
  return fmt::format("{:.3f} s", value);
}

std::optional<OneSample> PrepareSample(const RunResult& r) {
  if (!r.prepare_s) return std::nullopt;
  OneSample s;
  s.value = *r.prepare_s;
  s.noisy = PrepareNoisy(r);  // the first call's verdict (query/noise_mark.h)
  s.load_avg = r.prepare_load_avg;
  return s;
}

OneSampleVerdict JudgeOneSample(const OneSample& base, const OneSample& head,
                                const OneSampleRule& rule, bool bytes) {
  OneSampleVerdict verdict;
  if (base.noisy || head.noisy) {
    verdict.judged = false;
    verdict.rule = fmt::format("one sample: not judged, {} noisy", base.noisy && head.noisy ? "both"
                                                                   : base.noisy             ? "base"
                                                                                : "head");
    return verdict;
  }
  verdict.rule = fmt::format("one sample: > {:.0f}%{}{}", 100.0 * rule.relative,
                             rule.floor > 0 ? " and > " + FigureText(rule.floor, bytes) : "",
                             MachineText(base, head));
  if (base.value <= 0 || head.value <= 0) return verdict;
  if (std::abs(head.value - base.value) <= rule.floor) return verdict;
  if (head.value > base.value * (1.0 + rule.relative)) {
    verdict.direction = OneSampleDirection::kHigher;
  } else if (base.value > head.value * (1.0 + rule.relative)) {
    verdict.direction = OneSampleDirection::kLower;
  }
  return verdict;
}

}  // namespace compatlab
