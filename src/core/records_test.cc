#include "core/records.h"

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
