#include "query/profile_compare.h"

#include "gtest/gtest.h"

namespace compatlab {
namespace {

RunResult Profiled(double compute_s, const std::string& top_ops) {
  RunResult r;
  r.profile = "steady";
  r.profile_calls = 5;
  r.profile_compute_s = compute_s;
  r.profile_copy_s = 0.0;
  r.profile_top_ops = top_ops;
  return r;
}

TEST(ProfileCompareTest, AlignsOpsByNameAndShapesAndOrdersThemByChange) {
  const RunResult base = Profiled(0.010, R"([
    {"name":"aten::mm","shapes":"[[8, 64], [64, 64]]","calls":8,"self_s":0.002,"share":0.2},
    {"name":"aten::mm","shapes":"[[8, 64], [64, 256]]","calls":2,"self_s":0.001,"share":0.1},
    {"name":"aten::_scaled_dot_product_flash_attention_for_cpu","shapes":"[[1]]","calls":2,
     "self_s":0.003,"share":0.3}])");
  const RunResult head = Profiled(0.014, R"([
    {"name":"aten::mm","shapes":"[[8, 64], [64, 64]]","calls":8,"self_s":0.0021,"share":0.2},
    {"name":"aten::mm","shapes":"[[8, 64], [64, 256]]","calls":2,"self_s":0.001,"share":0.1},
    {"name":"aten::bmm","shapes":"[[4, 8, 16], [4, 16, 8]]","calls":4,"self_s":0.005,"share":0.4}])");
  const ProfileComparison c = CompareProfiles(base, head);
  ASSERT_EQ(c.categories.size(), 5u);
  EXPECT_EQ(c.categories[0].name, "compute");
  EXPECT_NEAR(c.categories[0].Delta(), 0.004, 1e-12);
  EXPECT_FALSE(c.categories[2].base_s.has_value());  // fallback: not measured
  ASSERT_EQ(c.ops.size(), 4u);
  EXPECT_EQ(c.ops[0].name, "aten::bmm");  // only the head's: +5 ms
  EXPECT_FALSE(c.ops[0].base_s.has_value());
  EXPECT_EQ(c.ops[1].name, "aten::_scaled_dot_product_flash_attention_for_cpu");  // -3 ms
  EXPECT_NEAR(c.ops[1].Delta(), -0.003, 1e-12);
  EXPECT_EQ(c.ops[2].shapes, "[[8, 64], [64, 64]]");  // the same op, aligned by its shapes
  EXPECT_NEAR(c.ops[2].Delta(), 0.0001, 1e-12);
  EXPECT_EQ(CompareProfiles(base, head, 1).ops.size(), 1u);
  const std::string text = FormatProfileComparison(c);
  EXPECT_NE(text.find("+5.000 ms  aten::bmm"), std::string::npos) << text;
  EXPECT_EQ(ProfileComparisonJson(c)["ops"][0]["head_s"], 0.005);
  EXPECT_TRUE(ProfileComparisonJson(c)["ops"][0]["base_s"].is_null());
}

TEST(ProfileCompareTest, TopOpsThatAreNotTheDocumentedArrayGiveNoOps) {
  for (const std::string bad : {"", "{}", "[1, 2]", R"([{"name": 3, "self_s": 1}])",
                                R"([{"name": "aten::mm", "self_s": "fast"}])"}) {
    EXPECT_TRUE(CompareProfiles(Profiled(1, bad), Profiled(1, bad)).ops.empty()) << bad;
  }
  EXPECT_FALSE(HasProfile(RunResult{}));
  EXPECT_TRUE(HasProfile(Profiled(1, "")));
}

}  // namespace
}  // namespace compatlab
