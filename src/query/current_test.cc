#include "query/current.h"

#include "gtest/gtest.h"
#include "store/testing.h"

namespace compatlab {
namespace {

RunRecord Timed(const std::string& run_id, const std::string& started,
                const std::string& finished) {
  RunRecord run = test::MakeRun("s1", test::MakeSpec("llama"));
  run.run_id = run_id;
  run.started_at = started;
  run.finished_at = finished;
  return run;
}

TEST(CurrentTest, TheRunThatFinishedLastIsCurrentWhateverItsPlaceInTheInput) {
  // "imported" comes last in the input (as an import appends it) but finished earlier.
  const RunRecord local = Timed("local", "2026-12-01T10:00:00.000Z", "2026-12-01T10:00:05.000Z");
  const RunRecord imported =
      Timed("imported", "2026-12-01T10:00:01.000Z", "2026-12-01T10:00:02.000Z");
  EXPECT_TRUE(IsNewerRun(local, imported));
  EXPECT_FALSE(IsNewerRun(imported, local));
  std::vector<RunRecord> current = LatestPerTest({local, imported});
  ASSERT_EQ(current.size(), 1u);
  EXPECT_EQ(current[0].run_id, "local");
  current = LatestPerTest({imported, local});
  EXPECT_EQ(current[0].run_id, "local");
}

TEST(CurrentTest, EqualFinishTimesAreDecidedByStartThenRunId) {
  const RunRecord a = Timed("a", "2026-12-01T10:00:00.000Z", "2026-12-01T10:00:05.000Z");
  const RunRecord b = Timed("b", "2026-12-01T10:00:01.000Z", "2026-12-01T10:00:05.000Z");
  const RunRecord c = Timed("c", "2026-12-01T10:00:01.000Z", "2026-12-01T10:00:05.000Z");
  EXPECT_TRUE(IsNewerRun(b, a));
  EXPECT_TRUE(IsNewerRun(c, b));
  EXPECT_FALSE(IsNewerRun(c, c));
  EXPECT_EQ(LatestPerTest({c, a, b})[0].run_id, "c");
}

TEST(CurrentTest, OneRunPerKeySortedByKey) {
  RunRecord gpt2 = test::MakeRun("s1", test::MakeSpec("gpt2"));
  RunRecord llama = test::MakeRun("s1", test::MakeSpec("llama"));
  RunRecord llama_later = llama;
  llama_later.run_id = "later";
  llama_later.finished_at = "2026-11-30T03:00:00.000Z";
  const std::vector<RunRecord> current =
      CurrentPerKey(std::vector<RunRecord>{llama, gpt2, llama_later},
                    [](const RunRecord& r) -> const std::string& { return r.spec.model_id; });
  ASSERT_EQ(current.size(), 2u);
  EXPECT_EQ(current[0].spec.model_id, "hf:gpt2");
  EXPECT_EQ(current[1].run_id, "later");
}

}  // namespace
}  // namespace compatlab
