#include "query/diff.h"

#include <map>

#include "core/error_signature.h"
#include "gtest/gtest.h"
#include "store/testing.h"

namespace compatlab {
namespace {

using test::MakeRun;
using test::MakeSpec;

// A passing run of `model_type` with steady, prepare and memory figures.
RunRecord Measured(const std::string& sweep_id, const std::string& model_type) {
  RunRecord run = MakeRun(sweep_id, MakeSpec(model_type));
  run.run_id = sweep_id + "-" + model_type;
  run.result.steady_median_s = 0.100;
  run.result.steady_p90_s = 0.102;
  run.result.prepare_s = 2.0;
  run.result.host_peak_rss_bytes = int64_t{1000} << 20;
  run.cpu_model = "cpu-A";
  return run;
}

std::vector<RunRecord> Sweep(const std::string& sweep_id) {
  return {Measured(sweep_id, "llama"), Measured(sweep_id, "gpt2"), Measured(sweep_id, "bert"),
          Measured(sweep_id, "t5"), Measured(sweep_id, "vit")};
}

// `runs` with the error signature a sweep stores when it records a run.
std::vector<RunRecord> Recorded(std::vector<RunRecord> runs) {
  for (RunRecord& r : runs) r.result.error_signature = FailureSignature(r.result);
  return runs;
}

RunRecord& Find(std::vector<RunRecord>& runs, const std::string& model_type) {
  for (RunRecord& r : runs) {
    if (r.spec.model_type == model_type) return r;
  }
  ADD_FAILURE() << model_type;
  return runs.front();
}

std::vector<std::string> KindsOf(const DiffReport& report) {
  std::vector<std::string> out;
  for (const Change& c : report.changes) {
    const RunRecord& r = c.head >= 0 ? report.head[c.head] : report.base[c.base];
    out.push_back(std::string(ChangeKindName(c.kind)) + " " + r.spec.model_type);
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(DiffTest, SameSweepAgainstItselfReportsNothing) {
  DiffReport report = DiffRuns(Sweep("s1"), Sweep("s1"));
  EXPECT_TRUE(report.changes.empty());
  EXPECT_EQ(report.compared, 5);
  EXPECT_EQ(report.Regressions(), 0);
  const std::string text = FormatDiffReport(report, "sweep=s1", "sweep=s1");
  EXPECT_NE(text.find("summary: 5 compared, 0 newly failing"), std::string::npos) << text;
  EXPECT_NE(text.find("; 0 regressions, 0 improvements\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("newly failing ("), std::string::npos) << text;
}

TEST(DiffTest, ReportsPlantedRegression) {
  std::vector<RunRecord> head = Sweep("s2");
  // llama now fails; gpt2 is 20% slower (spread 2 ms); bert prepares 50%
  // longer; t5 needs 30% more memory.
  RunRecord& llama = Find(head, "llama");
  llama.result.status = TestStatus::kFailToRun;
  llama.result.error_type = "RuntimeError";
  llama.result.error_message = "shape mismatch: 4 vs 8 at 0x7f00aa";
  Find(head, "gpt2").result.steady_median_s = 0.120;
  Find(head, "gpt2").result.steady_p90_s = 0.122;
  Find(head, "bert").result.prepare_s = 3.0;
  Find(head, "t5").result.host_peak_rss_bytes = int64_t{1300} << 20;
  DiffReport report = DiffRuns(Sweep("s1"), Recorded(head));
  EXPECT_EQ(KindsOf(report),
            (std::vector<std::string>{"more memory t5", "newly failing llama",
                                      "slower prepare bert", "slower steady gpt2"}));
  EXPECT_EQ(report.Regressions(), 4);
  EXPECT_EQ(report.Count(ChangeKind::kNewlyFailing), 1);
  const std::string text = FormatDiffReport(report, "sweep=s1", "sweep=s2");
  EXPECT_NE(text.find("newly failing (1), regression"), std::string::npos) << text;
  EXPECT_NE(text.find("RuntimeError: shape mismatch: N vs N at <hex>"), std::string::npos) << text;
  EXPECT_NE(text.find("+20.0% (100.00 ms -> 120.00 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("; 4 regressions, 0 improvements\n"), std::string::npos) << text;
  // Every line names the rule that decided it.
  std::map<std::string, std::string> rules;
  for (const Change& c : report.changes) rules[std::string(ChangeKindName(c.kind))] = c.rule;
  EXPECT_EQ(rules, (std::map<std::string, std::string>{
                       {"newly failing", "status"},
                       {"slower steady", "intervals apart and > 5%"},
                       {"slower prepare", "one sample: > 25% and > 10.00 ms"},
                       {"more memory", "one sample: > 20%"},
                   }));

  // The other way round: llama newly passes, nothing regressed.
  DiffReport back = DiffRuns(Recorded(head), Sweep("s1"));
  EXPECT_EQ(back.Count(ChangeKind::kNewlyPassing), 1);
  EXPECT_EQ(back.Regressions(), 0);
}

TEST(DiffTest, SlowdownWithinThresholdOrSpreadIsNotARegression) {
  std::vector<RunRecord> head = Sweep("s2");
  Find(head, "llama").result.steady_median_s = 0.104;  // +4% < 5%
  // +10%, but the spread of head's iterations is 20 ms.
  Find(head, "gpt2").result.steady_median_s = 0.110;
  Find(head, "gpt2").result.steady_p90_s = 0.130;
  Find(head, "bert").result.prepare_s = 2.1;                          // +5% < 10%
  Find(head, "t5").result.host_peak_rss_bytes = int64_t{1100} << 20;  // +10% < 20%
  Find(head, "vit").result.steady_median_s = std::nullopt;            // not measured: not compared
  DiffReport report = DiffRuns(Sweep("s1"), Recorded(head));
  EXPECT_TRUE(report.changes.empty()) << FormatDiffReport(report, "a", "b");
}

TEST(DiffTest, ChangedSignatureAndStatusAmongFailures) {
  std::vector<RunRecord> base = Sweep("s1");
  std::vector<RunRecord> head = Sweep("s2");
  for (auto* side : {&base, &head}) {
    for (RunRecord& r : *side) {
      r.result.status = TestStatus::kFailToRun;
      r.result.error_type = "RuntimeError";
      r.result.error_message = "boom at /tmp/a.py:3";
    }
  }
  // Only the numbers and paths differ: the same signature.
  Find(head, "llama").result.error_message = "boom at /home/x/b.py:99";
  Find(head, "gpt2").result.error_message = "a different error";
  Find(head, "bert").result.status = TestStatus::kCrash;
  Find(head, "bert").result.status_detail = "SIGSEGV";
  DiffReport report = DiffRuns(Recorded(base), Recorded(head));
  EXPECT_EQ(KindsOf(report),
            (std::vector<std::string>{"error changed gpt2", "status changed bert"}));
  EXPECT_EQ(report.Regressions(), 0);
  EXPECT_NE(FormatDiffReport(report, "a", "b").find("crash(SIGSEGV)"), std::string::npos);
}

TEST(DiffTest, DifferentCpuIsFlaggedNotCompared) {
  std::vector<RunRecord> head = Sweep("s2");
  RunRecord& llama = Find(head, "llama");
  llama.cpu_model = "cpu-B";
  llama.result.steady_median_s = 1.0;  // 10x slower, on another machine
  DiffReport report = DiffRuns(Sweep("s1"), Recorded(head));
  EXPECT_EQ(KindsOf(report), std::vector<std::string>{"different cpu llama"});
  EXPECT_EQ(report.Regressions(), 0);
}

TEST(DiffTest, DifferentTargetStackIsFlaggedNotCompared) {
  std::vector<RunRecord> base = Sweep("s1");
  Find(base, "llama").result.stack_versions = R"({"onnxruntime":"1.32.0"})";
  std::vector<RunRecord> head = Sweep("s2");
  RunRecord& llama = Find(head, "llama");
  llama.result.stack_versions = R"({"onnxruntime":"1.33.0"})";
  llama.result.steady_median_s = 1.0;  // 10x slower, on another stack
  DiffReport report = DiffRuns(Recorded(base), Recorded(head));
  EXPECT_EQ(KindsOf(report), std::vector<std::string>{"different stack llama"});
  EXPECT_EQ(report.Regressions(), 0);
  EXPECT_NE(FormatDiffReport(report, "a", "b").find("1.32.0"), std::string::npos);
}

TEST(DiffTest, TestsOnOneSideOnlyAndLatestRunWins) {
  std::vector<RunRecord> base = Sweep("s1");
  std::vector<RunRecord> head = Sweep("s2");
  base.pop_back();           // vit only in head
  head.erase(head.begin());  // llama only in base
  // Two runs of gpt2 in head: the later one (failing) counts.
  RunRecord later = Find(head, "gpt2");
  later.run_id = "later";
  later.started_at = "2026-12-01T00:00:00.000Z";
  later.finished_at = "2026-12-01T00:00:01.000Z";
  later.result.status = TestStatus::kTimeout;
  head.push_back(later);
  DiffReport report = DiffRuns(Recorded(base), Recorded(head));
  EXPECT_EQ(KindsOf(report), (std::vector<std::string>{"newly failing gpt2", "only in base llama",
                                                       "only in head vit"}));
  EXPECT_EQ(report.compared, 3);
  EXPECT_EQ(report.head.size(), 4u);
}

TEST(DiffTest, ParsesSides) {
  auto side = ParseDiffSide("20261130T022435Z-a1b2c3");
  ASSERT_TRUE(side.ok());
  EXPECT_EQ(side->sweep_id, "20261130T022435Z-a1b2c3");
  side = ParseDiffSide("torch=2.13.0+cpu,transformers=5.23.0");
  ASSERT_TRUE(side.ok()) << side.status();
  EXPECT_EQ(side->torch_version, "2.13.0+cpu");
  EXPECT_EQ(side->transformers_version, "5.23.0");
  EXPECT_EQ(side->Filter().torch_version, "2.13.0+cpu");
  EXPECT_EQ(side->Describe(), "torch=2.13.0+cpu,transformers=5.23.0");
  EXPECT_EQ(ParseDiffSide("sweep=s1")->sweep_id, "s1");
  for (const char* bad : {"", "torch=", "cuda=12", "torch=1,torch=2", "torch=1,"}) {
    EXPECT_EQ(ParseDiffSide(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

// Issue 10, part 3: intervals, noisy rows widened, improvements.
RunResult Timed(double median, double low, double high, bool noisy) {
  RunResult r;
  r.steady_median_s = median;
  r.steady_p90_s = high;
  r.steady_ci_low_s = low;
  r.steady_ci_high_s = high;
  r.noisy = noisy ? 1 : 0;
  return r;
}

TEST(DiffNoiseTest, IntervalsThatOverlapAreNoChange) {
  // +30%, but head's interval reaches down into base's.
  EXPECT_EQ(SteadyChange(Timed(0.10, 0.09, 0.11, false), Timed(0.13, 0.105, 0.16, false)),
            TimingChange::kNone);
  EXPECT_EQ(SteadyChange(Timed(0.10, 0.099, 0.101, false), Timed(0.13, 0.128, 0.132, false)),
            TimingChange::kSlower);
  EXPECT_EQ(SteadyChange(Timed(0.13, 0.128, 0.132, false), Timed(0.10, 0.099, 0.101, false)),
            TimingChange::kFaster);
  // Apart, but within the 5% of the medians.
  EXPECT_EQ(SteadyChange(Timed(0.100, 0.0999, 0.1001, false), Timed(0.103, 0.1029, 0.1031, false)),
            TimingChange::kNone);
}

TEST(DiffNoiseTest, ANoisyRowIsWidenedNotDropped) {
  const RunResult quiet = Timed(0.010, 0.0099, 0.0101, false);
  // 1.8x slower under load, marked noisy: [17, 19] ms widened to [8.5, 38] ms reaches
  // base's interval: no change.
  const RunResult loaded = Timed(0.018, 0.017, 0.019, true);
  ASSERT_TRUE(SteadyInterval(loaded).has_value());
  EXPECT_DOUBLE_EQ(SteadyInterval(loaded)->low, 0.017 / kNoisyWidening);
  EXPECT_DOUBLE_EQ(SteadyInterval(loaded)->high, 0.019 * kNoisyWidening);
  EXPECT_EQ(SteadyChange(quiet, loaded), TimingChange::kNone);
  // A 10x slowdown stays a change even when both rows are noisy.
  const RunResult slow = Timed(0.100, 0.098, 0.102, true);
  EXPECT_EQ(SteadyChange(quiet, slow), TimingChange::kSlower);
  EXPECT_EQ(SteadyChange(Timed(0.010, 0.0099, 0.0101, true), slow), TimingChange::kSlower);
  EXPECT_EQ(SteadyChange(slow, quiet), TimingChange::kFaster);
}

TEST(DiffNoiseTest, TwoRunsOfTheSameCodeAsTheProbeStoresThemAreNoChange) {
  // One repro script in two fresh processes on the quiet 2-core machine (doc/probe.md,
  // "Steady state: drift"): 0.490 [0.487, 0.493] and 0.582 [0.572, 0.600] ms, the calls'
  // intervals, which diff took for a regression.
  EXPECT_EQ(SteadyChange(Timed(0.490e-3, 0.487e-3, 0.493e-3, false),
                         Timed(0.582e-3, 0.572e-3, 0.600e-3, false)),
            TimingChange::kSlower);
  // As the probe stores them, widened to the median +-10% (STEADY_DRIFT_FLOOR): the same.
  const RunResult first = Timed(0.490e-3, 0.441e-3, 0.539e-3, false);
  const RunResult second = Timed(0.582e-3, 0.5238e-3, 0.6402e-3, false);
  EXPECT_EQ(SteadyChange(first, second), TimingChange::kNone);
  EXPECT_EQ(SteadyChange(second, first), TimingChange::kNone);
  // A slowdown of 1.5x is still one.
  EXPECT_EQ(SteadyChange(first, Timed(0.735e-3, 0.6615e-3, 0.8085e-3, false)),
            TimingChange::kSlower);
}

TEST(DiffNoiseTest, ReportsImprovementsAsWellAsRegressions) {
  std::vector<RunRecord> head = Sweep("s2");
  Find(head, "gpt2").result.steady_median_s = 0.050;  // 2x faster
  Find(head, "gpt2").result.steady_p90_s = 0.051;
  Find(head, "bert").result.prepare_s = 1.0;                         // 2x faster
  Find(head, "t5").result.host_peak_rss_bytes = int64_t{500} << 20;  // half
  Find(head, "llama").result.steady_median_s = 1.0;                  // 10x slower
  Find(head, "llama").result.steady_ci_low_s = 0.98;
  Find(head, "llama").result.steady_ci_high_s = 1.02;
  Find(head, "llama").result.noisy = 1;
  DiffReport report = DiffRuns(Sweep("s1"), Recorded(head));
  EXPECT_EQ(KindsOf(report), (std::vector<std::string>{"faster prepare bert", "faster steady gpt2",
                                                       "less memory t5", "slower steady llama"}));
  EXPECT_EQ(report.Regressions(), 1);
  EXPECT_EQ(report.Improvements(), 3);
  const std::string text = FormatDiffReport(report, "a", "b");
  EXPECT_NE(text.find("faster steady (1), improvement"), std::string::npos) << text;
  EXPECT_NE(text.find("+900.0% (100.00 ms -> ~1.000 s; intervals [98.00 ms, 102.00 ms] / "
                      "[490.00 ms, 2.040 s] noisy)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("; 1 regressions, 3 improvements\n"), std::string::npos) << text;
  // The noisy figure's reason under the tables (query/noise_mark.h).
  EXPECT_NE(text.find("~ noisy: timed while the machine was busy"), std::string::npos) << text;
  EXPECT_NE(text.find("  hf:llama cpu eager forward, sweep s2: steady: noisy\n"), std::string::npos)
      << text;
}

TEST(DiffNoiseTest, PrepareIsJudgedByTheFirstCallsVerdictNotTheSteadyPhases) {
  // bert prepares 50% slower in head. A noisy first call leaves prepare_s unjudged
  // (query/one_sample.h), whatever the steady phase's verdict; a quiet first call
  // reports it even when steady was noisy.
  std::vector<RunRecord> noisy_first = Sweep("s2");
  RunResult& a = Find(noisy_first, "bert").result;
  a.prepare_s = 3.0;
  a.prepare_noisy = 1;
  a.noisy = 0;
  DiffReport unjudged = DiffRuns(Sweep("s1"), Recorded(noisy_first));
  EXPECT_EQ(KindsOf(unjudged), std::vector<std::string>{});
  EXPECT_EQ(unjudged.prepare_not_judged, 1);
  EXPECT_NE(FormatDiffReport(unjudged, "a", "b")
                .find("not judged: prepare_s of 1 tests, a first call measured on a noisy machine"),
            std::string::npos);

  std::vector<RunRecord> quiet_first = Sweep("s2");
  RunResult& b = Find(quiet_first, "bert").result;
  b.prepare_s = 3.0;
  b.prepare_noisy = 0;
  b.noisy = 1;
  DiffReport report = DiffRuns(Sweep("s1"), Recorded(quiet_first));
  EXPECT_EQ(KindsOf(report), std::vector<std::string>{"slower prepare bert"});
  EXPECT_EQ(report.prepare_not_judged, 0);
  const std::string text = FormatDiffReport(report, "a", "b");
  // One sample each: never shown as a zero-wide interval; the line names its rule.
  EXPECT_NE(text.find("+50.0% (2.000 s -> 3.000 s)  one sample: > 25% and > 10.00 ms"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("[2.000 s, 2.000 s]"), std::string::npos) << text;
  EXPECT_EQ(text.find("not judged"), std::string::npos) << text;

  // A row before schema 13 has no first-call verdict: the steady phase's stands in.
  std::vector<RunRecord> old = Sweep("s2");
  RunResult& c = Find(old, "bert").result;
  c.prepare_s = 3.0;
  c.noisy = 1;
  EXPECT_FALSE(c.prepare_noisy.has_value());
  EXPECT_EQ(KindsOf(DiffRuns(Sweep("s1"), Recorded(old))), std::vector<std::string>{});
}

}  // namespace
}  // namespace compatlab
