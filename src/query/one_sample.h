// The change rule of a figure measured once per run (doc/dataset.md, "Diff", "One-sample
// figures"): prepare_s (the first call, compilation included) and host memory are single
// samples, with no interval of their own. Two of them differ when the larger exceeds the
// smaller by more than a relative threshold and an absolute floor, both measured on a quiet
// machine; a sample taken while the machine was noisy (the noisy rule over the first call,
// doc/results-schema.md "Noise") is not judged at all: one sample cannot say how far the load
// moved it (seen here: the same eager first calls 0.66x to 5.4x apart on a loaded machine).
#ifndef COMPATLAB_QUERY_ONE_SAMPLE_H_
#define COMPATLAB_QUERY_ONE_SAMPLE_H_

#include <optional>
#include <string>

#include "core/records.h"

namespace compatlab {

// One figure measured once, with the machine's state while it was measured.
struct OneSample {
  double value = 0;
  bool noisy = false;              // the noisy rule held over the sample
  std::optional<double> load_avg;  // the machine's 1-minute load average around it
};

// What a one-sample change needs: head beyond base * (1 + relative) (or the other way round)
// and apart by more than `floor` (seconds or bytes).
struct OneSampleRule {
  double relative = 0.25;
  double floor = 0;
};

// A prepare_s apart by at most this is never a change: a first call's start-up jitter (page
// faults, lazy initialisation, the scheduler) is absolute, not relative; issue 45's gpt2 eager
// first call, 17.75 -> 24.34 ms, lies within it. A chosen value (doc/dataset.md, "One-sample
// figures"), not yet measured on a quiet machine.
inline constexpr double kPrepareFloorS = 0.010;

enum class OneSampleDirection { kNone, kHigher, kLower };

// A one-sample rule's verdict, the rule that decided it and the figures, in words.
struct OneSampleVerdict {
  OneSampleDirection direction = OneSampleDirection::kNone;
  bool judged = true;  // false: a sample was noisy, so no verdict either way
  std::string rule;    // "one sample: > 25% and > 10.00 ms; quiet, load 0.4 / 0.6"
};

// `value` seconds or bytes for people: "17.75 ms", "2.000 s", "4.0 MiB".
std::string FigureText(double value, bool bytes);

// The first call of `r` as a one-sample figure (prepare_s, prepare_noisy (before schema 13,
// noisy), prepare_load_avg); nullopt when the row has no prepare_s.
std::optional<OneSample> PrepareSample(const RunResult& r);

// Not judged when either sample is noisy; else kHigher when head exceeds base by more than
// `rule.relative` and `rule.floor`, kLower the other way round, kNone otherwise. The rule text
// says which decided, with the machine's load for both samples when recorded.
OneSampleVerdict JudgeOneSample(const OneSample& base, const OneSample& head,
                                const OneSampleRule& rule, bool bytes);

}  // namespace compatlab

#endif  // COMPATLAB_QUERY_ONE_SAMPLE_H_
