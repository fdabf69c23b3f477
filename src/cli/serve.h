// `compatlab serve`: the store as an HTTP API and web page (src/server,
// doc/api.md), read-only.
#ifndef COMPATLAB_CLI_SERVE_H_
#define COMPATLAB_CLI_SERVE_H_

#include <string>

#include "CLI/CLI.hpp"
#include "server/http_limits.h"

namespace compatlab {

struct ServeFlags {
  std::string db = "compatlab.db";
  std::string host = "127.0.0.1";
  int port = 8080;
  int threads = 16;
  std::string python;        // interpreter that runs the probe's script generator
  std::string cache_remote;  // --cache-remote: the compile store remote /api/run's pull names
  // Deadlines, connection cap and sizes (doc/api.md, "Connections and limits").
  HttpLimits limits;
};

// Adds the `serve` subcommand to `app`; its options fill `flags`.
CLI::App* AddServeCommand(CLI::App& app, ServeFlags& flags);

// Warns on stderr when the address is not a loopback one. Exit codes: 0
// stopped by SIGINT or SIGTERM; 1 the server failed; 2 bad input (a missing
// or unreadable store, a limit out of range, an empty host, an address that
// cannot be bound, a port in use).
int RunServe(const ServeFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_SERVE_H_
