#include "server/http_limits.h"

#include <string_view>

#include "fmt/format.h"

namespace compatlab {
namespace {

constexpr double kMinTimeoutS = 0.001;
constexpr double kMaxTimeoutS = 86400;

absl::Status CheckTimeoutLimit(std::string_view name, double seconds) {
  // Also refuses NaN: every comparison with it is false.
  if (!(seconds >= kMinTimeoutS && seconds <= kMaxTimeoutS)) {
    return absl::InvalidArgumentError(
        fmt::format("{} must be between {} and {} seconds", name, kMinTimeoutS, kMaxTimeoutS));
  }
  return absl::OkStatus();
}

absl::Status CheckCountLimit(std::string_view name, int64_t value, int64_t min, int64_t max) {
  if (value < min || value > max) {
    return absl::InvalidArgumentError(fmt::format("{} must be between {} and {}", name, min, max));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckHttpLimits(const HttpLimits& limits) {
  for (const absl::Status& status : {
           CheckTimeoutLimit("the header timeout", limits.header_timeout_s),
           CheckTimeoutLimit("the body timeout", limits.body_timeout_s),
           CheckTimeoutLimit("the idle timeout", limits.idle_timeout_s),
           CheckTimeoutLimit("the write timeout", limits.write_timeout_s),
           CheckCountLimit("the connection limit", limits.max_connections, 1, 1000000),
           CheckCountLimit("the requests per connection", limits.keep_alive_requests, 1,
                           1000000000),
           CheckCountLimit("the header size limit", limits.max_header_bytes, 1024, 1 << 30),
           CheckCountLimit("the body size limit", limits.max_body_bytes, 0, 1 << 30),
       }) {
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace compatlab
