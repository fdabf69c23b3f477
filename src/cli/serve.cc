#include "cli/serve.h"

#include <cstdio>

#include "cli/common.h"
#include "query/error_kb.h"
#include "server/serve.h"
#include "util/fs.h"

namespace compatlab {

int RunServe(const ServeFlags& flags) {
  ServeOptions options;
  options.host = flags.host;
  options.port = flags.port;
  ServerOptions& server = options.server;
  server.db = flags.db;
  server.web_dir = ProjectHome() / "web";
  server.vendor_dir = ProjectHome() / "node_modules" / "chart.js" / "dist";
  server.kb_path = DefaultKnowledgeBasePath();
  server.threads = flags.threads;
  server.limits = flags.limits;
  server.probe = ResolveProbeEnv(flags.python);
  server.targets_dir = ProjectHome() / "targets";
  if (!std::filesystem::is_directory(server.vendor_dir)) {
    Warn(server.vendor_dir.string() +
         " is missing (run `make web-deps`): the dashboard has no plots");
  }
  absl::Status served = ServeUntilSignal(options, [&flags](const Server& s) {
    if (!s.loopback()) {
      Warn(flags.host +
           " is not a loopback address: every machine that reaches this one can read the store");
    }
    std::fprintf(stderr, "compatlab: serving %s (%lld runs) on http://%s:%d/\n", flags.db.c_str(),
                 static_cast<long long>(s.runs()), flags.host.c_str(), s.port());
  });
  if (!served.ok()) return Fail(ExitCodeOf(served), served);
  return kExitOk;
}

}  // namespace compatlab
