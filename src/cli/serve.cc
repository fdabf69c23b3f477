#include "cli/serve.h"

#include <cstdio>

#include "cache/remote.h"
#include "cli/common.h"
#include "query/error_kb.h"
#include "server/serve.h"
#include "util/fs.h"

namespace compatlab {
namespace {

// A `serve` limit flag, its default shown in --help (the server checks its range).
template <typename T>
void AddServeLimit(CLI::App& cmd, const std::string& name, T& value, const std::string& help) {
  cmd.add_option(name, value, help)->capture_default_str();
}

// The transport's limits (doc/api.md, "Connections and limits"), checked by the server.
void AddServeLimits(CLI::App& cmd, HttpLimits& limits) {
  AddServeLimit(cmd, "--header-timeout", limits.header_timeout_s,
                "seconds from a request's first byte to the end of its header");
  AddServeLimit(cmd, "--body-timeout", limits.body_timeout_s,
                "seconds from the end of a request's header to the end of its body");
  AddServeLimit(cmd, "--idle-timeout", limits.idle_timeout_s,
                "seconds a connection may wait for its next request");
  AddServeLimit(cmd, "--write-timeout", limits.write_timeout_s,
                "seconds a client may take to read an answer");
  AddServeLimit(cmd, "--max-connections", limits.max_connections,
                "connections open at once; the next one is answered 503");
  AddServeLimit(cmd, "--keep-alive-requests", limits.keep_alive_requests,
                "requests answered on one connection before it is closed");
  AddServeLimit(cmd, "--max-header-bytes", limits.max_header_bytes,
                "largest request line and header (431 past it)");
  AddServeLimit(cmd, "--max-body-bytes", limits.max_body_bytes,
                "largest request body (413 past it)");
}

}  // namespace

CLI::App* AddServeCommand(CLI::App& app, ServeFlags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "serve", "Serve the store read-only: a JSON API and a web page (doc/api.md)");
  cmd->add_option("--db", flags.db, "SQLite store")->capture_default_str();
  cmd->add_option("--host", flags.host, "address to listen on")->capture_default_str();
  cmd->add_option("--port", flags.port, "port (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd->add_option("--threads", flags.threads, "worker threads that answer requests")
      ->check(CLI::Range(2, 256))
      ->capture_default_str();
  AddServeLimits(*cmd, flags.limits);
  cmd->add_option("--python", flags.python, "interpreter that runs the probe");
  cmd->add_option("--cache-remote", flags.cache_remote,
                  "compile store remote (a directory or hub:ORG/NAME) whose pull command the "
                  "page and /api/run show for a compiled run (doc/compile-cache.md)");
  return cmd;
}

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
  if (!flags.cache_remote.empty()) {
    absl::StatusOr<cache::Remote> remote = cache::ParseRemote(flags.cache_remote);
    if (!remote.ok())
      return Fail(kExitBadInput, "--cache-remote: " + std::string(remote.status().message()));
    server.cache_remote = cache::RemoteName(*remote);
  }
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
