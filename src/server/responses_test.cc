#include "server/responses.h"

#include "gtest/gtest.h"

namespace compatlab {
namespace {

TEST(ResponsesTest, StatusCodesMapToHttpStatuses) {
  EXPECT_EQ(HttpStatusOf(absl::InvalidArgumentError("x")), 400);
  EXPECT_EQ(HttpStatusOf(absl::FailedPreconditionError("harness test")), 400);
  EXPECT_EQ(HttpStatusOf(absl::NotFoundError("no run")), 404);
  EXPECT_EQ(HttpStatusOf(absl::UnavailableError("busy")), 503);
  EXPECT_EQ(HttpStatusOf(absl::UnimplementedError("no generator")), 501);
  EXPECT_EQ(HttpStatusOf(absl::InternalError("boom")), 500);
  EXPECT_EQ(HttpStatusOf(absl::DataLossError("damaged")), 500);
  const HttpError error = FromStatus(absl::NotFoundError("no run 'x'"));
  EXPECT_EQ(error.status, 404);
  EXPECT_EQ(error.message, "no run 'x'");
}

TEST(ResponsesTest, ErrorsAreJsonObjectsAndBadUtf8IsReplaced) {
  HttpResponse res;
  SendError(res, {400, "bad \xff byte"});
  EXPECT_EQ(res.status, 400);
  EXPECT_EQ(res.body, "{\"error\":\"bad \xEF\xBF\xBD byte\"}");
  EXPECT_EQ(res.get_header_value("Cache-Control"), "no-store");
  EXPECT_EQ(res.get_header_value("Content-Type"), "application/json");
}

}  // namespace
}  // namespace compatlab
