#include "gtest/gtest.h"
#include "store/store.h"
#include "store/testing.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;

OpSweepInfo Sweep(const std::string& id, const std::string& torch = "2.13.0+cpu") {
  OpSweepInfo s;
  s.op_sweep_id = id;
  s.created_at = "2026-12-05T20:00:00.000Z";
  s.target = "ctest";
  s.mode = "eager";
  s.dtypes = "float32";
  s.max_samples = 4;
  s.torch_version = torch;
  s.planned = 2;
  return s;
}

OpResult Result(const std::string& sweep, const std::string& op, TestStatus status) {
  OpResult r;
  r.op_sweep_id = sweep;
  r.op = op;
  r.dtype = "float32";
  r.status = status;
  r.samples = 3;
  r.passed = status == TestStatus::kPass ? 3 : 2;
  r.failed = status == TestStatus::kPass ? 0 : 1;
  r.max_abs_err = 0.5;
  r.fallback_ops = R"({"aten::tanh":1})";
  r.aten_ops = R"(["aten::tanh"])";
  r.skip_source = "pytorch";
  r.skip_kind = "xfail";
  r.skip_reason = "expectedFailure";
  r.wall_s = 0.25;
  return r;
}

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
  ASSERT_TRUE(store->CreateOpSweep(Sweep("s1")).ok());
  OpResult tanh = Result("s1", "tanh", TestStatus::kFailAccuracy);
  tanh.variant = "v";
  ASSERT_TRUE(store->InsertOpResults({tanh, Result("s1", "add", TestStatus::kPass)}).ok());
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

TEST_F(OpStoreTest, ASecondResultOfACaseIsRefusedAndNothingOfItsBatchIsWritten) {
  auto store = Open();
  ASSERT_TRUE(store->CreateOpSweep(Sweep("s1")).ok());
  ASSERT_TRUE(store->InsertOpResults({Result("s1", "add", TestStatus::kPass)}).ok());
  absl::Status again = store->InsertOpResults(
      {Result("s1", "mul", TestStatus::kPass), Result("s1", "add", TestStatus::kPass)});
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists) << again;
  EXPECT_EQ(store->OpResults("s1")->size(), 1u);
  EXPECT_EQ(store->InsertOpResults({Result("nope", "add", TestStatus::kPass)}).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store->CreateOpSweep(Sweep("s1")).code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(OpStoreTest, MergeIsIdempotentAndRefusesASweepOfAnotherTorch) {
  auto store = Open();
  std::vector<OpResult> results = {Result("x", "add", TestStatus::kPass),
                                   Result("x", "tanh", TestStatus::kFailAccuracy)};
  auto added = store->MergeOpResults(Sweep("s1"), results);
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(*added, 2);
  added = store->MergeOpResults(Sweep("s1"), results);
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(*added, 0);
  EXPECT_EQ(store->MergeOpResults(Sweep("s1", "2.12.0"), results).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->OpResults("s1")->size(), 2u);
}

}  // namespace
}  // namespace compatlab
