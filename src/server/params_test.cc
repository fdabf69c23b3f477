#include "server/params.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace compatlab {
namespace {

using ::testing::HasSubstr;
using Values = std::multimap<std::string, std::string>;

// The error message of parsing `values` (sent as `target`) with the filter names allowed.
std::string ParseError(const std::string& target, const Values& values) {
  absl::StatusOr<Params> params = Params::Parse(target, values, Allowed({"limit"}));
  EXPECT_EQ(params.status().code(), absl::StatusCode::kInvalidArgument) << target;
  return std::string(params.status().message());
}

TEST(ParamsTest, BadParametersAreRefusedWithTheirReason) {
  EXPECT_EQ(ParseError("/api/search?colour=red", {{"colour", "red"}}),
            "unknown parameter 'colour'");
  EXPECT_EQ(ParseError("/api/search?model=a&model=b", {{"model", "a"}, {"model", "b"}}),
            "parameter 'model' given twice");
  EXPECT_EQ(ParseError("/api/search", {{"model", std::string(kMaxParamBytes + 1, 'x')}}),
            "parameter 'model' is longer than 256 bytes");
  EXPECT_EQ(ParseError("/api/search?model=%0a", {{"model", "\n"}}),
            "parameter 'model' holds a control character");
  EXPECT_EQ(ParseError("/api/search?model=%7f", {{"model", "\x7f"}}),
            "parameter 'model' holds a control character");
  EXPECT_EQ(ParseError("/api/diff?base=torch=2.13.0", {{"base", "torch"}}),
            "a parameter value holds '=': percent-encode it as %3D");
  EXPECT_THAT(
      ParseError("/api/search?" + std::string(100, 'n') + "=1", {{std::string(100, 'n'), "1"}}),
      HasSubstr("'" + std::string(64, 'n') + "'"));  // the name is cut
}

TEST(ParamsTest, GoodParametersAreKeptAndCanonical) {
  absl::StatusOr<Params> params =
      Params::Parse("/api/search?target=cuda&model=gpt2&limit=10",
                    {{"target", "cuda"}, {"model", "gpt2"}, {"limit", "10"}}, Allowed({"limit"}));
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_EQ(params->Get("target"), "cuda");
  EXPECT_EQ(params->Get("sweep_id"), "");
  EXPECT_EQ(params->Canonical(), "limit=10&model=gpt2&target=cuda&");
  EXPECT_TRUE(
      Params::Parse("/api/search?base=torch%3D2.13", {{"base", "torch=2.13"}}, Allowed({"base"}))
          .ok());
  EXPECT_TRUE(Params::Parse("/api/health", {}, {}).ok());
}

TEST(ParamsTest, IntegersAreBounded) {
  absl::StatusOr<Params> params =
      Params::Parse("/", {{"limit", "0"}, {"cursor", "abc"}, {"a", "12"}, {"b", "7x"}},
                    {"limit", "cursor", "a", "b"});
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_EQ(params->Int("limit", 25, 1, 200).status().message(),
            "parameter 'limit' must be a whole number from 1 to 200");
  EXPECT_FALSE(params->Int("cursor", 0, 1, INT64_MAX).ok());
  EXPECT_FALSE(params->Int("b", 0, 0, 100).ok());
  EXPECT_EQ(*params->Int("a", 0, 0, 100), 12);
  EXPECT_EQ(*params->Int("absent", 25, 1, 200), 25);
}

TEST(ParamsTest, FiltersBecomeTheIndexQuery) {
  absl::StatusOr<Params> params = Params::Parse("/",
                                                {{"model", "GPT"},
                                                 {"model_id", "hf:gpt2"},
                                                 {"status", "fail_to_run"},
                                                 {"torch_version", "2.13.0"}},
                                                Allowed({}));
  ASSERT_TRUE(params.ok()) << params.status();
  absl::StatusOr<IndexQuery> query = ToIndexQuery(*params);
  ASSERT_TRUE(query.ok()) << query.status();
  EXPECT_EQ(query->filter.model, "GPT");
  EXPECT_EQ(query->model_id, "hf:gpt2");
  EXPECT_EQ(query->filter.status, TestStatus::kFailToRun);
  EXPECT_EQ(query->filter.torch_version, "2.13.0");

  absl::StatusOr<Params> bad = Params::Parse("/", {{"status", "great"}}, Allowed({}));
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ(ToIndexQuery(*bad).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(Allowed({}).contains("limit"));
  EXPECT_TRUE(Allowed({"limit"}).contains("transformers_version"));
}

// The matrix's selection of `values` (/api/matrix's stack and stacks parameters).
absl::StatusOr<StackSelection> MatrixSelectionOf(const Values& values) {
  absl::StatusOr<Params> params =
      Params::Parse("/api/matrix", values, Allowed({"stack", "stacks"}));
  EXPECT_TRUE(params.ok()) << params.status();
  return ToMatrixSelection(*params);
}

TEST(ParamsTest, MatrixStacksNameStacksSideBySideWithinBounds) {
  absl::StatusOr<StackSelection> named = MatrixSelectionOf({{"stacks", "default,t5"}});
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(named->choice, StackSelection::Choice::kNamed);
  EXPECT_EQ(named->named, (std::vector<std::string>{"default", "t5"}));
  absl::StatusOr<StackSelection> newest = MatrixSelectionOf({});
  ASSERT_TRUE(newest.ok());
  EXPECT_EQ(newest->choice, StackSelection::Choice::kNewest);

  EXPECT_EQ(MatrixSelectionOf({{"stack", "all"}, {"stacks", "default"}}).status().message(),
            "parameters 'stack' and 'stacks' cannot both be given");
  EXPECT_EQ(MatrixSelectionOf({{"stacks", "a,b,c,d,e,f,g,h,i"}}).status().message(),
            "parameter 'stacks': at most 8 stacks side by side");
  EXPECT_EQ(MatrixSelectionOf({{"stacks", "default,default"}}).status().message(),
            "parameter 'stacks': default given twice");
  EXPECT_THAT(std::string(MatrixSelectionOf({{"stacks", "../x"}}).status().message()),
              HasSubstr("parameter 'stacks': '../x' is not a stack name"));
  EXPECT_THAT(std::string(MatrixSelectionOf({{"stack", "nope=1"}}).status().message()),
              HasSubstr("parameter 'stack': "));
}

}  // namespace
}  // namespace compatlab
