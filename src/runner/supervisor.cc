#include "runner/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "runner/protocol.h"
#include "util/time.h"

namespace compatlab {

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  if (abbrev != nullptr) return absl::StrCat("SIG", abbrev);
  return absl::StrCat("SIG", sig);
}

namespace {

// Keeps the last `cap` bytes written to it.
class Tail {
 public:
  explicit Tail(size_t cap) : cap_(cap) {}
  void Append(const char* data, size_t n) {
    if (n >= cap_) {
      buf_.assign(data + (n - cap_), cap_);
      return;
    }
    buf_.append(data, n);
    if (buf_.size() > 2 * cap_) buf_.erase(0, buf_.size() - cap_);
  }
  std::string Take() {
    if (buf_.size() > cap_) buf_.erase(0, buf_.size() - cap_);
    return std::move(buf_);
  }

 private:
  size_t cap_;
  std::string buf_;
};

struct Pipe {
  int read_fd = -1;
  int write_fd = -1;
};

absl::StatusOr<Pipe> MakePipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
  }
  fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  return Pipe{fds[0], fds[1]};
}

// A warm rerun waiting for a free slot: the cold run's result and start.
struct WarmPending {
  const TestJob* job;
  RunResult cold;
  std::string started_at;
  double start;
};

void RemoveCacheDir(const std::string& dir) {
  if (dir.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

}  // namespace

void MergeWarmResult(const RunResult& warm, RunResult* cold) {
  cold->warm_prepare_s = warm.prepare_s;
  cold->warm_cache_hits = warm.cache_hits;
  cold->warm_cache_misses = warm.cache_misses;
  if (warm.status != TestStatus::kPass && warm.status != TestStatus::kFailAccuracy) {
    cold->warm_state = absl::StrCat("failed: ", std::string(TestStatusName(warm.status)));
    if (!warm.error_message.empty()) {
      absl::StrAppend(&cold->warm_state, " (", warm.error_message.substr(0, 200), ")");
    }
  } else if (warm.cache_hits.value_or(0) > 0) {
    cold->warm_state = "warm";
  } else {
    cold->warm_state = "no_cache_hits";
  }
}

struct Supervisor::Running {
  const TestJob* job = nullptr;
  std::string cache_phase;        // "", cold or warm
  std::string cache_dir;          // removed when the test is reported
  std::optional<RunResult> cold;  // warm phase: the cold run's result
  double cold_start = 0;
  pid_t pid = -1;
  int fds[3] = {-1, -1, -1};  // stdout, stderr, result (read ends)
  Tail out, err;
  std::string result_text;
  std::unique_ptr<MemoryLimit> limit;
  double start = 0;
  std::string started_at;
  double deadline = 0;
  double kill_at = 0;  // when SIGKILL follows SIGTERM; 0 before the deadline
  bool timed_out = false;
  bool killed = false;

  explicit Running(size_t cap) : out(cap), err(cap) {}

  // Reads what is available on stream `i`. Returns false once it is closed.
  bool Drain(int i) {
    char buf[65536];
    for (int rounds = 0; rounds < 16; ++rounds) {
      ssize_t n = read(fds[i], buf, sizeof(buf));
      if (n > 0) {
        if (i == 0)
          out.Append(buf, static_cast<size_t>(n));
        else if (i == 1)
          err.Append(buf, static_cast<size_t>(n));
        else if (result_text.size() < (8u << 20))
          result_text.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return true;
      close(fds[i]);
      fds[i] = -1;
      return false;
    }
    return true;
  }
  void CloseAll() {
    for (int& fd : fds) {
      if (fd >= 0) close(fd);
      fd = -1;
    }
  }
};

Supervisor::Supervisor(SupervisorOptions options, TestLauncher* launcher, MemoryLimiter* limiter,
                       Guardian* guardian)
    : options_(std::move(options)), launcher_(launcher), limiter_(limiter), guardian_(guardian) {}

absl::Status Supervisor::Run(const std::vector<TestJob>& jobs,
                             const SupervisorCallbacks& callbacks) {
  interrupt_signal_ = 0;
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  sigset_t mask, old_mask;
  sigemptyset(&mask);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&mask, sig);
  sigprocmask(SIG_BLOCK, &mask, &old_mask);
  int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) {
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    return absl::InternalError(absl::StrCat("signalfd: ", strerror(errno)));
  }

  std::map<pid_t, std::unique_ptr<Running>> running;
  std::deque<WarmPending> warm_queue;
  size_t next = 0;
  bool stopping = false;
  absl::Status stop_status = absl::OkStatus();
  double last_tick = MonotonicSeconds();

  auto kill_group = [&](Running& r, int sig) {
    kill(-r.pid, sig);
    if (sig == SIGKILL && r.limit) r.limit->KillAll();
  };

  auto stop_all = [&]() {
    for (auto& [pid, r] : running) kill_group(*r, SIGKILL);
  };

  // Hands a finished test to on_result. A failure there stops the run and
  // kills the tests still running; nothing is reported once the run stops.
  auto report = [&](const TestJob& job, RunResult result, const std::string& started_at) {
    if (!callbacks.on_result || stopping) return;
    absl::Status s = callbacks.on_result({&job, std::move(result), started_at, UtcNowIso8601()});
    if (!s.ok() && stop_status.ok()) {
      stop_status = s;
      stopping = true;
      stop_all();
    }
  };

  // Records a test that never started.
  auto report_unstarted = [&](const TestJob& job, const std::string& message, double start,
                              const std::string& started_at) {
    RunResult result;
    result.status = TestStatus::kHarnessError;
    result.stage = "harness";
    result.error_type = "LaunchError";
    result.error_message = message;
    result.wall_s = MonotonicSeconds() - start;
    result.mem_limit_bytes = options_.mem_limit_bytes;
    result.mem_limit_method = limiter_->Method();
    report(job, std::move(result), started_at);
  };

  // Starts `job`, or with `warm` its warm rerun (on_start is not called again).
  auto start_one = [&](const TestJob& job, WarmPending* warm) {
    double start = MonotonicSeconds();
    std::string started_at = UtcNowIso8601();
    if (callbacks.on_start && warm == nullptr) callbacks.on_start(job);
    auto r = std::make_unique<Running>(options_.tail_bytes);
    r->job = &job;
    r->start = start;
    r->started_at = started_at;
    if (warm != nullptr) {
      r->cold = std::move(warm->cold);
      r->started_at = warm->started_at;
      r->cold_start = warm->start;
    }
    // No process started: a cold or plain test is reported as a launch
    // failure; a warm rerun's failure is recorded in its cold result.
    auto fail_start = [&](const std::string& message) {
      RemoveCacheDir(r->cache_dir);
      if (!r->cold) {
        report_unstarted(job, message, start, started_at);
        return;
      }
      RunResult failed;
      failed.status = TestStatus::kHarnessError;
      failed.error_message = message;
      MergeWarmResult(failed, &*r->cold);
      report(job, std::move(*r->cold), r->started_at);
    };
    if (job.spec.mode == "compile" && !options_.compile_cache_root.empty()) {
      r->cache_dir = (std::filesystem::path(options_.compile_cache_root) / job.run_id).string();
      r->cache_phase = warm != nullptr ? "warm" : "cold";
      std::error_code ec;
      if (warm == nullptr) std::filesystem::remove_all(r->cache_dir, ec);
      std::filesystem::create_directories(r->cache_dir, ec);
      if (ec) {
        fail_start(absl::StrCat("compile cache directory ", r->cache_dir, ": ", ec.message()));
        return;
      }
    }
    absl::StatusOr<std::unique_ptr<MemoryLimit>> limit =
        limiter_->Create(absl::StrCat(options_.limit_prefix, "-", getpid(), "-", ++limit_counter_),
                         options_.mem_limit_bytes);
    if (!limit.ok()) {
      fail_start(std::string(limit.status().message()));
      return;
    }
    r->limit = std::move(*limit);
    if (guardian_ != nullptr && !r->limit->Dir().empty()) guardian_->TrackCgroup(r->limit->Dir());
    Pipe pipes[3];
    for (Pipe& p : pipes) {
      absl::StatusOr<Pipe> made = MakePipe();
      if (!made.ok()) {
        for (Pipe& q : pipes) {
          if (q.read_fd >= 0) close(q.read_fd);
          if (q.write_fd >= 0) close(q.write_fd);
        }
        fail_start(std::string(made.status().message()));
        return;
      }
      p = *made;
    }
    LaunchRequest request{job.run_id,
                          job.spec,
                          options_.torch_num_threads,
                          r->limit.get(),
                          options_.measure,
                          job.target_profile_json,
                          job.compile_options_json,
                          r->cache_dir,
                          r->cache_phase};
    absl::StatusOr<pid_t> pid =
        launcher_->Launch(request, pipes[0].write_fd, pipes[1].write_fd, pipes[2].write_fd);
    for (Pipe& p : pipes) close(p.write_fd);
    if (!pid.ok()) {
      for (Pipe& p : pipes) close(p.read_fd);
      if (guardian_ != nullptr && !r->limit->Dir().empty()) {
        guardian_->UntrackCgroup(r->limit->Dir());
      }
      fail_start(std::string(pid.status().message()));
      return;
    }
    r->pid = *pid;
    if (guardian_ != nullptr) guardian_->TrackGroup(r->pid);
    for (int i = 0; i < 3; ++i) r->fds[i] = pipes[i].read_fd;
    r->deadline = start + job.spec.timeout_s;
    running[r->pid] = std::move(r);
  };

  // Called with the test's zombie still unreaped (so its pid and process
  // group id cannot be reused yet): kills what is left, reaps, reports.
  auto finish = [&](Running& r) {
    kill(-r.pid, SIGKILL);
    if (r.limit) r.limit->KillAll();
    int wstatus = 0;
    while (waitpid(r.pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    double end = MonotonicSeconds();
    for (int i = 0; i < 3; ++i) {
      if (r.fds[i] >= 0) r.Drain(i);
    }
    r.CloseAll();
    if (guardian_ != nullptr) {
      guardian_->UntrackGroup(r.pid);
      if (r.limit && !r.limit->Dir().empty()) guardian_->UntrackCgroup(r.limit->Dir());
    }
    RunResult result;
    result.wall_s = end - r.start;
    result.mem_limit_bytes = r.limit ? r.limit->Bytes() : options_.mem_limit_bytes;
    result.mem_limit_method = r.limit ? r.limit->Method() : "";
    result.stdout_tail = r.out.Take();
    result.stderr_tail = r.err.Take();
    if (WIFEXITED(wstatus)) result.exit_code = WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus)) result.term_signal = WTERMSIG(wstatus);
    RunResult parsed = result;
    bool have_result = !r.result_text.empty() && ParseChildResult(r.result_text, &parsed).ok();
    int64_t oom_kills = r.limit ? r.limit->OomKills() : 0;
    if (r.timed_out) {
      result.status = TestStatus::kTimeout;
      result.stage = "run";
      result.status_detail = absl::StrCat("deadline ", r.job->spec.timeout_s, " s",
                                          r.killed ? "; SIGKILL after grace" : "; SIGTERM");
      result.error_message = result.status_detail;
    } else if (oom_kills > 0) {
      result.status = TestStatus::kOom;
      result.stage = "run";
      result.status_detail =
          absl::StrCat("memory limit ", result.mem_limit_bytes, " bytes (", result.mem_limit_method,
                       ", ", oom_kills, " OOM kill", oom_kills == 1 ? "" : "s", ")");
      result.error_message = result.status_detail;
    } else if (WIFSIGNALED(wstatus)) {
      result.status = TestStatus::kCrash;
      result.stage = "run";
      result.status_detail = SignalName(WTERMSIG(wstatus));
      result.error_type = "Signal";
      result.error_message = absl::StrCat("killed by ", result.status_detail,
                                          WCOREDUMP(wstatus) ? " (core dumped)" : "");
    } else if (have_result) {
      result = std::move(parsed);
    } else {
      result.status = TestStatus::kHarnessError;
      result.stage = "harness";
      result.error_type = r.result_text.empty() ? "NoResult" : "BadResult";
      result.error_message = r.result_text.empty()
                                 ? absl::StrCat("the child exited with code ", WEXITSTATUS(wstatus),
                                                " without a result")
                                 : absl::StrCat("the child's result could not be read: ",
                                                r.result_text.substr(0, 200));
    }
    if (have_result && result.status != TestStatus::kHarnessError) {
      // Stack versions are facts of the interpreter whatever the status.
      result.python_version = parsed.python_version;
      result.torch_version = parsed.torch_version;
      result.transformers_version = parsed.transformers_version;
    }
    if (result.torch_version.empty()) {
      StackInfo stack = launcher_->Stack();
      result.python_version = stack.python_version;
      result.torch_version = stack.torch_version;
      result.transformers_version = stack.transformers_version;
    }
    r.limit.reset();  // removes the cgroup
    if (r.cache_phase == "cold" && options_.warm && !stopping &&
        (result.status == TestStatus::kPass || result.status == TestStatus::kFailAccuracy)) {
      warm_queue.push_back({r.job, std::move(result), r.started_at, r.start});
      return;  // the cache directory stays for the warm rerun
    }
    RemoveCacheDir(r.cache_dir);
    if (r.cold) {
      MergeWarmResult(result, &*r.cold);
      report(*r.job, std::move(*r.cold), r.started_at);
      return;
    }
    report(*r.job, std::move(result), r.started_at);
  };

  auto reap = [&]() {
    while (true) {
      siginfo_t info;
      memset(&info, 0, sizeof(info));
      if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return;
      pid_t pid = info.si_pid;
      auto it = running.find(pid);
      if (it != running.end()) {
        finish(*it->second);
        running.erase(it);
        continue;
      }
      if (guardian_ != nullptr && pid == guardian_->pid()) return;  // reaped by ~Guardian
      int wstatus = 0;
      waitpid(pid, &wstatus, 0);
      launcher_->OnChildExit(pid, wstatus);  // a zygote, or an orphan of a test
    }
  };

  while (true) {
    // Warm reruns first: their cold results wait for them to be reported.
    while (!stopping && static_cast<int>(running.size()) < options_.jobs &&
           (!warm_queue.empty() || next < jobs.size())) {
      if (!warm_queue.empty()) {
        WarmPending warm = std::move(warm_queue.front());
        warm_queue.pop_front();
        start_one(*warm.job, &warm);
      } else {
        start_one(jobs[next++], nullptr);
      }
    }
    if (running.empty() && (stopping || (next >= jobs.size() && warm_queue.empty()))) break;

    double now = MonotonicSeconds();
    double wake = now + 1.0;
    std::vector<pollfd> pfds;
    std::vector<std::pair<Running*, int>> owners;
    pfds.push_back({sfd, POLLIN, 0});
    owners.push_back({nullptr, -1});
    for (auto& [pid, r] : running) {
      wake = std::min(wake, r->kill_at > 0 ? r->kill_at : r->deadline);
      for (int i = 0; i < 3; ++i) {
        if (r->fds[i] < 0) continue;
        pfds.push_back({r->fds[i], POLLIN, 0});
        owners.push_back({r.get(), i});
      }
    }
    int timeout_ms = std::max(0, static_cast<int>((wake - now) * 1000) + 1);
    int n = poll(pfds.data(), pfds.size(), timeout_ms);
    if (n < 0 && errno != EINTR) {
      stop_status = absl::InternalError(absl::StrCat("poll: ", strerror(errno)));
      stopping = true;
      stop_all();
    }
    if (n > 0) {
      for (size_t k = 1; k < pfds.size(); ++k) {
        if (pfds[k].revents != 0) owners[k].first->Drain(owners[k].second);
      }
      if (pfds[0].revents & POLLIN) {
        signalfd_siginfo si;
        while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
          if (si.ssi_signo != SIGCHLD && !stopping) {
            interrupt_signal_ = static_cast<int>(si.ssi_signo);
            stopping = true;
            stop_all();
          }
        }
      }
    }
    now = MonotonicSeconds();
    for (auto& [pid, r] : running) {
      if (!r->timed_out && now >= r->deadline) {
        r->timed_out = true;
        r->kill_at = now + options_.grace_s;
        kill_group(*r, SIGTERM);
      } else if (r->timed_out && !r->killed && now >= r->kill_at) {
        r->killed = true;
        kill_group(*r, SIGKILL);
      }
    }
    reap();
    if (callbacks.on_tick && now - last_tick >= 1.0) {
      last_tick = now;
      callbacks.on_tick();
    }
  }
  // A stopped run reports nothing more; its tests run again on resume.
  for (const WarmPending& warm : warm_queue) {
    RemoveCacheDir(
        (std::filesystem::path(options_.compile_cache_root) / warm.job->run_id).string());
  }
  for (auto& [pid, r] : running) RemoveCacheDir(r->cache_dir);
  close(sfd);
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  if (!stop_status.ok()) return stop_status;
  if (interrupt_signal_ != 0) {
    return absl::CancelledError(absl::StrCat("interrupted by ", SignalName(interrupt_signal_)));
  }
  return absl::OkStatus();
}

}  // namespace compatlab
