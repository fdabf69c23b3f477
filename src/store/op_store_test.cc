#include "gtest/gtest.h"
#include "store/op_testing.h"
#include "store/store.h"
#include "store/testing.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;
using test::MakeOpResult;
using test::MakeOpSweep;

class OpStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<Store> Open() {
    auto store = Store::Open(temp_.path() / "ops.db", OpenMode::kReadWriteCreate);
    EXPECT_TRUE(store.ok()) << store.status();
    return *std::move(store);
  }
  test::ScopedTempDir temp_;
};

TEST_F(OpStoreTest, ResultsReadBackAsStoredWithTheirSweepsTargetAndMode) {
  auto store = Open();
  ASSERT_TRUE(store->CreateOpSweep(MakeOpSweep("s1")).ok());
  OpResult tanh = MakeOpResult("s1", "tanh", TestStatus::kFailAccuracy);
  tanh.variant = "v";
  ASSERT_TRUE(store->InsertOpResults({tanh, MakeOpResult("s1", "add", TestStatus::kPass)}).ok());
  auto results = store->OpResults("s1");
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 2u);
  const OpResult& r = (*results)[1];  // ordered by op
  EXPECT_EQ(r.Key(), "tanh:v");
  EXPECT_EQ(r.status, TestStatus::kFailAccuracy);
  EXPECT_EQ(r.target, "ctest");
  EXPECT_EQ(r.mode, "eager");
  EXPECT_EQ(r.torch_version, "2.13.0+cpu");
  EXPECT_EQ(r.max_abs_err, 0.5);
  EXPECT_FALSE(r.atol.has_value());
  EXPECT_EQ(r.fallback_ops, R"({"aten::tanh":1})");
  EXPECT_EQ(r.skip_kind, "xfail");
  EXPECT_EQ(r.wall_s, 0.25);
  auto sweeps = store->ListOpSweeps();
  ASSERT_TRUE(sweeps.ok());
  ASSERT_EQ(sweeps->size(), 1u);
  EXPECT_EQ(sweeps->front().recorded, 2);
  EXPECT_TRUE(sweeps->front().finished_at.empty());
  ASSERT_TRUE(store->FinishOpSweep("s1", "2026-12-05T21:00:00.000Z").ok());
  EXPECT_EQ(store->GetOpSweep("s1")->finished_at, "2026-12-05T21:00:00.000Z");
}

TEST_F(OpStoreTest, TheMarkChangesWithEveryStoredSweepResultAndFinish) {
  auto store = Open();
  auto mark = [&store] {
    absl::StatusOr<OpTablesMark> m = store->MarkOpTables();
    EXPECT_TRUE(m.ok()) << m.status();
    return m.value_or(OpTablesMark{-1, -1, -1});
  };
  const OpTablesMark empty = mark();
  EXPECT_EQ(empty, OpTablesMark{});
  ASSERT_TRUE(store->CreateOpSweep(MakeOpSweep("s1")).ok());
  const OpTablesMark created = mark();
  EXPECT_EQ(created.sweeps, 1);
  EXPECT_EQ(created.finished, 0);
  ASSERT_TRUE(store->InsertOpResults({MakeOpResult("s1", "add", TestStatus::kPass)}).ok());
  const OpTablesMark one = mark();
  EXPECT_NE(one, created);
  EXPECT_EQ(mark(), one);  // nothing stored since
  ASSERT_TRUE(store->FinishOpSweep("s1", "2026-12-05T21:00:00.000Z").ok());
  const OpTablesMark finished = mark();
  EXPECT_EQ(finished.finished, 1);
  EXPECT_NE(finished, one);
  ASSERT_TRUE(
      store->MergeOpResults(MakeOpSweep("s1"), {MakeOpResult("s1", "tanh", TestStatus::kPass)})
          .ok());
  EXPECT_GT(mark().last_result, finished.last_result);
}

TEST_F(OpStoreTest, ASecondResultOfACaseIsRefusedAndNothingOfItsBatchIsWritten) {
  auto store = Open();
  ASSERT_TRUE(store->CreateOpSweep(MakeOpSweep("s1")).ok());
  ASSERT_TRUE(store->InsertOpResults({MakeOpResult("s1", "add", TestStatus::kPass)}).ok());
  absl::Status again = store->InsertOpResults(
      {MakeOpResult("s1", "mul", TestStatus::kPass), MakeOpResult("s1", "add", TestStatus::kPass)});
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists) << again;
  EXPECT_EQ(store->OpResults("s1")->size(), 1u);
  EXPECT_EQ(store->InsertOpResults({MakeOpResult("nope", "add", TestStatus::kPass)}).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store->CreateOpSweep(MakeOpSweep("s1")).code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(OpStoreTest, MergeIsIdempotentAndRefusesASweepOfAnotherTorch) {
  auto store = Open();
  std::vector<OpResult> results = {MakeOpResult("x", "add", TestStatus::kPass),
                                   MakeOpResult("x", "tanh", TestStatus::kFailAccuracy)};
  auto added = store->MergeOpResults(MakeOpSweep("s1"), results);
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(*added, 2);
  added = store->MergeOpResults(MakeOpSweep("s1"), results);
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(*added, 0);
  EXPECT_EQ(store->MergeOpResults(MakeOpSweep("s1", "2.12.0"), results).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->OpResults("s1")->size(), 2u);
}

}  // namespace
}  // namespace compatlab
