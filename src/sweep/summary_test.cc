#include "sweep/summary.h"

#include "gtest/gtest.h"

namespace compatlab {
namespace {

TEST(SummaryTest, StartAndResumeLinesNameTheSweepAndItsCounts) {
  EXPECT_EQ(SweepStartLine("S1", "smoke", 4, 2, "x.db"),
            "compatlab: sweep S1: suite smoke, 4 tests, --jobs 2, store x.db\n");
  EXPECT_EQ(ResumeLine("S1", 1, 4), "compatlab: resuming sweep S1: 1 of 4 tests left\n");
}

TEST(SummaryTest, InterruptedLineGivesTheResumeCommand) {
  EXPECT_EQ(InterruptedLine("interrupted by SIGINT", 2, 5, "x.db", "S1"),
            "compatlab: interrupted by SIGINT after 2 of 5 tests; resume with: compatlab sweep "
            "--db x.db --resume S1\n");
}

TEST(SummaryTest, FinishedLineCountsThisRunAndZygoteRestarts) {
  EXPECT_EQ(SweepFinishedLine("S1", 4, 2.0, 2, 0),
            "compatlab: sweep S1 finished: 4 results in 2.0 s (2 this run, 1000.0 ms per "
            "test)\n");
  EXPECT_NE(SweepFinishedLine("S1", 4, 2.0, 0, 1).find("0.0 ms per test); zygote restarted 1x"),
            std::string::npos);
  EXPECT_EQ(ZygoteReadyLine(1.25, 3, 1),
            "compatlab: zygote ready in 1.2 s (3 modelling modules preloaded, 1 failed)\n");
}

TEST(SummaryTest, TableCountsStatuses) {
  RunRecord pass;
  pass.result.status = TestStatus::kPass;
  RunRecord crash;
  crash.result.status = TestStatus::kCrash;
  std::string table = SweepSummaryTable({pass, crash});
  EXPECT_NE(table.find("pass"), std::string::npos);
  EXPECT_NE(table.find("crash"), std::string::npos);
}

TEST(MachineQuietTest, NeedsNoOtherRunningTaskWhateverTheLoadAverage) {
  EXPECT_TRUE(MachineQuiet("0.50 0.40 0.30 1/456 12345\n"));
  // A busy minute's load average, still decaying after the other job ended: quiet now.
  EXPECT_TRUE(MachineQuiet("2.60 1.40 0.80 1/456 12345\n"));
  EXPECT_FALSE(MachineQuiet("0.10 0.10 0.10 2/456 12345\n"));  // one other task running
  EXPECT_FALSE(MachineQuiet("garbage"));
}

TEST(QuietWatchTest, IsQuietOnlyAfterConsecutiveQuietPolls) {
  const std::string quiet = "0.50 0.40 0.30 1/456 12345\n";
  const std::string busy = "0.50 0.40 0.30 3/456 12345\n";
  QuietWatch watch;
  for (int i = 1; i < QuietWatch::kPolls; ++i) EXPECT_FALSE(watch.Poll(quiet)) << i;
  EXPECT_FALSE(watch.Poll(busy));  // a burst starts the count again
  for (int i = 1; i < QuietWatch::kPolls; ++i) EXPECT_FALSE(watch.Poll(quiet)) << i;
  EXPECT_TRUE(watch.Poll(quiet));
  EXPECT_TRUE(watch.Poll(quiet));
  EXPECT_FALSE(watch.Poll(""));  // unreadable: not quiet
}

// Issue 46, part 4: where the sweep's wall time went.
TEST(SweepTimeLineTest, SplitsTheWallTimeIntoTheZygoteTheWaitAndTheTestsPhases) {
  RunRecord eager;
  eager.spec.mode = "eager";
  eager.result.build_s = 0.5;
  eager.result.prepare_s = 0.25;
  eager.result.steady_wall_s = 1.0;
  eager.result.reference_s = 0.5;
  eager.result.wall_s = 3.0;
  RunRecord compiled = eager;
  compiled.spec.mode = "compile";
  compiled.result.prepare_s = 10.0;
  compiled.result.warm_prepare_s = 2.0;
  compiled.result.wall_s = 15.0;
  SweepTimes times;
  times.wall_s = 30;
  times.zygote_s = 12.0;
  times.compiler_startup_s = 9.75;
  times.quiet_wait_s = 4.0;
  EXPECT_EQ(SweepTimeLine(times, {eager, compiled}),
            "compatlab: time: 30.0 s in all: zygote start 12.0 s (compiler start-up 9.8 s of it), "
            "waiting for quiet 4.0 s; in the tests (2, summed): build 1.0 s, compile 10.0 s, "
            "first calls 0.2 s, steady 2.0 s, references 1.0 s, warm reruns 2.0 s, the rest "
            "1.8 s\n");
  EXPECT_NE(SweepTimeLine(SweepTimes{}, {}).find("no zygote, waiting for quiet 0.0 s"),
            std::string::npos);
}

TEST(BusySpellLineTest, NamesTheReasonAndAtMostFiveTests) {
  EXPECT_EQ(BusySpellLine("steady: cpu/wall 0.31 < 0.5", {"llama forward"}),
            "compatlab: warning: the machine turned busy during the sweep (steady: cpu/wall 0.31 "
            "< 0.5): 1 test timed noisy so far (llama forward); their figures are marked ~\n");
  EXPECT_NE(BusySpellLine("r", {"a", "b", "c", "d", "e", "f", "g"})
                .find("7 tests timed noisy so far (a, b, c, d, e and 2 more);"),
            std::string::npos);
}

TEST(BusyMachineLineTest, WarnsWhenTheLoadOrTheRunningTasksExceedTheCores) {
  EXPECT_EQ(BusyMachineLine("0.50 0.40 0.30 1/456 12345\n", 2), "");
  EXPECT_EQ(BusyMachineLine("1.90 0.40 0.30 2/456 12345\n", 2), "");  // one other running
  EXPECT_EQ(BusyMachineLine("5.65 2.65 2.03 1/456 12345\n", 2),
            "compatlab: warning: the machine is busy before the sweep starts (load average 5.65 "
            "on 2 cores, 0 other running tasks): its timings are likely to be marked noisy\n");
  EXPECT_NE(BusyMachineLine("0.10 0.10 0.10 3/456 12345\n", 2).find("2 other running tasks"),
            std::string::npos);
  EXPECT_EQ(BusyMachineLine("garbage", 2), "");
  EXPECT_EQ(BusyMachineLine("", 2), "");
}

}  // namespace
}  // namespace compatlab
