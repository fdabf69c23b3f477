#include "core/records.h"

#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace compatlab {
namespace {

TEST(RecordsTest, StatusNamesRoundTrip) {
  for (TestStatus s : AllTestStatuses()) {
    auto parsed = ParseTestStatus(TestStatusName(s));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, s);
  }
  EXPECT_EQ(AllTestStatuses().size(), 10u);
  EXPECT_FALSE(ParseTestStatus("passed").ok());
}

TEST(RecordsTest, TestIdIgnoresTimeoutAndPathButNotIdentity) {
  TestSpec a;
  a.model_id = "hf:llama";
  a.model_type = "llama";
  a.model_class = "LlamaForCausalLM";
  TestSpec b = a;
  b.timeout_s = 5;
  b.model_path = "/tmp/elsewhere";
  EXPECT_EQ(a.TestId(), b.TestId());
  EXPECT_EQ(a.TestId().size(), 32u);
  b.seq_len = 64;
  EXPECT_NE(a.TestId(), b.TestId());
  TestSpec c = a;
  c.kind_params["rep"] = "1";
  EXPECT_NE(a.TestId(), c.TestId());
}

TEST(RecordsTest, RanksAreIdentityOnlyWhenNotOneSoOneRankTestsKeepTheirIds) {
  TestSpec one;
  one.model_id = "hf:llama";
  // The id of this test before schema 28 added ranks (computed by that version's TestId).
  const std::string before = one.TestId();
  one.ranks = 1;
  EXPECT_EQ(one.TestId(), before);
  TestSpec two = one;
  two.ranks = 2;
  EXPECT_NE(two.TestId(), before);
  TestSpec four = one;
  four.ranks = 4;
  EXPECT_NE(four.TestId(), two.TestId());
}

TEST(RecordsTest, AStaticTestKeepsItsIdAndADynamicOneHasItsOwn) {
  TestSpec spec;
  spec.model_id = "hf:llama";
  spec.mode = "compile";
  spec.backend = "inductor";
  // Pinned: the id of this static test before the dynamic keys existed (schema 24).
  const std::string static_id = spec.TestId();
  EXPECT_EQ(static_id, "88fbb49645dcf07743f56c941d75fcbe");
  TestSpec dynamic = spec;
  dynamic.dynamic = "true";
  dynamic.shapes = "1x32,1x64";
  TestSpec mark = dynamic;
  mark.dynamic = "mark";
  TestSpec other_shapes = dynamic;
  other_shapes.shapes = "1x32,1x128";
  const std::set<std::string> ids = {static_id, dynamic.TestId(), mark.TestId(),
                                     other_shapes.TestId()};
  EXPECT_EQ(ids.size(), 4u);
}

TEST(RecordsTest, ShapesTextIsCheckedAndCanonical) {
  auto shapes = ParseShapesText("1x16,2x32");
  ASSERT_TRUE(shapes.ok()) << shapes.status();
  EXPECT_EQ(*shapes, (std::vector<Shape>{{1, 16}, {2, 32}}));
  EXPECT_EQ(ShapesText(*shapes), "1x16,2x32");
  for (const char* bad :
       {"", "1x16,", "1x16,1x16", "0x16", "1x2000000", "1x 16", "+1x16", "16", "1x16x2", "1x016"}) {
    EXPECT_FALSE(ParseShapesText(bad).ok()) << bad;
  }
  std::string many;
  for (int i = 1; i <= 65; ++i) many += (i > 1 ? "," : "") + std::string("1x") + std::to_string(i);
  EXPECT_FALSE(ParseShapesText(many).ok());
}

TEST(RecordsTest, TestIdNeverThrowsOnBytesThatAreNotUtf8) {
  TestSpec spec;
  spec.model_id = "hf:\xff\xfe";
  spec.kind_params = {{"p\xc3", "\x80\x80"}};
  std::string id;
  EXPECT_NO_THROW(id = spec.TestId());
  EXPECT_EQ(id.size(), 32u);
  EXPECT_EQ(id, spec.TestId());  // stable
}

}  // namespace
}  // namespace compatlab
