#include "runner/supervisor.h"

#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "util/time.h"

namespace compatlab {

struct Supervisor::SavedMask {
  sigset_t mask;
};

Supervisor::Supervisor(SupervisorOptions options, TestLauncher* launcher, MemoryLimiter* limiter,
                       Guardian* guardian)
    : options_(std::move(options)), context_{launcher, limiter, guardian, options_.tail_bytes} {}

Supervisor::~Supervisor() {
  for (auto& [pid, p] : running_) p->Finish(MonotonicSeconds());  // kills, then reaps
  running_.clear();
  End();
}

absl::Status Supervisor::Begin() {
  interrupt_signal_ = 0;
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&mask, sig);
  saved_mask_ = std::make_unique<SavedMask>();
  sigprocmask(SIG_BLOCK, &mask, &saved_mask_->mask);
  signal_fd_ = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd_ < 0) {
    End();
    return absl::InternalError(absl::StrCat("signalfd: ", strerror(errno)));
  }
  return absl::OkStatus();
}

void Supervisor::End() {
  if (signal_fd_ >= 0) close(signal_fd_);
  signal_fd_ = -1;
  if (saved_mask_) sigprocmask(SIG_SETMASK, &saved_mask_->mask, nullptr);
  saved_mask_.reset();
}

void Supervisor::Add(const TestJob* job) {
  const double now = MonotonicSeconds();
  const std::string started_at = UtcNowIso8601();
  absl::StatusOr<std::unique_ptr<TestProcess>> p = TestProcess::Start(
      *job, absl::StrCat(options_.limit_prefix, "-", getpid(), "-", ++limit_counter_), now,
      context_);
  if (p.ok()) {
    pid_t pid = (*p)->pid();
    running_[pid] = *std::move(p);
    return;
  }
  FinishedTest finished{job, {}, started_at, UtcNowIso8601()};
  finished.facts.launch_error = std::string(p.status().message());
  finished.facts.wall_s = MonotonicSeconds() - now;
  finished.facts.mem_limit_bytes = job->mem_limit_bytes;
  finished.facts.mem_limit_method = context_.limiter->Method();
  finished_.push_back(std::move(finished));
}

absl::Status Supervisor::DoWork(double max_wait_s) {
  double now = MonotonicSeconds();
  double wake = now + max_wait_s;
  std::vector<pollfd> fds = {{signal_fd_, POLLIN, 0}};
  std::vector<TestProcess*> owners = {nullptr};
  for (auto& [pid, p] : running_) {
    wake = std::min(wake, p->NextDeadline());
    p->AddPollFds(&fds, &owners);
  }
  int timeout_ms = std::max(0, static_cast<int>((wake - now) * 1000) + 1);
  int n = poll(fds.data(), fds.size(), timeout_ms);
  absl::Status status = absl::OkStatus();
  if (n < 0 && errno != EINTR) {
    status = absl::InternalError(absl::StrCat("poll: ", strerror(errno)));
    KillAll();
  }
  if (n > 0) {
    for (size_t k = 1; k < fds.size(); ++k) {
      if (fds[k].revents != 0) owners[k]->OnReadable(fds[k].fd);
    }
    if (fds[0].revents & POLLIN) ReadSignals();
  }
  now = MonotonicSeconds();
  for (auto& [pid, p] : running_) p->CheckDeadline(now);
  Reap();
  return status;
}

void Supervisor::ReadSignals() {
  signalfd_siginfo si;
  while (read(signal_fd_, &si, sizeof(si)) == sizeof(si)) {
    if (si.ssi_signo != SIGCHLD && interrupt_signal_ == 0) {
      interrupt_signal_ = static_cast<int>(si.ssi_signo);
      KillAll();
    }
  }
}

// Reaps every exited child: a test (its zombie still unreaped while it is
// finished, so that its pid and group cannot be reused), or another child,
// handed to the launcher (a zygote, or an orphan of a test).
void Supervisor::Reap() {
  while (true) {
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return;
    pid_t pid = info.si_pid;
    auto it = running_.find(pid);
    if (it != running_.end()) {
      TestProcess& p = *it->second;
      ExitFacts facts = p.Finish(MonotonicSeconds());
      finished_.push_back({&p.job(), std::move(facts), p.started_at(), UtcNowIso8601()});
      running_.erase(it);
      continue;
    }
    Guardian* guardian = context_.guardian;
    if (guardian != nullptr && pid == guardian->pid()) return;  // reaped by ~Guardian
    int wstatus = 0;
    waitpid(pid, &wstatus, 0);
    context_.launcher->OnChildExit(pid, wstatus);
  }
}

std::vector<FinishedTest> Supervisor::TakeFinished() { return std::exchange(finished_, {}); }

void Supervisor::KillAll() {
  for (auto& [pid, p] : running_) p->Kill();
}

}  // namespace compatlab
