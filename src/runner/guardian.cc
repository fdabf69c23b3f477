#include "runner/guardian.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include "runner/memlimit.h"

namespace compatlab {
namespace {

// Everything below runs in the forked guardian.

// What the owner asked the guardian to kill: one command line at a time.
struct Tracked {
  std::set<pid_t> groups, pids;
  std::set<std::string> cgroups;

  void Apply(const std::string& line) {
    if (line.size() < 2) return;
    std::string arg = line.substr(2);
    switch (line[0]) {
      case 'G':
        groups.insert(std::atoi(arg.c_str()));
        break;
      case 'g':
        groups.erase(std::atoi(arg.c_str()));
        break;
      case 'P':
        pids.insert(std::atoi(arg.c_str()));
        break;
      case 'p':
        pids.erase(std::atoi(arg.c_str()));
        break;
      case 'C':
        cgroups.insert(arg);
        break;
      case 'c':
        cgroups.erase(arg);
        break;
      case 'Q':
        _exit(0);
    }
  }

  void KillAll() const {
    for (pid_t pid : pids) kill(pid, SIGKILL);
    for (pid_t pgid : groups) kill(-pgid, SIGKILL);
    for (const std::string& dir : cgroups) KillAndRemoveCgroup(dir);
  }
};

[[noreturn]] void GuardianMain(int fd, pid_t owner) {
  // Own process group: a Ctrl-C aimed at the supervisor's group must not take
  // the guardian down before it has cleaned up.
  setpgid(0, 0);
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);
  // Close everything but the command pipe and stderr.
  for (int i = 3; i < 1024; ++i) {
    if (i != fd) close(i);
  }
  Tracked tracked;
  std::string buffer;
  // Reads what is in the pipe now; false at EOF (the owner is gone).
  auto read_available = [&]() {
    char chunk[4096];
    while (true) {
      pollfd p = {fd, POLLIN, 0};
      int ready = poll(&p, 1, 0);
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) return true;
      ssize_t n = read(fd, chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      buffer.append(chunk, static_cast<size_t>(n));
      size_t pos;
      while ((pos = buffer.find('\n')) != std::string::npos) {
        std::string line = buffer.substr(0, pos);
        buffer.erase(0, pos + 1);
        tracked.Apply(line);
      }
    }
  };
  while (true) {
    // The owner's death shows as EOF on the pipe, or (should a process forked
    // from the owner still hold the pipe's write end) as a new parent. Either
    // way, what the owner wrote before it died is read first.
    pollfd p = {fd, POLLIN, 0};
    int ready = poll(&p, 1, 100);
    if (ready < 0 && errno != EINTR) break;
    if (!read_available()) break;
    if (getppid() != owner) {
      read_available();
      break;
    }
  }
  tracked.KillAll();
  _exit(0);
}

}  // namespace

absl::StatusOr<Guardian> Guardian::Start() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return absl::InternalError("guardian: pipe failed");
  pid_t owner = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return absl::InternalError("guardian: fork failed");
  }
  if (pid == 0) {
    close(fds[1]);
    GuardianMain(fds[0], owner);
  }
  close(fds[0]);
  return Guardian(pid, fds[1]);
}

Guardian::Guardian(Guardian&& other) noexcept : pid_(other.pid_), fd_(other.fd_) {
  other.pid_ = -1;
  other.fd_ = -1;
}

Guardian& Guardian::operator=(Guardian&& other) noexcept {
  if (this != &other) {
    this->~Guardian();
    pid_ = other.pid_;
    fd_ = other.fd_;
    other.pid_ = -1;
    other.fd_ = -1;
  }
  return *this;
}

Guardian::~Guardian() {
  if (fd_ >= 0) {
    Send('Q', "");
    close(fd_);
    fd_ = -1;
  }
  if (pid_ > 0) {
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
}

void Guardian::Send(char op, const std::string& arg) {
  if (fd_ < 0) return;
  std::string line = std::string(1, op) + " " + arg + "\n";
  // Lines are far below PIPE_BUF, so each write is atomic.
  while (write(fd_, line.data(), line.size()) < 0 && errno == EINTR) {
  }
}

}  // namespace compatlab
