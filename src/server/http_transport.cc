#include "server/http_transport.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <optional>

#include "fmt/format.h"

namespace compatlab {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using ErrorCode = boost::system::error_code;
using BeastResponse = http::response<http::string_body>;

constexpr size_t kFirstReadBytes = 1024;  // what the idle wait reads of a request at once
constexpr int kMaxRefusing = 256;         // connections being answered 503 at once
constexpr auto kLingerTime = std::chrono::seconds(1);         // draining a refused request
constexpr auto kAcceptRetry = std::chrono::milliseconds(50);  // after EMFILE and the like

std::chrono::steady_clock::duration TransportDeadline(double seconds) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(seconds));
}

// Whether `ec` says the request could not be parsed (as opposed to the
// connection failing or the client leaving).
bool IsMalformedRequest(const ErrorCode& ec) {
  if (ec.category() != ErrorCode(http::error::bad_target).category()) {
    return false;
  }
  return ec != http::error::end_of_stream && ec != http::error::partial_message &&
         ec != http::error::need_more && ec != http::error::need_buffer &&
         ec != http::error::buffer_overflow;
}

// Raises the soft open-file limit to the hard one: each connection is a file.
void RaiseOpenFileLimit(int max_connections) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
  constexpr rlim_t kSpareFiles = 64;  // the store, the web files, the listener
  if (limit.rlim_cur != RLIM_INFINITY &&
      limit.rlim_cur < static_cast<rlim_t>(max_connections) + kSpareFiles) {
    std::fprintf(stderr,
                 "compatlab: warning: the open-file limit (%llu) is below the connection limit "
                 "(%d): connections past it wait to be accepted\n",
                 static_cast<unsigned long long>(limit.rlim_cur), max_connections);
  }
}

// Asks the kernel's scheduler for short time slices on the calling thread,
// keeping its policy and nice value. Under EEVDF (Linux 6.12 and later) a
// thread that wakes with a shorter slice than the running one preempts it, so
// the event loop runs as soon as a client sends a request or a worker hands
// back an answer, instead of waiting out the slices of the workers running on
// its core (the default slice is 0.7 ms times 1 + log2 of the CPUs, at most
// 3 ms: 1.4 ms on a 2-core machine; with a few busy workers, tens of
// milliseconds). Earlier kernels ignore the request; failing is harmless.
void RequestShortSlices() {
  struct SchedAttr {  // the kernel's struct sched_attr (sched_setattr(2); no glibc wrapper)
    uint32_t size;
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime;
    uint64_t sched_deadline;
    uint64_t sched_period;
  };
  constexpr uint64_t kSliceNs = 100'000;  // the shortest slice the kernel grants
  SchedAttr attr{};
  if (syscall(SYS_sched_getattr, 0, &attr, sizeof(attr), 0) != 0) return;
  if (attr.sched_policy != SCHED_OTHER && attr.sched_policy != SCHED_BATCH) return;
  attr.sched_runtime = kSliceNs;
  attr.sched_flags = 0;
  syscall(SYS_sched_setattr, 0, &attr, 0);
}

}  // namespace

struct HttpTransport::Impl {
  Impl(const HttpLimits& l, int worker_threads, Handler h, Refusal r)
      : limits(l),
        handler(std::move(h)),
        refusal(std::move(r)),
        acceptor(io),
        accept_retry(io),
        workers(static_cast<size_t>(worker_threads)) {}

  void Accept();
  void OnAccept(const ErrorCode& ec, tcp::socket socket);

  const HttpLimits limits;
  const Handler handler;
  const Refusal refusal;
  // Declared before the event loop: connections still held by its handlers
  // count themselves out when it is destroyed.
  std::atomic<int64_t> open{0};
  std::atomic<int64_t> refused{0};
  int refusing = 0;  // event loop only
  net::io_context io{1};
  tcp::acceptor acceptor;
  net::steady_timer accept_retry;
  // Destroyed (stopped and joined) before the event loop its tasks post to.
  net::thread_pool workers;
  int port = 0;
  bool loopback = false;
};

namespace {

// One client connection: wait for a request (idle deadline), read its header
// (header deadline) and body (body deadline), hand it to a worker, write the
// answer (write deadline), and again while keep-alive allows. Lives as long
// as an operation of the event loop or a worker holds it.
class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  // `counted`: the connection counts among the open ones (not one being refused).
  HttpConnection(HttpTransport::Impl& transport, tcp::socket socket, bool counted)
      : transport_(transport),
        limits_(transport.limits),
        stream_(std::move(socket)),
        buffer_(static_cast<size_t>(limits_.max_header_bytes + limits_.max_body_bytes) + 4096),
        counted_(counted) {
    if (counted_) ++transport_.open;
  }
  ~HttpConnection() {
    if (counted_) {
      --transport_.open;
    } else {
      --transport_.refusing;
    }
  }

  void Start() { WaitForRequest(); }

  // Answers 503 at once and closes.
  void RefuseAtLimit() {
    Refuse(503, fmt::format("the server is at its limit of {} connections: try again later",
                            limits_.max_connections));
  }

 private:
  void WaitForRequest() {
    if (buffer_.size() > 0) return ReadHeader();  // the next request is here already
    stream_.expires_after(TransportDeadline(limits_.idle_timeout_s));
    stream_.async_read_some(buffer_.prepare(kFirstReadBytes),
                            [self = shared_from_this()](const ErrorCode& ec, size_t bytes) {
                              if (ec) return self->Close();
                              self->buffer_.commit(bytes);
                              self->ReadHeader();
                            });
  }

  void ReadHeader() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(limits_.max_header_bytes));
    parser_->body_limit(static_cast<std::uint64_t>(limits_.max_body_bytes));
    stream_.expires_after(TransportDeadline(limits_.header_timeout_s));
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](const ErrorCode& ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(const ErrorCode& ec) {
    if (ec) return OnReadError(ec);
    if (parser_->is_done()) return Dispatch();
    stream_.expires_after(TransportDeadline(limits_.body_timeout_s));
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](const ErrorCode& read_ec, size_t) {
                       if (read_ec) return self->OnReadError(read_ec);
                       self->Dispatch();
                     });
  }

  void OnReadError(const ErrorCode& ec) {
    if (ec == http::error::header_limit) {
      return Refuse(
          431, fmt::format("the request header is larger than {} bytes", limits_.max_header_bytes));
    }
    if (ec == http::error::body_limit) {
      return Refuse(
          413, fmt::format("the request body is larger than {} bytes", limits_.max_body_bytes));
    }
    if (IsMalformedRequest(ec)) return Refuse(400, "malformed request: " + ec.message());
    Close();  // a deadline passed, the client left, or the connection failed
  }

  // Hands the request to a worker; the answer comes back to the event loop.
  void Dispatch() {
    stream_.expires_never();  // a slow handler is not the client's fault
    ++requests_;
    http::request<http::string_body>& message = parser_->get();
    auto request = std::make_shared<HttpRequest>();
    request->method = std::string(message.method_string());
    const std::string_view target(message.target().data(), message.target().size());
    if (absl::Status parsed = ParseRequestTarget(target, *request); !parsed.ok()) {
      return Refuse(400, std::string(parsed.message()));
    }
    for (const auto& field : message) {
      request->headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    request->body = std::move(message.body());
    const bool keep_alive = parser_->keep_alive() && requests_ < limits_.keep_alive_requests;
    const unsigned version = message.version();
    parser_.reset();
    net::post(transport_.workers, [self = shared_from_this(), request, keep_alive, version] {
      HttpResponse response;
      try {
        self->transport_.handler(*request, response);
      } catch (const std::exception& e) {
        response = HttpResponse();
        self->transport_.refusal(500, std::string("internal error: ") + e.what(), response);
      }
      auto answer = self->ToBeast(response, version, request->method == "HEAD", keep_alive);
      net::post(self->stream_.get_executor(), [self, answer = std::move(answer), keep_alive] {
        self->Write(answer, keep_alive);
      });
    });
  }

  std::shared_ptr<BeastResponse> ToBeast(HttpResponse& response, unsigned version, bool head,
                                         bool keep_alive) const {
    auto answer = std::make_shared<BeastResponse>();
    answer->version(version);
    answer->result(static_cast<unsigned>(response.status));
    for (auto& [name, value] : response.headers) answer->insert(name, value);
    if (head) {
      answer->content_length(response.body.size());
    } else {
      answer->body() = std::move(response.body);
      answer->prepare_payload();
    }
    answer->keep_alive(keep_alive);
    if (keep_alive) {
      answer->set("Keep-Alive", fmt::format("timeout={}, max={}",
                                            static_cast<int64_t>(std::ceil(limits_.idle_timeout_s)),
                                            limits_.keep_alive_requests - requests_));
    }
    return answer;
  }

  // Answers `status` with the transport's refusal and closes.
  void Refuse(int status, const std::string& message) {
    parser_.reset();
    HttpResponse response;
    transport_.refusal(status, message, response);
    Write(ToBeast(response, 11, false, false), false);
  }

  void Write(std::shared_ptr<BeastResponse> answer, bool keep_alive) {
    answer_ = std::move(answer);
    stream_.expires_after(TransportDeadline(limits_.write_timeout_s));
    http::async_write(stream_, *answer_,
                      [self = shared_from_this(), keep_alive](const ErrorCode& ec, size_t) {
                        self->answer_.reset();
                        if (ec) return self->Close();
                        if (!keep_alive) return self->Linger();
                        self->WaitForRequest();
                      });
  }

  // Closes after an answer: stops sending, then reads what the client still
  // sends (for at most kLingerTime) so that the answer is not lost to a reset.
  void Linger() {
    ErrorCode ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(kLingerTime);
    Drain();
  }

  void Drain() {
    buffer_.clear();
    stream_.async_read_some(buffer_.prepare(kFirstReadBytes),
                            [self = shared_from_this()](const ErrorCode& ec, size_t) {
                              if (ec) return self->Close();
                              self->Drain();
                            });
  }

  void Close() {
    ErrorCode ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  HttpTransport::Impl& transport_;
  const HttpLimits& limits_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<BeastResponse> answer_;
  int64_t requests_ = 0;
  const bool counted_;
};

}  // namespace

void HttpTransport::Impl::Accept() {
  acceptor.async_accept(
      [this](const ErrorCode& ec, tcp::socket socket) { OnAccept(ec, std::move(socket)); });
}

void HttpTransport::Impl::OnAccept(const ErrorCode& ec, tcp::socket socket) {
  if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
  if (ec) {
    // Out of files or memory for a moment: the clients wait in the backlog.
    accept_retry.expires_after(kAcceptRetry);
    accept_retry.async_wait([this](const ErrorCode& wait_ec) {
      if (!wait_ec) Accept();
    });
    return;
  }
  ErrorCode ignored;
  socket.set_option(tcp::no_delay(true), ignored);  // answers go out in one or two writes
  if (open.load() < limits.max_connections) {
    std::make_shared<HttpConnection>(*this, std::move(socket), true)->Start();
  } else {
    ++refused;
    if (refusing < kMaxRefusing) {
      ++refusing;
      std::make_shared<HttpConnection>(*this, std::move(socket), false)->RefuseAtLimit();
    }  // else the socket closes here without an answer
  }
  Accept();
}

HttpTransport::HttpTransport(const HttpLimits& limits, int worker_threads, Handler handler,
                             Refusal refusal)
    : impl_(
          std::make_unique<Impl>(limits, worker_threads, std::move(handler), std::move(refusal))) {}

HttpTransport::~HttpTransport() {
  Stop();
  impl_->workers.stop();
  impl_->workers.join();
}

absl::Status HttpTransport::Listen(const std::string& host, int port) {
  const std::string address = fmt::format("{}:{}", host, port);
  if (host.empty()) {
    return absl::InvalidArgumentError(
        "the host is empty: give an address, e.g. 127.0.0.1 (this machine only) or 0.0.0.0");
  }
  ErrorCode ec;
  tcp::resolver resolver(impl_->io);
  tcp::resolver::results_type found =
      resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
  if (ec || found.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("cannot listen on {}: no such address ({})", address, ec.message()));
  }
  const tcp::endpoint endpoint = found.begin()->endpoint();
  tcp::acceptor& acceptor = impl_->acceptor;
  // SO_REUSEADDR only (a restart need not wait for TIME_WAIT); never
  // SO_REUSEPORT: Linux refuses a second listener on the same port.
  if (acceptor.open(endpoint.protocol(), ec);
      !ec && (acceptor.set_option(tcp::acceptor::reuse_address(true), ec), !ec)) {
    acceptor.bind(endpoint, ec);
  }
  if (ec == net::error::address_in_use) {
    acceptor.close();
    return absl::UnavailableError(
        fmt::format("cannot listen on {}: port {} is in use", address, port));
  }
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    ErrorCode ignored;
    acceptor.close(ignored);
    return absl::UnavailableError(fmt::format("cannot listen on {}: {}", address, ec.message()));
  }
  impl_->port = acceptor.local_endpoint().port();
  impl_->loopback = endpoint.address().is_loopback();
  RaiseOpenFileLimit(impl_->limits.max_connections);
  return absl::OkStatus();
}

int HttpTransport::port() const { return impl_->port; }

bool HttpTransport::loopback() const { return impl_->loopback; }

absl::Status HttpTransport::Run() {
  if (!impl_->acceptor.is_open()) {
    return absl::FailedPreconditionError("the server listens on no port");
  }
  impl_->Accept();
  RequestShortSlices();
  std::string failure;
  try {
    impl_->io.run();
  } catch (const std::exception& e) {
    failure = e.what();
  }
  impl_->workers.stop();
  impl_->workers.join();
  if (!failure.empty()) {
    return absl::InternalError(
        fmt::format("the server on port {} stopped: {}", impl_->port, failure));
  }
  return absl::OkStatus();
}

void HttpTransport::Stop() { impl_->io.stop(); }

int64_t HttpTransport::open_connections() const { return impl_->open.load(); }

int64_t HttpTransport::refused_connections() const { return impl_->refused.load(); }

}  // namespace compatlab
