#include "server/server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <optional>

#include "fmt/format.h"
#include "httplib.h"
#include "query/error_kb.h"
#include "server/responses.h"
#include "server/routes.h"
#include "server/run_index.h"
#include "server/store_pool.h"
#include "sqlite3.h"

namespace compatlab {

class HttpServer : public httplib::Server {};

namespace {

namespace fs = std::filesystem;

// The response headers of every answer, static files included.
httplib::Headers SecurityHeaders() {
  return {
      {"Content-Security-Policy",
       "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"},
      {"X-Content-Type-Options", "nosniff"},
      {"Referrer-Policy", "no-referrer"},
      {"X-Frame-Options", "DENY"},
  };
}

}  // namespace

struct Server::Impl {
  explicit Impl(const ServerOptions& opts) : options(opts), pool(opts.db) {}

  ServerOptions options;
  RunIndex index;
  StorePool pool;
  std::optional<ErrorKnowledgeBase> kb;
  std::unique_ptr<ApiRoutes> routes;
  HttpServer http;
  std::atomic<int64_t> last_refresh_ns{0};
  std::atomic<bool> refreshing{false};

  // Indexes the runs stored since the last look, at most once per interval.
  void MaybeRefresh() {
    const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
    const int64_t interval = static_cast<int64_t>(options.refresh_interval_s * 1e9);
    if (now - last_refresh_ns.load() < interval) return;
    if (refreshing.exchange(true)) return;  // another thread is at it
    if (absl::StatusOr<StorePool::Lease> store = pool.Borrow(); store.ok()) {
      if (absl::Status s = index.Refresh(**store); !s.ok()) {
        fprintf(stderr, "compatlab: warning: cannot read new runs: %s\n",
                std::string(s.message()).c_str());
      }
    }
    last_refresh_ns.store(now);
    refreshing.store(false);
  }
};

absl::StatusOr<std::unique_ptr<Server>> Server::Open(const ServerOptions& options) {
  // Readers map the store instead of copying its pages through read(2). Takes
  // effect only before SQLite's first use in the process (else it is refused,
  // harmlessly).
  constexpr sqlite3_int64 kMmapBytes = sqlite3_int64{1} << 32;
  sqlite3_config(SQLITE_CONFIG_MMAP_SIZE, kMmapBytes, kMmapBytes);
  auto impl = std::make_unique<Impl>(options);
  {
    absl::StatusOr<StorePool::Lease> store = impl->pool.Borrow();
    if (!store.ok()) return store.status();
    if (absl::Status s = impl->index.Refresh(**store); !s.ok()) return s;
  }
  impl->last_refresh_ns = std::chrono::steady_clock::now().time_since_epoch().count();
  if (!fs::is_directory(options.web_dir)) {
    return absl::NotFoundError(fmt::format("{}: no web page folder", options.web_dir.string()));
  }
  std::string kb_origin;
  if (absl::StatusOr<ErrorKnowledgeBase> kb = ErrorKnowledgeBase::Load(options.kb_path); kb.ok()) {
    impl->kb = *std::move(kb);
    kb_origin = options.kb_path.string();
  }
  impl->routes = std::make_unique<ApiRoutes>(impl->options, impl->index, impl->pool,
                                             impl->kb ? &*impl->kb : nullptr, kb_origin);
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  Impl& i = *impl_;
  httplib::Server& http = i.http;
  const int threads = std::max(2, i.options.threads);
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http.set_keep_alive_max_count(10000);
  http.set_tcp_nodelay(true);  // headers and body go out in two writes: no Nagle delay
  http.set_payload_max_length(64 * 1024);
  http.set_default_headers(SecurityHeaders());
  http.set_mount_point("/", i.options.web_dir.string());
  if (!i.options.vendor_dir.empty()) http.set_mount_point("/vendor", i.options.vendor_dir.string());
  i.routes->Register(http, [&i] { i.MaybeRefresh(); });
  // Unknown routes, other methods, and failures inside a handler: a JSON error.
  httplib::Server::HandlerWithResponse json_errors = [](const httplib::Request& req,
                                                        httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string message = res.status == 404 ? "no such page: " + req.path.substr(0, 200)
                                            : fmt::format("HTTP status {}", res.status);
    SendError(res, {res.status, message});
    return httplib::Server::HandlerResponse::Handled;
  };
  http.set_error_handler(json_errors);
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr error) {
        std::string message = "internal error";
        try {
          std::rethrow_exception(error);
        } catch (const std::exception& e) {
          message = std::string("internal error: ") + e.what();
        } catch (...) {
        }
        SendError(res, {500, message});
      });
}

Server::~Server() { Stop(); }

absl::Status Server::Bind(const std::string& host, int port) {
  if (port == 0) {
    port_ = impl_->http.bind_to_any_port(host);
    if (port_ < 0) port_ = 0;
  } else if (impl_->http.bind_to_port(host, port)) {
    port_ = port;
  }
  if (port_ == 0) {
    return absl::UnavailableError(fmt::format("cannot listen on {}:{}", host, port));
  }
  return absl::OkStatus();
}

absl::Status Server::Serve() {
  if (!impl_->http.listen_after_bind()) {
    return absl::UnavailableError(
        fmt::format("the server on port {} stopped with an error", port_));
  }
  return absl::OkStatus();
}

void Server::Stop() { impl_->http.stop(); }

int64_t Server::runs() const { return impl_->index.size(); }

}  // namespace compatlab
