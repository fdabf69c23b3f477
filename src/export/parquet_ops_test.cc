#include "export/parquet_ops.h"

#include "gtest/gtest.h"

namespace compatlab {
namespace {

OpSweepResults Sweep(const std::string& id) {
  OpSweepResults s;
  s.sweep.op_sweep_id = id;
  s.sweep.created_at = "2026-12-05T20:00:00.000Z";
  s.sweep.target = "ctest";
  s.sweep.mode = "eager";
  s.sweep.dtypes = "float32";
  s.sweep.torch_version = "2.13.0+cpu";
  s.sweep.check_skips = true;
  OpResult r;
  r.op_sweep_id = id;
  r.op = "max";
  r.variant = "binary";
  r.dtype = "float32";
  r.status = TestStatus::kFailAccuracy;
  r.samples = 2;
  r.failed = 1;
  r.max_abs_err = 0.5;
  r.fallback_ops = R"({"aten::max":1})";
  r.skip_source = "pytorch";
  r.wall_s = 0.125;
  s.results.push_back(r);
  r.op = "add";
  r.variant = "";
  r.status = TestStatus::kPass;
  r.max_abs_err.reset();
  r.skip_source.clear();
  s.results.push_back(r);
  return s;
}

TEST(ParquetOpsTest, RoundTripsEveryColumn) {
  auto bytes = OpResultsToParquet({Sweep("s1"), Sweep("s2")});
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto read = OpResultsFromParquet(*bytes, "ops.parquet", 100);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 2u);
  const OpSweepResults& s = (*read)[0];
  EXPECT_EQ(s.sweep.op_sweep_id, "s1");
  EXPECT_EQ(s.sweep.target, "ctest");
  EXPECT_TRUE(s.sweep.check_skips);
  ASSERT_EQ(s.results.size(), 2u);
  const OpResult& max = s.results[1];  // rows by op
  EXPECT_EQ(max.Key(), "max:binary");
  EXPECT_EQ(max.status, TestStatus::kFailAccuracy);
  EXPECT_EQ(max.max_abs_err, 0.5);
  EXPECT_FALSE(s.results[0].max_abs_err.has_value());
  EXPECT_EQ(max.fallback_ops, R"({"aten::max":1})");
  EXPECT_EQ(max.skip_source, "pytorch");
  EXPECT_EQ(max.wall_s, 0.125);
}

TEST(ParquetOpsTest, RefusesTooManyRowsAndFilesThatAreNotOpResults) {
  auto bytes = OpResultsToParquet({Sweep("s1")});
  ASSERT_TRUE(bytes.ok());
  auto too_many = OpResultsFromParquet(*bytes, "ops.parquet", 1);
  EXPECT_EQ(too_many.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(too_many.status().message().find("more than 1 op results"), std::string::npos);
  EXPECT_FALSE(OpResultsFromParquet("PAR1 not parquet", "x.parquet", 10).ok());
}

TEST(ParquetOpsTest, RefusesABadOpKeyAndACaseTwice) {
  OpSweepResults s = Sweep("s1");
  s.results[0].op = "max*";
  auto bytes = OpResultsToParquet({s});
  ASSERT_TRUE(bytes.ok());
  EXPECT_FALSE(OpResultsFromParquet(*bytes, "ops.parquet", 10).ok());
  s = Sweep("s1");
  s.results[1] = s.results[0];
  bytes = OpResultsToParquet({s});
  ASSERT_TRUE(bytes.ok());
  auto twice = OpResultsFromParquet(*bytes, "ops.parquet", 10);
  EXPECT_NE(twice.status().message().find("twice"), std::string::npos) << twice.status();
}

}  // namespace
}  // namespace compatlab
