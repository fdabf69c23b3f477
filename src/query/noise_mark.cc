#include "query/noise_mark.h"

#include "fmt/format.h"
#include "query/text_table.h"

namespace compatlab {

bool SteadyNoisy(const RunResult& r) { return r.noisy.value_or(0) != 0; }

bool PrepareNoisy(const RunResult& r) {
  return r.prepare_noisy ? *r.prepare_noisy != 0 : SteadyNoisy(r);
}

bool AnyNoisy(const RunResult& r) { return SteadyNoisy(r) || PrepareNoisy(r); }

std::string MarkedFigure(std::string_view figure, bool noisy) {
  if (!noisy || figure.empty() || figure == "-") return std::string(figure);
  return std::string(kNoisyMark) + std::string(figure);
}

std::string NoisyReasonText(const RunResult& r) {
  auto reason = [](const std::string& text) { return text.empty() ? std::string("noisy") : text; };
  std::string out;
  if (SteadyNoisy(r)) out = "steady: " + reason(r.noisy_reason);
  if (r.prepare_noisy && *r.prepare_noisy != 0) {
    out += (out.empty() ? "" : "; ") + std::string("first call: ") + reason(r.prepare_noisy_reason);
  }
  return out;
}

std::string NoisyRunLabel(const RunRecord& run) {
  return fmt::format("{} {} {} {}, sweep {}", run.spec.model_id, run.spec.target, run.spec.mode,
                     run.spec.kind, run.sweep_id);
}

std::string NoisyFootnote(const std::vector<const RunRecord*>& runs,
                          std::string (*label)(const RunRecord&), size_t max_lines) {
  std::vector<const RunRecord*> noisy;
  for (const RunRecord* run : runs) {
    if (AnyNoisy(run->result)) noisy.push_back(run);
  }
  if (noisy.empty()) return "";
  std::string out = fmt::format(
      "{} noisy: timed while the machine was busy (doc/results-schema.md, \"Noise\"), {} of {} "
      "runs: likely slower than the stack is, not a figure to compare:\n",
      kNoisyMark, noisy.size(), runs.size());
  for (size_t i = 0; i < noisy.size() && i < max_lines; ++i) {
    out += SanitizeForTerminal(
               fmt::format("  {}: {}", label(*noisy[i]), NoisyReasonText(noisy[i]->result))) +
           "\n";
  }
  if (noisy.size() > max_lines) {
    out += fmt::format("  ... and {} more (noisy_reason in --format json)\n",
                       noisy.size() - max_lines);
  }
  return out;
}

}  // namespace compatlab
