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
