#include "server/serve.h"

#include <signal.h>

#include <atomic>
#include <fstream>
#include <future>

#include "gtest/gtest.h"
#include "httplib.h"
#include "store/store.h"
#include "store/testing.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;

class ServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.server.db = temp_.path() / "compatlab.db";
    options_.server.web_dir = temp_.path() / "web";
    fs::create_directories(options_.server.web_dir);
    std::ofstream(options_.server.web_dir / "index.html") << "<!doctype html>";
    options_.port = 0;
  }

  void CreateStore() {
    ASSERT_TRUE(Store::Open(options_.server.db, OpenMode::kReadWriteCreate).ok());
  }

  test::ScopedTempDir temp_;
  ServeOptions options_;
};

TEST_F(ServeTest, ServesUntilSigterm) {
  CreateStore();
  // Blocked here too, so that the signal sent to the process below reaches
  // only the server's waiting thread.
  sigset_t signals, old;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, &old);
  std::promise<int> port;
  std::future<absl::Status> served = std::async(std::launch::async, [&] {
    return ServeUntilSignal(options_, [&port](const Server& s) { port.set_value(s.port()); });
  });
  const int bound = port.get_future().get();
  ASSERT_GT(bound, 0);
  httplib::Client client("127.0.0.1", bound);
  httplib::Result health = client.Get("/api/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  kill(getpid(), SIGTERM);
  EXPECT_TRUE(served.get().ok());
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

TEST_F(ServeTest, MissingStoreAndUnbindableAddressAreFailedPreconditions) {
  bool listened = false;
  auto listening = [&listened](const Server&) { listened = true; };
  absl::Status missing = ServeUntilSignal(options_, listening);
  EXPECT_EQ(missing.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(missing.message().find("no such store"), std::string::npos) << missing;
  EXPECT_FALSE(fs::exists(options_.server.db));

  CreateStore();
  options_.host = "256.0.0.1";
  absl::Status unbound = ServeUntilSignal(options_, listening);
  EXPECT_EQ(unbound.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(unbound.message().find("cannot listen on 256.0.0.1:0"), std::string::npos) << unbound;
  EXPECT_FALSE(listened);
}

}  // namespace
}  // namespace compatlab
