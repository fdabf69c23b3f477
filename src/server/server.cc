#include "server/server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <optional>
#include <set>
#include <vector>

#include "fmt/format.h"
#include "query/error_kb.h"
#include "server/compression.h"
#include "server/http_router.h"
#include "server/http_transport.h"
#include "server/responses.h"
#include "server/routes.h"
#include "server/run_index.h"
#include "server/static_files.h"
#include "server/store_pool.h"
#include "sqlite3.h"
#include "util/fs.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;

// The response headers of every answer, static files and refusals included
// (set where a handler has not set them).
void AddSecurityHeaders(HttpResponse& res) {
  res.add_default_header(
      "Content-Security-Policy",
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
      "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'");
  res.add_default_header("X-Content-Type-Options", "nosniff");
  res.add_default_header("Referrer-Policy", "no-referrer");
  res.add_default_header("X-Frame-Options", "DENY");
}

// HTTP/1.1's methods: others are malformed requests (400); these, where no
// route takes them, are 404.
bool IsKnownHttpMethod(const std::string& method) {
  static const std::set<std::string> kMethods = {"GET",     "HEAD",    "POST",  "PUT",  "DELETE",
                                                 "CONNECT", "OPTIONS", "TRACE", "PATCH"};
  return kMethods.contains(method);
}

}  // namespace

struct Server::Impl {
  explicit Impl(const ServerOptions& opts) : options(opts), pool(opts.db) {}

  ServerOptions options;
  RunIndex index;
  StorePool pool;
  std::optional<ErrorKnowledgeBase> kb;
  std::unique_ptr<ApiRoutes> routes;
  HttpRouter router;
  std::vector<StaticMount> mounts;
  std::unique_ptr<HttpTransport> http;
  std::atomic<int64_t> last_refresh_ns{0};
  std::atomic<bool> refreshing{false};

  // Indexes the runs stored since the last look and notes the op tables (the answers kept
  // by the routes follow them), at most once per interval.
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
      if (absl::Status s = routes->NoteStoreChanges(**store); !s.ok()) {
        fprintf(stderr, "compatlab: warning: cannot read the op tables: %s\n",
                std::string(s.message()).c_str());
      }
    }
    last_refresh_ns.store(now);
    refreshing.store(false);
  }

  // A request, on a worker thread: static files, then the API's routes, else
  // 404; errors as JSON, the security headers, gzip where the client takes it.
  void Handle(const HttpRequest& req, HttpResponse& res) {
    try {
      Answer(req, res);
    } catch (const std::exception& e) {
      res = HttpResponse();
      SendError(res, {500, std::string("internal error: ") + e.what()});
    } catch (...) {
      res = HttpResponse();
      SendError(res, {500, "internal error"});
    }
    // Unknown routes and methods, and failures without a body of their own: a JSON error.
    if (res.status >= 400 && res.body.empty()) {
      SendError(res, {res.status, res.status == 404 ? "no such page: " + req.path.substr(0, 200)
                                                    : fmt::format("HTTP status {}", res.status)});
    }
    if (!res.body.empty() && !res.has_header("Content-Type")) {
      res.set_header("Content-Type", "text/plain");
    }
    AddSecurityHeaders(res);
    GzipIfAccepted(req, res);
  }

  void Answer(const HttpRequest& req, HttpResponse& res) {
    if (req.method == "GET" || req.method == "HEAD") {
      if (std::optional<fs::path> file = FindStaticFile(mounts, req.path)) {
        if (absl::StatusOr<std::string> data = ReadFile(*file); data.ok()) {
          res.status = 200;
          res.body = *std::move(data);
          if (std::string_view type = StaticContentType(*file); !type.empty()) {
            res.set_header("Content-Type", std::string(type));
          }
          return;
        }
      }
      if (const HttpRouter::Handler* handler = router.Find(req.path)) return (*handler)(req, res);
    } else if (!IsKnownHttpMethod(req.method)) {
      res.status = 400;
      return;
    }
    res.status = 404;
  }
};

absl::StatusOr<std::unique_ptr<Server>> Server::Open(const ServerOptions& options) {
  if (absl::Status limits = CheckHttpLimits(options.limits); !limits.ok()) return limits;
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
  {
    absl::StatusOr<StorePool::Lease> store = impl->pool.Borrow();
    if (!store.ok()) return store.status();
    if (absl::Status s = impl->routes->NoteStoreChanges(**store); !s.ok()) return s;
  }
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  Impl& i = *impl_;
  i.mounts.push_back({"/", i.options.web_dir});
  if (!i.options.vendor_dir.empty()) i.mounts.push_back({"/vendor/", i.options.vendor_dir});
  i.routes->Register(i.router, [&i] { i.MaybeRefresh(); });
  i.http = std::make_unique<HttpTransport>(
      i.options.limits, std::max(2, i.options.threads),
      [&i](const HttpRequest& req, HttpResponse& res) { i.Handle(req, res); },
      [](int status, const std::string& message, HttpResponse& res) {
        SendError(res, {status, message});
        if (status == 503) res.set_header("Retry-After", "1");
        AddSecurityHeaders(res);
      });
}

Server::~Server() { Stop(); }

absl::Status Server::Bind(const std::string& host, int port) {
  if (absl::Status listening = impl_->http->Listen(host, port); !listening.ok()) return listening;
  port_ = impl_->http->port();
  return absl::OkStatus();
}

bool Server::loopback() const { return impl_->http->loopback(); }

absl::Status Server::Serve() { return impl_->http->Run(); }

void Server::Stop() { impl_->http->Stop(); }

int64_t Server::runs() const { return impl_->index.size(); }

int64_t Server::connections() const { return impl_->http->open_connections(); }

}  // namespace compatlab
