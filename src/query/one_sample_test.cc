#include "query/one_sample.h"

#include "gtest/gtest.h"

namespace compatlab {
namespace {

OneSample Quiet(double value) { return {value, false, 0.5}; }

TEST(OneSampleTest, AChangeNeedsTheThresholdAndTheFloor) {
  const OneSampleRule rule{0.25, kPrepareFloorS};
  // The gpt2 eager first call: +37%, but 6.6 ms apart, within the floor.
  EXPECT_EQ(JudgeOneSample(Quiet(0.01775), Quiet(0.02434), rule, false).direction,
            OneSampleDirection::kNone);
  // +20% of 2 s: beyond the floor, within the threshold.
  EXPECT_EQ(JudgeOneSample(Quiet(2.0), Quiet(2.4), rule, false).direction,
            OneSampleDirection::kNone);
  // +37% of 200 ms: both.
  EXPECT_EQ(JudgeOneSample(Quiet(0.200), Quiet(0.274), rule, false).direction,
            OneSampleDirection::kHigher);
  EXPECT_EQ(JudgeOneSample(Quiet(0.274), Quiet(0.200), rule, false).direction,
            OneSampleDirection::kLower);
}

TEST(OneSampleTest, ANoisySampleIsNotJudgedEitherWay) {
  const OneSampleRule rule{0.25, kPrepareFloorS};
  // The same eager first call 5.4x apart on a loaded machine (same stack, two sweeps).
  OneSample busy{0.17658, true, 7.1};
  const OneSampleVerdict v = JudgeOneSample(Quiet(0.03292), busy, rule, false);
  EXPECT_FALSE(v.judged);
  EXPECT_EQ(v.direction, OneSampleDirection::kNone);
  EXPECT_EQ(v.rule, "one sample: not judged, head noisy");
  busy.value = 0.001;
  EXPECT_EQ(JudgeOneSample(busy, Quiet(2.0), rule, false).rule,
            "one sample: not judged, base noisy");
  EXPECT_TRUE(JudgeOneSample(Quiet(1.0), Quiet(1.0), rule, false).judged);
}

TEST(OneSampleTest, TheRuleTextGivesTheMachinesLoadWhenRecorded) {
  const OneSampleRule rule{0.25, kPrepareFloorS};
  EXPECT_EQ(JudgeOneSample(Quiet(1.0), {2.0, false, 1.3}, rule, false).rule,
            "one sample: > 25% and > 10.00 ms; quiet, load 0.5 / 1.3");
  EXPECT_EQ(JudgeOneSample({1.0, false, std::nullopt}, {2.0, false, std::nullopt},
                           {0.2, 4.0 * 1024 * 1024}, true)
                .rule,
            "one sample: > 20% and > 4.0 MiB");
}

TEST(OneSampleTest, PrepareSampleReadsTheFirstCallsVerdict) {
  RunResult r;
  EXPECT_FALSE(PrepareSample(r).has_value());
  r.prepare_s = 1.5;
  r.noisy = 1;  // a row before schema 13: the steady phase's verdict stands in
  EXPECT_TRUE(PrepareSample(r)->noisy);
  r.prepare_noisy = 0;
  r.prepare_load_avg = 0.3;
  const OneSample s = *PrepareSample(r);
  EXPECT_FALSE(s.noisy);
  EXPECT_DOUBLE_EQ(s.value, 1.5);
  EXPECT_EQ(s.load_avg, 0.3);
}

}  // namespace
}  // namespace compatlab
