// The HTTP/1.1 transport of `compatlab serve`: one event loop (Boost.Asio,
// epoll) holds every connection, reads requests with Boost.Beast's parser
// under the deadlines and sizes of HttpLimits, and hands each complete
// request to a fixed pool of worker threads; the worker's answer is written
// back by the event loop. An idle or slow connection costs a socket and a few
// KB, never a thread, and a slow handler blocks only its own connection.
//
// Refusals (doc/api.md, "Limits"): a connection past max_connections gets
// `refusal(503)` and is closed; a header past max_header_bytes 431, a body
// past max_body_bytes 413, a malformed request 400, each then closed; a
// header, body, idle or write deadline passed closes the connection without
// an answer. The n-th request of a connection (keep_alive_requests) is
// answered with "Connection: close".
//
// Boost's headers are included only by http_transport.cc.
//
// Thread safety: Run() blocks; Stop() and the counters may be called from any
// thread. `handler` runs on the worker threads, several at once; `refusal`
// runs on the event loop and must not block.
#ifndef COMPATLAB_SERVER_HTTP_TRANSPORT_H_
#define COMPATLAB_SERVER_HTTP_TRANSPORT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "server/http_limits.h"
#include "server/http_message.h"

namespace compatlab {

class HttpTransport {
 public:
  // Answers a request: fills `response` (its status, headers and body; the
  // transport adds Content-Length, Connection and Keep-Alive). For HEAD the
  // body is measured, not sent.
  using Handler = std::function<void(const HttpRequest& request, HttpResponse& response)>;
  // The answer the transport sends when it refuses a request itself: `status`
  // (400, 413, 431, 503) and a one-line `message`.
  using Refusal =
      std::function<void(int status, const std::string& message, HttpResponse& response)>;

  // REQUIRES: CheckHttpLimits(limits) is OK, worker_threads >= 1.
  HttpTransport(const HttpLimits& limits, int worker_threads, Handler handler, Refusal refusal);
  ~HttpTransport();
  HttpTransport(const HttpTransport&) = delete;
  HttpTransport& operator=(const HttpTransport&) = delete;

  // Listens on host:port (a numeric address or a name; the first address it
  // resolves to), without SO_REUSEPORT: a port another socket listens on is
  // refused. port 0 picks a free port (see port()). InvalidArgument for an
  // empty or unresolvable host; Unavailable naming host:port when the port
  // is in use or cannot be bound.
  absl::Status Listen(const std::string& host, int port);
  int port() const;
  // Whether the bound address is a loopback address (127.0.0.0/8, ::1).
  bool loopback() const;

  // Serves until Stop(): the event loop on the calling thread, the handlers
  // on the workers. REQUIRES: Listen() succeeded. Returns once every worker
  // has finished its request.
  absl::Status Run();
  void Stop();

  // Connections open now (those being refused not included), and those
  // refused at the connection limit since the start.
  int64_t open_connections() const;
  int64_t refused_connections() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace compatlab

#endif  // COMPATLAB_SERVER_HTTP_TRANSPORT_H_
