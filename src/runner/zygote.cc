#include "runner/zygote.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "runner/protocol.h"
#include "util/subprocess.h"
#include "util/time.h"

namespace compatlab {
namespace {

using nlohmann::json;

constexpr size_t kMaxMessage = 1 << 20;

}  // namespace

ZygoteLauncher::ZygoteLauncher(ZygoteOptions options, Guardian* guardian)
    : options_(std::move(options)), guardian_(guardian) {}

ZygoteLauncher::~ZygoteLauncher() { Stop(false); }

absl::Status ZygoteLauncher::Start() {
  if (pid_ > 0) return absl::OkStatus();
  return Spawn();
}

absl::Status ZygoteLauncher::Spawn() {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    return absl::InternalError(absl::StrCat("socketpair: ", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  const std::string log = options_.log_path.empty() ? "/dev/null" : options_.log_path;
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_adddup2(&actions, sv[1], 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty, defaults;
  sigemptyset(&empty);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGCHLD, SIGHUP}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);

  std::map<std::string, std::string> env = options_.env;
  const char* old_path = std::getenv("PYTHONPATH");
  env["PYTHONPATH"] =
      options_.probe_dir + (old_path && *old_path ? absl::StrCat(":", old_path) : "");
  env["COMPATLAB_CONTROL_FD"] = "3";
  env["COMPATLAB_SUPERVISOR_PID"] = std::to_string(getpid());
  env["OPENBLAS_NUM_THREADS"] = "1";
  // The zygote never reaches the Hub; a test child of a hub: model may, for its own files,
  // unless the sweep itself is offline (doc/model-factory.md, "Hub models").
  const char* offline = std::getenv("HF_HUB_OFFLINE");
  const std::string hub_offline = offline == nullptr ? "" : absl::AsciiStrToLower(offline);
  env["COMPATLAB_HUB_OFFLINE"] =
      hub_offline == "1" || hub_offline == "true" || hub_offline == "yes" || hub_offline == "on"
          ? "1"
          : "0";
  env["HF_HUB_OFFLINE"] = "1";
  env["TRANSFORMERS_OFFLINE"] = "1";
  env["TOKENIZERS_PARALLELISM"] = "false";
  env["PYTHONDONTWRITEBYTECODE"] = "1";
  std::vector<std::string> env_storage;
  std::vector<char*> envp = BuildEnv(env, env_storage);
  std::vector<std::string> argv_s = {options_.python, "-m", "compatlab_probe.worker.zygote"};
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawn(&pid, options_.python.c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(sv[1]);
  if (rc != 0) {
    close(sv[0]);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot start the zygote with ", options_.python, ": ", std::strerror(rc)));
  }
  pid_ = pid;
  control_fd_ = sv[0];
  if (guardian_ != nullptr) guardian_->TrackPid(pid_);
  if (starts_++ > 0) ++restarts_;
  return Handshake();
}

absl::Status ZygoteLauncher::Handshake() {
  json preload = {{"type", "preload"}, {"model_types", options_.preload}};
  if (!options_.preload_modules.empty()) preload["modules"] = options_.preload_modules;
  if (!options_.compile_seed_dir.empty()) {
    preload["compile_calibration"] = {{"seed_dir", options_.compile_seed_dir}};
  }
  std::string msg = preload.dump();
  if (send(control_fd_, msg.data(), msg.size(), MSG_NOSIGNAL) < 0) {
    Stop(true);
    return absl::UnavailableError("the zygote died at start-up (see its log)");
  }
  absl::StatusOr<std::string> reply = Receive(options_.start_timeout_s);
  if (!reply.ok()) {
    Stop(true);
    return absl::UnavailableError(
        absl::StrCat("the zygote did not become ready: ", reply.status().message(),
                     options_.log_path.empty() ? "" : " (log: ", options_.log_path,
                     options_.log_path.empty() ? "" : ")"));
  }
  json ready = json::parse(*reply, nullptr, false);
  if (ready.is_discarded() || ready.value("type", "") != "ready") {
    Stop(true);
    return absl::InternalError(absl::StrCat("the zygote sent a bad ready message: ", *reply));
  }
  stack_.python_version = ready.value("python_version", "");
  stack_.torch_version = ready.value("torch_version", "");
  stack_.transformers_version = ready.value("transformers_version", "");
  compiler_startup_s_.reset();
  compiler_startup_error_.clear();
  compiler_startup_phases_.clear();
  if (!options_.compile_seed_dir.empty()) {
    if (ready.contains("compiler_startup_s") && ready["compiler_startup_s"].is_number()) {
      compiler_startup_s_ = ready["compiler_startup_s"].get<double>();
    } else {
      compiler_startup_error_ = ready.value("compiler_startup_error", "no figure in the answer");
    }
    if (ready.contains("compiler_startup_phases") && ready["compiler_startup_phases"].is_object()) {
      for (const auto& [k, v] : ready["compiler_startup_phases"].items()) {
        if (v.is_number()) compiler_startup_phases_[k] = v.get<double>();
      }
    }
  }
  import_failures_.clear();
  if (ready.contains("import_failures") && ready["import_failures"].is_object()) {
    for (const auto& [k, v] : ready["import_failures"].items()) {
      import_failures_[k] = v.is_string() ? v.get<std::string>() : v.dump();
    }
  }
  return absl::OkStatus();
}

void ZygoteLauncher::Stop(bool kill_now) {
  if (pid_ <= 0) return;
  bool reaped = false;
  if (!kill_now && control_fd_ >= 0) {
    std::string msg = json{{"type", "shutdown"}}.dump();
    send(control_fd_, msg.data(), msg.size(), MSG_NOSIGNAL);
    for (int i = 0; i < 200 && !reaped; ++i) {  // up to 2 s for a clean exit
      pid_t r = waitpid(pid_, nullptr, WNOHANG);
      reaped = r == pid_ || (r < 0 && errno == ECHILD);
      if (!reaped) usleep(10000);
    }
  }
  if (!reaped) {
    kill(pid_, SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  if (guardian_ != nullptr) guardian_->UntrackPid(pid_);
  if (control_fd_ >= 0) close(control_fd_);
  control_fd_ = -1;
  pid_ = -1;
}

bool ZygoteLauncher::OnChildExit(pid_t pid, int /*wait_status*/) {
  if (pid != pid_ || pid_ <= 0) return false;
  if (guardian_ != nullptr) guardian_->UntrackPid(pid_);
  if (control_fd_ >= 0) close(control_fd_);
  control_fd_ = -1;
  pid_ = -1;
  return true;
}

absl::StatusOr<std::string> ZygoteLauncher::Receive(double timeout_s) {
  double deadline = MonotonicSeconds() + timeout_s;
  while (true) {
    double left = deadline - MonotonicSeconds();
    if (left <= 0) return absl::DeadlineExceededError("no answer from the zygote in time");
    pollfd p = {control_fd_, POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(left * 1000) + 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    std::string buf(kMaxMessage, '\0');
    ssize_t got = recv(control_fd_, buf.data(), buf.size(), MSG_CMSG_CLOEXEC);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return absl::UnavailableError("the zygote closed its control socket");
    buf.resize(static_cast<size_t>(got));
    return buf;
  }
}

absl::StatusOr<pid_t> ZygoteLauncher::TryLaunch(const LaunchRequest& request, int stdout_fd,
                                                int stderr_fd, int result_fd) {
  if (pid_ <= 0) {
    if (absl::Status s = Spawn(); !s.ok()) return s;
  }
  int64_t id = next_request_id_++;
  std::string msg = WithRawJsonMember(json{{"type", "fork"}, {"request_id", id}}.dump(), "test",
                                      TestRequestJson(request, getpid()));
  int fds[3] = {stdout_fd, stderr_fd, result_fd};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(fds))];
  std::memset(control, 0, sizeof(control));
  iovec iov = {msg.data(), msg.size()};
  msghdr mh = {};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control;
  mh.msg_controllen = sizeof(control);
  cmsghdr* cm = CMSG_FIRSTHDR(&mh);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(fds));
  std::memcpy(CMSG_DATA(cm), fds, sizeof(fds));
  if (sendmsg(control_fd_, &mh, MSG_NOSIGNAL) < 0) {
    Stop(true);
    return absl::UnavailableError("the zygote is gone");
  }
  absl::StatusOr<std::string> reply = Receive(options_.fork_timeout_s);
  if (!reply.ok()) {
    Stop(true);
    return absl::UnavailableError(absl::StrCat("fork failed: ", reply.status().message()));
  }
  json r = json::parse(*reply, nullptr, false);
  if (r.is_discarded() || r.value("request_id", int64_t{-1}) != id) {
    Stop(true);
    return absl::InternalError(absl::StrCat("unexpected zygote reply: ", reply->substr(0, 200)));
  }
  if (r.value("type", "") == "fork_failed") {
    return absl::InternalError(absl::StrCat("zygote could not fork: ", r.value("error", "")));
  }
  pid_t child = r.value("pid", -1);
  if (child <= 0) return absl::InternalError("zygote reply without a pid");
  return child;
}

absl::StatusOr<pid_t> ZygoteLauncher::Launch(const LaunchRequest& request, int stdout_fd,
                                             int stderr_fd, int result_fd) {
  absl::StatusOr<pid_t> pid = TryLaunch(request, stdout_fd, stderr_fd, result_fd);
  if (pid.ok() || pid.status().code() != absl::StatusCode::kUnavailable) return pid;
  // The zygote died (a test may have killed it): start a new one and retry once.
  return TryLaunch(request, stdout_fd, stderr_fd, result_fd);
}

}  // namespace compatlab
