#include "server/http_limits.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace compatlab {
namespace {

using ::testing::HasSubstr;

TEST(CheckHttpLimitsTest, TheDefaultsAreAccepted) { EXPECT_TRUE(CheckHttpLimits({}).ok()); }

TEST(CheckHttpLimitsTest, EachLimitOutOfRangeIsRefusedByName) {
  struct Case {
    void (*change)(HttpLimits&);
    const char* named;
  };
  const Case cases[] = {
      {[](HttpLimits& l) { l.header_timeout_s = 0; }, "header timeout"},
      {[](HttpLimits& l) { l.header_timeout_s = std::nan(""); }, "header timeout"},
      {[](HttpLimits& l) { l.body_timeout_s = -1; }, "body timeout"},
      {[](HttpLimits& l) { l.idle_timeout_s = 1e9; }, "idle timeout"},
      {[](HttpLimits& l) { l.write_timeout_s = 0; }, "write timeout"},
      {[](HttpLimits& l) { l.max_connections = 0; }, "connection limit"},
      {[](HttpLimits& l) { l.keep_alive_requests = 0; }, "requests per connection"},
      {[](HttpLimits& l) { l.max_header_bytes = 100; }, "header size limit"},
      {[](HttpLimits& l) { l.max_body_bytes = -1; }, "body size limit"},
  };
  for (const Case& c : cases) {
    HttpLimits limits;
    c.change(limits);
    absl::Status status = CheckHttpLimits(limits);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.named;
    EXPECT_THAT(status.message(), HasSubstr(c.named));
  }
}

TEST(CheckHttpLimitsTest, TheSmallestLimitsAreAccepted) {
  HttpLimits limits;
  limits.header_timeout_s = limits.body_timeout_s = limits.idle_timeout_s = 0.001;
  limits.write_timeout_s = 0.001;
  limits.max_connections = limits.keep_alive_requests = 1;
  limits.max_header_bytes = 1024;
  limits.max_body_bytes = 0;
  EXPECT_TRUE(CheckHttpLimits(limits).ok());
}

}  // namespace
}  // namespace compatlab
