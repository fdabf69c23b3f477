#include "server/http_message.h"

#include "gtest/gtest.h"

namespace compatlab {
namespace {

TEST(DecodeUrlTest, DecodesPercentEscapesAndPlusOnlyInQueries) {
  EXPECT_EQ(DecodeUrl("a%20b+c", false), "a b+c");
  EXPECT_EQ(DecodeUrl("a%20b+c", true), "a b c");
  EXPECT_EQ(DecodeUrl("%2e%2E%2f", false), "../");
  EXPECT_EQ(DecodeUrl("%u00e9", false), "\xC3\xA9");
  EXPECT_EQ(DecodeUrl("100%", false), "100%");
  EXPECT_EQ(DecodeUrl("%zz%4", false), "%zz%4");
}

TEST(ParseRequestTargetTest, SplitsPathAndDecodedPairs) {
  HttpRequest req;
  ASSERT_TRUE(ParseRequestTarget("/api/search?model=ll%20a&&status=pass&flag#frag", req).ok());
  EXPECT_EQ(req.target, "/api/search?model=ll%20a&&status=pass&flag");
  EXPECT_EQ(req.path, "/api/search");
  ASSERT_EQ(req.params.size(), 3u);
  EXPECT_EQ(req.params.find("model")->second, "ll a");
  EXPECT_EQ(req.params.find("status")->second, "pass");
  EXPECT_EQ(req.params.find("flag")->second, "");
}

TEST(ParseRequestTargetTest, SplitsAPairAtItsFirstEqualsSign) {
  HttpRequest req;
  ASSERT_TRUE(ParseRequestTarget("/api/diff?base=torch=2.13&head=s1", req).ok());
  EXPECT_EQ(req.params.find("base")->second, "torch=2.13");
  EXPECT_EQ(req.params.count("head"), 1u);
}

TEST(ParseRequestTargetTest, KeepsRepeatedNames) {
  HttpRequest req;
  ASSERT_TRUE(ParseRequestTarget("/x?a=1&a=1", req).ok());
  EXPECT_EQ(req.params.count("a"), 2u);
}

TEST(ParseRequestTargetTest, RefusesTargetsThatAreNoPathOrHoldTwoQuestionMarks) {
  HttpRequest req;
  EXPECT_EQ(ParseRequestTarget("http://host/x", req).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseRequestTarget("*", req).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseRequestTarget("/x?a=1?b=2", req).code(), absl::StatusCode::kInvalidArgument);
}

TEST(HttpMessageTest, HeadersAreFoundInAnyCase) {
  HttpRequest req;
  req.headers = {{"Accept-Encoding", "gzip"}, {"accept-encoding", "br"}};
  EXPECT_EQ(req.header("ACCEPT-ENCODING"), "gzip");
  EXPECT_EQ(req.header("Host"), "");

  HttpResponse res;
  res.set_header("Cache-Control", "no-store");
  res.set_header("cache-control", "max-age=1");
  res.add_default_header("CACHE-CONTROL", "ignored");
  ASSERT_EQ(res.headers.size(), 1u);
  EXPECT_EQ(res.get_header_value("Cache-Control"), "max-age=1");
  res.set_content("{}", "application/json");
  EXPECT_EQ(res.get_header_value("content-type"), "application/json");
  EXPECT_EQ(res.body, "{}");
}

TEST(HttpReasonTest, NamesTheStatusesTheServerSends) {
  EXPECT_EQ(HttpReason(404), "Not Found");
  EXPECT_EQ(HttpReason(431), "Request Header Fields Too Large");
  EXPECT_EQ(HttpReason(503), "Service Unavailable");
  EXPECT_EQ(HttpReason(299), "Unknown");
}

}  // namespace
}  // namespace compatlab
