// What one client may cost the server (doc/api.md, "Limits"): deadlines for
// each phase of a request, the number of open connections, requests per
// connection, and request sizes. `compatlab serve` takes each as a flag.
#ifndef COMPATLAB_SERVER_HTTP_LIMITS_H_
#define COMPATLAB_SERVER_HTTP_LIMITS_H_

#include <cstdint>

#include "absl/status/status.h"

namespace compatlab {

struct HttpLimits {
  // From a request's first byte until its header is complete, however the
  // bytes trickle in. Past it the connection is closed.
  double header_timeout_s = 10;
  // From the end of a request's header until its body is complete.
  double body_timeout_s = 10;
  // How long a connection may wait for its next request (a new connection
  // for its first byte); then it is closed.
  double idle_timeout_s = 5;
  // How long the client may take to read an answer.
  double write_timeout_s = 30;
  // Connections open at once; one more is answered 503 and closed.
  int max_connections = 10000;
  // Requests answered on one connection before it is closed.
  int keep_alive_requests = 1000;
  // A request's line and header fields together (431 past it).
  int64_t max_header_bytes = 16 * 1024;
  // A request's body (413 past it).
  int64_t max_body_bytes = 64 * 1024;
};

// OK when every limit is in its range (timeouts 0.001 s to 1 day, at least
// one connection and one request per connection, header at least 1 KiB, body
// at most 1 GiB), else InvalidArgument naming the limit and its range.
absl::Status CheckHttpLimits(const HttpLimits& limits);

}  // namespace compatlab

#endif  // COMPATLAB_SERVER_HTTP_LIMITS_H_
