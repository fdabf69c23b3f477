#include "server/serve.h"

#include <pthread.h>
#include <signal.h>

#include <thread>

#include "util/status.h"

namespace compatlab {

absl::Status ServeUntilSignal(const ServeOptions& options,
                              const std::function<void(const Server&)>& listening) {
  // Signals are taken by a thread of their own: the request threads never see them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<std::unique_ptr<Server>> server = Server::Open(options.server);
  if (!server.ok()) return Recode(server.status(), absl::StatusCode::kFailedPrecondition);
  if (absl::Status bound = (*server)->Bind(options.host, options.port); !bound.ok()) {
    return Recode(bound, absl::StatusCode::kFailedPrecondition);
  }
  if (listening) listening(**server);
  std::thread waiter([&signals, &server] {
    int signal = 0;
    sigwait(&signals, &signal);
    (*server)->Stop();
  });
  absl::Status served = (*server)->Serve();
  // Wake the waiter if the server stopped by itself.
  if (!served.ok()) pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  return Recode(served, absl::StatusCode::kInternal);
}

}  // namespace compatlab
