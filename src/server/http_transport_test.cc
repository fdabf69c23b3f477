#include "server/http_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace compatlab {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using Clock = std::chrono::steady_clock;

// A client socket to 127.0.0.1:port, closed at the end of its scope.
class RawClient {
 public:
  explicit RawClient(int port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawClient() { close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }
  bool Send(std::string_view data) {
    return send(fd_, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
  }
  // What arrives within `wait`, until the peer closes or one whole answer
  // (header and Content-Length bytes) is in.
  std::string ReadAnswer(std::chrono::milliseconds wait = std::chrono::milliseconds(5000)) {
    std::string got;
    const auto until = Clock::now() + wait;
    while (Clock::now() < until) {
      if (Complete(got)) break;
      pollfd p{fd_, POLLIN, 0};
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
      if (poll(&p, 1, static_cast<int>(std::max<int64_t>(left, 1))) <= 0) break;
      char buf[4096];
      const ssize_t n = recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      got.append(buf, static_cast<size_t>(n));
    }
    return got;
  }
  // Whether the peer closed within `wait` (reading and dropping what comes).
  bool ClosedWithin(std::chrono::milliseconds wait) {
    ReadAnswer(wait);
    while (!closed_) {
      if (ReadAnswer(wait).empty() && !closed_) return false;
    }
    return true;
  }

 private:
  static bool Complete(const std::string& got) {
    const size_t end = got.find("\r\n\r\n");
    if (end == std::string::npos) return false;
    const size_t cl = got.find("Content-Length: ");
    if (cl == std::string::npos || cl > end) return true;
    const size_t length = std::stoul(got.substr(cl + 16));
    return got.size() >= end + 4 + length;
  }

  int fd_;
  bool connected_ = false;
  bool closed_ = false;
};

class HttpTransportTest : public ::testing::Test {
 protected:
  void Start() {
    transport_ = std::make_unique<HttpTransport>(
        limits_, 4,
        [](const HttpRequest& req, HttpResponse& res) {
          if (req.path == "/slow") std::this_thread::sleep_for(std::chrono::milliseconds(1500));
          res.set_content(req.method + " " + req.path + " " + std::to_string(req.body.size()),
                          "text/plain");
        },
        [](int status, const std::string& message, HttpResponse& res) {
          res.status = status;
          res.set_content("refused: " + message, "text/plain");
        });
    ASSERT_TRUE(transport_->Listen("127.0.0.1", 0).ok());
    serving_ = std::thread([this] { EXPECT_TRUE(transport_->Run().ok()); });
  }
  void TearDown() override {
    if (transport_) transport_->Stop();
    if (serving_.joinable()) serving_.join();
  }

  std::string Get(const std::string& path, std::string_view extra = "") {
    RawClient client(transport_->port());
    client.Send("GET " + path + " HTTP/1.1\r\nHost: x\r\n" + std::string(extra) + "\r\n");
    return client.ReadAnswer();
  }

  HttpLimits limits_;
  std::unique_ptr<HttpTransport> transport_;
  std::thread serving_;
};

TEST_F(HttpTransportTest, AnswersAndKeepsTheConnectionAlive) {
  Start();
  RawClient client(transport_->port());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client.Send("GET /a?x=1 HTTP/1.1\r\nHost: x\r\n\r\n"));
    const std::string answer = client.ReadAnswer();
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 200 OK\r\n"));
    EXPECT_THAT(answer, HasSubstr("Keep-Alive: timeout=5, max="));
    EXPECT_THAT(answer, HasSubstr("\r\n\r\nGET /a 0"));
  }
  EXPECT_EQ(transport_->open_connections(), 1);
}

TEST_F(HttpTransportTest, HeadSendsTheLengthButNoBody) {
  Start();
  RawClient client(transport_->port());
  client.Send("HEAD /abc HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const std::string answer = client.ReadAnswer();
  EXPECT_THAT(answer, HasSubstr("Content-Length: 11\r\n"));  // "HEAD /abc 0"
  EXPECT_THAT(answer, HasSubstr("Connection: close"));
  EXPECT_EQ(answer.substr(answer.find("\r\n\r\n") + 4), "");
}

TEST_F(HttpTransportTest, TheLastRequestOfAConnectionClosesIt) {
  limits_.keep_alive_requests = 2;
  Start();
  RawClient client(transport_->port());
  client.Send("GET /1 HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(client.ReadAnswer(), HasSubstr("max=1"));
  client.Send("GET /2 HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(client.ReadAnswer(), HasSubstr("Connection: close"));
  EXPECT_TRUE(client.ClosedWithin(std::chrono::milliseconds(2000)));
}

TEST_F(HttpTransportTest, OversizedAndMalformedRequestsAreRefused) {
  limits_.max_header_bytes = 1024;
  limits_.max_body_bytes = 10;
  Start();
  EXPECT_THAT(Get("/", "X-Big: " + std::string(2000, 'a') + "\r\n"),
              StartsWith("HTTP/1.1 431 Request Header Fields Too Large"));
  {
    RawClient client(transport_->port());
    client.Send("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n");
    const std::string answer = client.ReadAnswer();
    EXPECT_THAT(answer, StartsWith("HTTP/1.1 413 Payload Too Large"));
    EXPECT_THAT(answer, HasSubstr("refused: the request body is larger than 10 bytes"));
  }
  {
    RawClient client(transport_->port());
    client.Send("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789");
    EXPECT_THAT(client.ReadAnswer(), HasSubstr("POST /p 10"));
  }
  {
    RawClient client(transport_->port());
    client.Send("GARBAGE\r\n\r\n");
    EXPECT_THAT(client.ReadAnswer(), StartsWith("HTTP/1.1 400 Bad Request"));
  }
  EXPECT_THAT(Get("http://elsewhere/"), StartsWith("HTTP/1.1 400 Bad Request"));
}

TEST_F(HttpTransportTest, ConnectionsPastTheLimitAre503) {
  limits_.max_connections = 2;
  Start();
  RawClient first(transport_->port()), second(transport_->port());
  first.Send("GET /1 HTTP/1.1\r\nHost: x\r\n\r\n");
  second.Send("GET /2 HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_THAT(first.ReadAnswer(), StartsWith("HTTP/1.1 200"));
  ASSERT_THAT(second.ReadAnswer(), StartsWith("HTTP/1.1 200"));
  const std::string third = Get("/3");
  EXPECT_THAT(third, StartsWith("HTTP/1.1 503 Service Unavailable"));
  EXPECT_THAT(third, HasSubstr("limit of 2 connections"));
  EXPECT_THAT(third, HasSubstr("Connection: close"));
  EXPECT_EQ(transport_->refused_connections(), 1);
}

TEST_F(HttpTransportTest, DeadlinesCloseSlowAndIdleConnections) {
  limits_.header_timeout_s = 0.3;
  limits_.body_timeout_s = 0.3;
  limits_.idle_timeout_s = 0.3;
  Start();
  RawClient trickle(transport_->port()), bodiless(transport_->port()), idle(transport_->port());
  trickle.Send("GET / HTTP/1.1\r\n");
  bodiless.Send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc");
  idle.Send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_THAT(idle.ReadAnswer(), StartsWith("HTTP/1.1 200"));
  const auto start = Clock::now();
  // The trickling client keeps sending, yet its header is late.
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    trickle.Send("X");
  }
  EXPECT_TRUE(trickle.ClosedWithin(std::chrono::milliseconds(1000)));
  EXPECT_TRUE(bodiless.ClosedWithin(std::chrono::milliseconds(1000)));
  EXPECT_TRUE(idle.ClosedWithin(std::chrono::milliseconds(1000)));
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(1500));
  EXPECT_EQ(transport_->open_connections(), 0);
}

TEST_F(HttpTransportTest, ASlowHandlerBlocksOnlyItsConnection) {
  Start();
  RawClient slow(transport_->port());
  slow.Send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto start = Clock::now();
  EXPECT_THAT(Get("/fast"), HasSubstr("GET /fast 0"));
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(1000));
  EXPECT_THAT(slow.ReadAnswer(), HasSubstr("GET /slow 0"));
}

TEST(HttpTransportListenTest, ATakenPortAndAnEmptyHostAreRefused) {
  auto handler = [](const HttpRequest&, HttpResponse&) {};
  auto refusal = [](int, const std::string&, HttpResponse&) {};
  HttpTransport first({}, 1, handler, refusal);
  ASSERT_TRUE(first.Listen("127.0.0.1", 0).ok());
  EXPECT_TRUE(first.loopback());
  HttpTransport second({}, 1, handler, refusal);
  absl::Status taken = second.Listen("127.0.0.1", first.port());
  EXPECT_EQ(taken.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(taken.message(), "cannot listen on 127.0.0.1:" + std::to_string(first.port()) +
                                 ": port " + std::to_string(first.port()) + " is in use");
  // Every interface overlaps the loopback listener too.
  EXPECT_EQ(second.Listen("0.0.0.0", first.port()).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(second.Listen("", 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(second.Run().code(), absl::StatusCode::kFailedPrecondition);
  HttpTransport any({}, 1, handler, refusal);
  ASSERT_TRUE(any.Listen("0.0.0.0", 0).ok());
  EXPECT_FALSE(any.loopback());
}

}  // namespace
}  // namespace compatlab
