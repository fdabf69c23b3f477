#include "cli/serve.h"

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <thread>

#include "cli/common.h"
#include "cli/repro.h"
#include "server/server.h"
#include "util/fs.h"

namespace compatlab {

int RunServe(const ServeFlags& flags) {
  ServerOptions options;
  options.db = flags.db;
  options.web_dir = ProjectHome() / "web";
  options.vendor_dir = ProjectHome() / "node_modules" / "chart.js" / "dist";
  options.kb_path = DefaultKnowledgeBasePath();
  options.threads = flags.threads;
  const ProbeEnv env = ResolveProbeEnv(flags.python);
  options.repro = [env](const RunRecord& run, const KnownError* known) {
    return GenerateReproScript(run, known, env);
  };
  if (!std::filesystem::is_directory(options.vendor_dir)) {
    std::fprintf(stderr,
                 "compatlab: warning: %s is missing (run `make web-deps`): the dashboard has no "
                 "plots\n",
                 options.vendor_dir.c_str());
  }
  // Signals are taken by a thread of their own: the request threads never see them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<std::unique_ptr<Server>> server = Server::Open(options);
  if (!server.ok()) return Fail(kExitBadInput, server.status());
  if (absl::Status bound = (*server)->Bind(flags.host, flags.port); !bound.ok()) {
    return Fail(kExitBadInput, bound);
  }
  std::fprintf(stderr, "compatlab: serving %s (%lld runs) on http://%s:%d/\n", flags.db.c_str(),
               static_cast<long long>((*server)->runs()), flags.host.c_str(), (*server)->port());
  std::thread waiter([&signals, &server] {
    int signal = 0;
    sigwait(&signals, &signal);
    (*server)->Stop();
  });
  absl::Status served = (*server)->Serve();
  // Wake the waiter if the server stopped by itself.
  if (!served.ok()) pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  if (!served.ok()) return Fail(kExitFailure, served);
  return kExitOk;
}

}  // namespace compatlab
