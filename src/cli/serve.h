// `compatlab serve`: the store as an HTTP API and web page (src/server,
// doc/api.md), read-only.
#ifndef COMPATLAB_CLI_SERVE_H_
#define COMPATLAB_CLI_SERVE_H_

#include <cstdint>
#include <string>

namespace compatlab {

struct ServeFlags {
  std::string db = "compatlab.db";
  std::string host = "127.0.0.1";
  int port = 8080;
  int threads = 16;
  std::string python;  // interpreter that runs the probe's script generator
  // Deadlines, connection cap and sizes (server/http_limits.h; doc/api.md, "Limits").
  double header_timeout_s = 10;
  double body_timeout_s = 10;
  double idle_timeout_s = 5;
  double write_timeout_s = 30;
  int max_connections = 10000;
  int keep_alive_requests = 1000;
  int64_t max_header_bytes = 16 * 1024;
  int64_t max_body_bytes = 64 * 1024;
};

// Warns on stderr when the address is not a loopback one. Exit codes: 0
// stopped by SIGINT or SIGTERM; 1 the server failed; 2 bad input (a missing
// or unreadable store, a limit out of range, an empty host, an address that
// cannot be bound, a port in use).
int RunServe(const ServeFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_SERVE_H_
