#include "query/builds.h"

#include "gtest/gtest.h"
#include "query/diff.h"
#include "store/testing.h"

namespace compatlab {
namespace {

using test::MakeRun;
using test::MakeSpec;

RunRecord Built(const std::string& sweep_id, const std::string& torch, const std::string& build) {
  RunRecord run = MakeRun(sweep_id, MakeSpec("gpt2"));
  run.run_id = sweep_id;
  run.result.torch_version = torch;
  run.result.torch_build = build;
  run.result.blas = "mkl 2024.2";
  run.result.openmp = "OpenMP 201511 libgomp";
  run.cpu_model = "cpu-A";
  return run;
}

TEST(BuildsTest, TheSameBuildSaysNothingAnotherReleaseAlone) {
  EXPECT_EQ(BuildsDifferLine({Built("a", "2.13.0+cpu", "cpu")}, {Built("b", "2.13.0+cpu", "cpu")}),
            "");
  // Another release of the same build: diff compares releases, nothing to say.
  EXPECT_EQ(BuildsDifferLine({Built("a", "2.13.0+cpu", "cpu")}, {Built("b", "2.14.1+cpu", "cpu")}),
            "");
}

TEST(BuildsTest, AnotherKindOfBuildIsNamedWithEachPartThatDiffers) {
  RunRecord head = Built("b", "2.14.1+cu130", "cuda 13.0");
  head.result.blas = "mkl 2025.0";
  EXPECT_EQ(BuildsDifferLine({Built("a", "2.13.0+cpu", "cpu")}, {head}),
            "builds differ: torch 2.13.0+cpu vs 2.14.1+cu130; torch_build cpu vs cuda 13.0; blas "
            "mkl 2024.2 vs mkl 2025.0; timings compare builds, not only releases\n");
}

TEST(BuildsTest, APartOneSideNeverRecordedIsLeftOut) {
  RunRecord old = Built("a", "2.12.0+cpu", "");  // a row before schema 24
  old.result.blas.clear();
  old.result.openmp.clear();
  EXPECT_TRUE(BuildDifferences({old}, {Built("b", "2.14.1+cu130", "cuda 13.0")}).empty());
}

TEST(BuildsTest, TheDiffReportSaysItBeforeAnyTimingLine) {
  RunRecord base = Built("a", "2.13.0+cpu", "cpu");
  base.result.steady_median_s = 0.010;
  base.result.steady_ci_low_s = 0.0099;
  base.result.steady_ci_high_s = 0.0101;
  RunRecord head = Built("b", "2.14.1+cu130", "cuda 13.0");
  head.result.steady_median_s = 0.015;
  head.result.steady_ci_low_s = 0.0149;
  head.result.steady_ci_high_s = 0.0151;
  const std::string text = FormatDiffReport(DiffRuns({base}, {head}), "a", "b");
  const size_t builds = text.find("builds differ: torch 2.13.0+cpu vs 2.14.1+cu130");
  ASSERT_NE(builds, std::string::npos) << text;
  EXPECT_LT(builds, text.find("slower steady (1)")) << text;
}

}  // namespace
}  // namespace compatlab
