#include "server/caches.h"

#include "core/error_signature.h"
#include "gtest/gtest.h"
#include "query/testing.h"

namespace compatlab {
namespace {

ErrorKnowledgeBase Kb() {
  auto kb = ErrorKnowledgeBase::Parse(test::kMat1KnowledgeFile, "kb.json");
  EXPECT_TRUE(kb.ok()) << kb.status();
  return *std::move(kb);
}

RunResult Failure(const std::string& message) {
  RunResult result;
  result.status = TestStatus::kFailToRun;
  result.error_type = "RuntimeError";
  result.error_message = message;
  result.error_signature = FailureSignature(result);  // as the record is made
  return result;
}

TEST(KnownErrorCacheTest, MatchesFailuresOnceAndRemembersBySubject) {
  const ErrorKnowledgeBase kb = Kb();
  KnownErrorCache cache(&kb);
  const KnownError* known = cache.Find(Failure("mat1 and mat2 shapes (2 and 3)"));
  ASSERT_NE(known, nullptr);
  EXPECT_EQ(known->id, "mat1-shapes");
  EXPECT_EQ(cache.Find(Failure("mat1 and mat2 shapes (6 and 7)")), known);  // one subject
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.Find(Failure("something else")), nullptr);
  EXPECT_EQ(cache.size(), 2u);  // a miss is remembered too

  RunResult pass = Failure("mat1");
  pass.status = TestStatus::kPass;
  EXPECT_EQ(cache.Find(pass), nullptr);
  EXPECT_EQ(cache.size(), 2u);
  KnownErrorCache none(nullptr);
  EXPECT_EQ(none.Find(Failure("mat1 and mat2")), nullptr);
}

TEST(SummaryCacheTest, AnswersHoldUntilRunsAreAdded) {
  SummaryCache cache;
  EXPECT_FALSE(cache.Find("target=cpu&", 10).has_value());
  cache.Put("target=cpu&", 10, "{\"runs\":10}");
  EXPECT_EQ(cache.Find("target=cpu&", 10), "{\"runs\":10}");
  EXPECT_FALSE(cache.Find("target=cpu&", 11).has_value());  // a run was indexed since
  EXPECT_FALSE(cache.Find("target=cuda&", 10).has_value());
  for (size_t i = 0; i < SummaryCache::kMaxEntries; ++i) cache.Put(std::to_string(i), 10, "x");
  EXPECT_FALSE(cache.Find("target=cpu&", 10).has_value());  // bounded: started again
}

}  // namespace
}  // namespace compatlab
