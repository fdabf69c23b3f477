#include "sweep/scale_out.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "store/testing.h"
#include "sweep/plan_file.h"
#include "util/fs.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;

// A plan file of two tests in `shards` shards, written under `dir`.
fs::path WritePlanFile(const fs::path& dir, int64_t shards) {
  std::vector<ResolvedTest> tests(2);
  tests[0].spec = test::MakeSpec("gpt2");
  tests[1].spec = test::MakeSpec("bert");
  for (ResolvedTest& t : tests) t.execution = TestExecution{};
  absl::StatusOr<ShardedPlan> plan = PartitionPlan(tests, "ci", shards, {});
  EXPECT_TRUE(plan.ok());
  const fs::path path = dir / "plan.json";
  EXPECT_TRUE(WriteFileAtomic(path, *PlanFileText(*plan)).ok());
  return path;
}

TEST(ScaleOutTest, SlurmGetsAnArrayJobAMergeAfterItAndTheScriptSubmittingBoth) {
  test::ScopedTempDir dir;
  SlurmOptions o;
  o.compatlab = "/usr/local/bin/compatlab";
  o.plan = WritePlanFile(dir.path(), 3);
  o.shards = 3;
  o.out = dir.path() / "jobs";
  o.time = "01:00:00";
  absl::StatusOr<ScaleOutFiles> files = WriteSlurmJobs(o);
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->files.size(), 3u);
  const std::string shards = *ReadFile(o.out / "shards.sbatch");
  EXPECT_TRUE(absl::StrContains(shards, "#SBATCH --array=0-2\n")) << shards;
  EXPECT_TRUE(absl::StrContains(shards, "#SBATCH --requeue\n"));
  EXPECT_TRUE(absl::StrContains(shards, "#SBATCH --time=01:00:00\n"));
  EXPECT_TRUE(absl::StrContains(shards, "--shard \"${SLURM_ARRAY_TASK_ID}/3\""));
  const std::string merge = *ReadFile(o.out / "merge.sbatch");
  EXPECT_TRUE(absl::StrContains(merge, "merge " + (o.out / "merged.db").string())) << merge;
  EXPECT_TRUE(absl::StrContains(merge, "sweeps --db"));
  const std::string submit = *ReadFile(o.out / "submit.sh");
  EXPECT_TRUE(absl::StrContains(submit, "--dependency=afterany:\"$array\" merge.sbatch"));
  EXPECT_TRUE(absl::StrContains(submit, "sbatch --parsable shards.sbatch"));
}

TEST(ScaleOutTest, AShardCountOtherThanThePlansOrAnUnsafeValueIsRefused) {
  test::ScopedTempDir dir;
  SlurmOptions o;
  o.compatlab = "/usr/local/bin/compatlab";
  o.plan = WritePlanFile(dir.path(), 3);
  o.out = dir.path() / "jobs";
  o.shards = 2;
  EXPECT_TRUE(absl::IsInvalidArgument(WriteSlurmJobs(o).status()));
  o.shards = 3;
  o.partition = "gpu; rm -rf /";
  EXPECT_TRUE(absl::IsInvalidArgument(WriteSlurmJobs(o).status()));
  o.partition = "";
  o.out = dir.path() / "it's";
  EXPECT_TRUE(absl::IsInvalidArgument(WriteSlurmJobs(o).status()));
  EXPECT_FALSE(fs::exists(dir.path() / "jobs"));
}

TEST(ScaleOutTest, KubernetesGetsAnIndexedJobAndAMergeJob) {
  test::ScopedTempDir dir;
  K8sOptions o;
  o.plan = WritePlanFile(dir.path(), 4);
  o.shards = 4;
  o.out = dir.path() / "k8s";
  o.image = "registry.example/compatlab:1.0";
  o.claim = "compatlab-work";
  absl::StatusOr<ScaleOutFiles> files = WriteK8sJobs(o);
  ASSERT_TRUE(files.ok()) << files.status();
  const std::string shards = *ReadFile(o.out / "shards-job.yaml");
  EXPECT_TRUE(absl::StrContains(shards, "completionMode: Indexed\n")) << shards;
  EXPECT_TRUE(absl::StrContains(shards, "completions: 4\n"));
  EXPECT_TRUE(absl::StrContains(shards, "backoffLimitPerIndex: 2\n"));
  EXPECT_TRUE(absl::StrContains(shards, "${JOB_COMPLETION_INDEX}/4"));
  EXPECT_TRUE(absl::StrContains(*ReadFile(o.out / "merge-job.yaml"), "compatlab merge"));
  o.image = "evil\nimage";
  EXPECT_TRUE(absl::IsInvalidArgument(WriteK8sJobs(o).status()));
}

}  // namespace
}  // namespace compatlab
