// `compatlab serve` as a use case: a Server on an address until SIGINT or
// SIGTERM.
#ifndef COMPATLAB_SERVER_SERVE_H_
#define COMPATLAB_SERVER_SERVE_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "server/server.h"

namespace compatlab {

struct ServeOptions {
  ServerOptions server;
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port
};

// Opens the server, binds options.host:options.port, calls `listening` with
// the bound server, and serves until the process gets SIGINT or SIGTERM
// (then OK). The signals are taken by a thread of its own: SIGINT and SIGTERM
// stay blocked in the calling thread and every thread started from it (the
// request threads never see them). Errors: FailedPrecondition when the server
// cannot open (the store, the web folder) or bind (the message says which);
// Internal when serving fails.
absl::Status ServeUntilSignal(const ServeOptions& options,
                              const std::function<void(const Server&)>& listening);

}  // namespace compatlab

#endif  // COMPATLAB_SERVER_SERVE_H_
