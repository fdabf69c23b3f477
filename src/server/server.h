// `compatlab serve`: the store as a JSON API over HTTP and the web page of
// web/, served by one process. Endpoints: doc/api.md (doc/openapi.yaml).
//
// The store is only read: every connection is opened OpenMode::kReadOnly,
// every query is parameterised, and the in-memory RunIndex picks up runs that
// a running sweep or an import adds. JSON exists only in this module, at the
// HTTP edge (routes.h, responses.h); the work is done on RunRecords by the
// store, query/, repro/ and RunIndex.
//
// Transport: http_transport.h (one event loop for every connection, the
// limits of ServerOptions::limits, handlers on a fixed pool of workers).
//
// Thread safety: Serve() blocks; Stop() may be called from any thread.
// Requests are handled by a pool of worker threads, each borrowing a store
// connection from a pool.
#ifndef COMPATLAB_SERVER_SERVER_H_
#define COMPATLAB_SERVER_SERVER_H_

#include <filesystem>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "plan/catalog.h"
#include "server/http_limits.h"

namespace compatlab {

struct ServerOptions {
  std::filesystem::path db;          // the store; must exist
  std::filesystem::path web_dir;     // static files of the page, served at /
  std::filesystem::path vendor_dir;  // the charting library's files, served at /vendor/
  std::filesystem::path kb_path;     // knowledge file; unreadable = no explanations
  // The reproduction scripts' generator (src/repro, what `compatlab repro`
  // runs): its interpreter and probe; python "" = /api/repro answers 501.
  ProbeEnv probe;
  std::filesystem::path targets_dir;  // target profiles the scripts carry (targets/)
  int threads = 16;                   // worker threads that run the handlers
  HttpLimits limits;                  // deadlines, connection cap, sizes (http_limits.h)
  double refresh_interval_s = 1.0;    // how often new runs are looked for
  // The compile store remote a compiled run's artifacts are pulled from (serve --cache-remote:
  // a directory or hub:ORG/NAME; doc/compile-cache.md): /api/run's cache_pull names it.
  // "": no pull command.
  std::string cache_remote;
};

class Server {
 public:
  // Opens the store read-only and indexes its runs. Errors: InvalidArgument
  // when a limit is out of range (CheckHttpLimits); those of Store::Open
  // (NotFound when the file does not exist: it is never created); NotFound
  // when web_dir does not exist.
  static absl::StatusOr<std::unique_ptr<Server>> Open(const ServerOptions& options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds the listening socket; port 0 picks a free port (see port()).
  // InvalidArgument for an empty or unknown host; Unavailable naming the
  // address when it cannot be bound, the port in use included (never shared
  // with another listener).
  absl::Status Bind(const std::string& host, int port);
  int port() const { return port_; }
  // Whether the bound address is a loopback one (only this machine reaches it).
  bool loopback() const;
  // Serves until Stop(). REQUIRES: Bind() succeeded.
  absl::Status Serve();
  void Stop();

  // Number of runs indexed.
  int64_t runs() const;
  // Client connections open now.
  int64_t connections() const;

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace compatlab

#endif  // COMPATLAB_SERVER_SERVER_H_
