#include "runner/test_process.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "util/time.h"

namespace compatlab {
namespace {

constexpr size_t kMaxResultBytes = 8u << 20;

// Appends to a tail that keeps the last `cap` bytes (it may hold up to twice
// that between trims).
void AppendTail(std::string* tail, size_t cap, const char* data, size_t n) {
  if (n >= cap) {
    tail->assign(data + (n - cap), cap);
    return;
  }
  tail->append(data, n);
  if (tail->size() > 2 * cap) tail->erase(0, tail->size() - cap);
}

std::string TakeTail(std::string* tail, size_t cap) {
  if (tail->size() > cap) tail->erase(0, tail->size() - cap);
  return std::move(*tail);
}

struct Pipe {
  int read_fd = -1;
  int write_fd = -1;
};

void ClosePipes(Pipe (&pipes)[3], bool read_ends) {
  for (Pipe& p : pipes) {
    int& fd = read_ends ? p.read_fd : p.write_fd;
    if (fd >= 0) close(fd);
    fd = -1;
  }
}

// Three pipes with non-blocking read ends; on failure none is left open.
absl::Status MakePipes(Pipe (&pipes)[3]) {
  for (Pipe& p : pipes) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      ClosePipes(pipes, true);
      ClosePipes(pipes, false);
      return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
    }
    fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    p = {fds[0], fds[1]};
  }
  return absl::OkStatus();
}

}  // namespace

TestProcess::TestProcess(const TestJob& job, const ProcessContext& ctx, double now)
    : job_(&job), ctx_(ctx), start_(now), started_at_(UtcNowIso8601()) {}

TestProcess::~TestProcess() {
  for (int& fd : fds_) {
    if (fd >= 0) close(fd);
  }
}

absl::StatusOr<std::unique_ptr<TestProcess>> TestProcess::Start(const TestJob& job,
                                                                const std::string& limit_name,
                                                                double now,
                                                                const ProcessContext& ctx) {
  std::unique_ptr<TestProcess> p(new TestProcess(job, ctx, now));
  // The guardian hears of the cgroup before it exists and forgets it only
  // once it is gone (Finish), so no moment leaves it unowned.
  const std::string cgroup = ctx.limiter->DirFor(limit_name);
  const bool tracked = ctx.guardian != nullptr && !cgroup.empty();
  if (tracked) ctx.guardian->TrackCgroup(cgroup);
  absl::StatusOr<std::unique_ptr<MemoryLimit>> limit =
      ctx.limiter->Create(limit_name, job.mem_limit_bytes);
  if (!limit.ok()) {
    if (tracked) ctx.guardian->UntrackCgroup(cgroup);
    return absl::InternalError(limit.status().message());
  }
  p->limit_ = std::move(*limit);
  Pipe pipes[3];
  absl::Status made = MakePipes(pipes);
  absl::StatusOr<pid_t> pid = absl::InternalError(made.message());
  if (made.ok()) {
    LaunchRequest request{job.run_id,
                          job.spec,
                          job.torch_num_threads,
                          p->limit_.get(),
                          job.measure,
                          job.target_profile_json,
                          job.compile_options_json,
                          job.compile_cache_dir,
                          job.cache_phase,
                          job.compile_store_dir,
                          job.compile_entry_out,
                          job.load_base,
                          job.load_slo,
                          job.compile_threads,

                          job.profile,
                          job.profile_trace_path};
    pid = ctx.launcher->Launch(request, pipes[0].write_fd, pipes[1].write_fd, pipes[2].write_fd);
    ClosePipes(pipes, false);
  }
  if (!pid.ok()) {
    ClosePipes(pipes, true);
    p->limit_.reset();
    if (tracked) ctx.guardian->UntrackCgroup(cgroup);
    return absl::InternalError(pid.status().message());
  }
  p->pid_ = *pid;
  if (ctx.guardian != nullptr) ctx.guardian->TrackGroup(p->pid_);
  for (int i = 0; i < 3; ++i) p->fds_[i] = pipes[i].read_fd;
  p->deadline_ = now + job.spec.timeout_s;
  return p;
}

void TestProcess::AddPollFds(std::vector<pollfd>* fds, std::vector<TestProcess*>* owners) const {
  for (int fd : fds_) {
    if (fd < 0) continue;
    fds->push_back({fd, POLLIN, 0});
    owners->push_back(const_cast<TestProcess*>(this));
  }
}

void TestProcess::OnReadable(int fd) {
  for (int i = 0; i < 3; ++i) {
    if (fds_[i] == fd) Drain(i);
  }
}

bool TestProcess::Drain(int i) {
  char buf[65536];
  for (int rounds = 0; rounds < 16; ++rounds) {
    ssize_t n = read(fds_[i], buf, sizeof(buf));
    if (n > 0) {
      if (i < 2) {
        AppendTail(&tails_[i], ctx_.tail_bytes, buf, static_cast<size_t>(n));
      } else if (result_text_.size() < kMaxResultBytes) {
        result_text_.append(buf, static_cast<size_t>(n));
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    close(fds_[i]);
    fds_[i] = -1;
    return false;
  }
  return true;
}

void TestProcess::CheckDeadline(double now) {
  if (!timed_out_ && now >= deadline_) {
    timed_out_ = true;
    kill_at_ = now + job_->grace_s;
    kill(-pid_, SIGTERM);
  } else if (timed_out_ && !killed_ && now >= kill_at_) {
    killed_ = true;
    Kill();
  }
}

void TestProcess::Kill() {
  kill(-pid_, SIGKILL);
  if (limit_) limit_->KillAll();
}

ExitFacts TestProcess::Finish(double now) {
  Kill();  // whatever the test left in its group or cgroup
  ExitFacts facts;
  while (waitpid(pid_, &facts.wait_status, 0) < 0 && errno == EINTR) {
  }
  facts.wall_s = now - start_;
  for (int i = 0; i < 3; ++i) {
    if (fds_[i] >= 0) Drain(i);
  }
  if (ctx_.guardian != nullptr) ctx_.guardian->UntrackGroup(pid_);
  facts.timed_out = timed_out_;
  facts.killed = killed_;
  facts.timeout_s = job_->spec.timeout_s;
  facts.oom_kills = limit_->OomKills();
  facts.mem_limit_bytes = limit_->Bytes();
  facts.mem_limit_method = limit_->Method();
  facts.result_text = std::move(result_text_);
  facts.stdout_tail = TakeTail(&tails_[0], ctx_.tail_bytes);
  facts.stderr_tail = TakeTail(&tails_[1], ctx_.tail_bytes);
  facts.stack = ctx_.launcher->Stack();
  const std::string cgroup = limit_->Dir();
  limit_.reset();  // removes the cgroup
  if (ctx_.guardian != nullptr && !cgroup.empty()) ctx_.guardian->UntrackCgroup(cgroup);
  return facts;
}

}  // namespace compatlab
