// The guardian: a small process forked at start-up that outlives the
// supervisor just long enough to clean up after it. The supervisor tells it
// which process groups, pids and cgroups belong to the sweep; if the
// supervisor dies (even by SIGKILL) the guardian's end of the pipe reads EOF,
// and it SIGKILLs every registered group and pid, empties and removes every
// registered cgroup, and exits. That is how no process of a sweep survives
// its supervisor.
#ifndef COMPATLAB_RUNNER_GUARDIAN_H_
#define COMPATLAB_RUNNER_GUARDIAN_H_

#include <sys/types.h>

#include <string>

#include "absl/status/statusor.h"

namespace compatlab {

class Guardian {
 public:
  // Forks the guardian. REQUIRES: the calling process has a single thread.
  static absl::StatusOr<Guardian> Start();

  Guardian(Guardian&& other) noexcept;
  Guardian& operator=(Guardian&& other) noexcept;
  Guardian(const Guardian&) = delete;
  Guardian& operator=(const Guardian&) = delete;
  // Tells the guardian to exit without killing anything, and reaps it.
  ~Guardian();

  pid_t pid() const { return pid_; }

  void TrackGroup(pid_t pgid) { Send('G', std::to_string(pgid)); }
  void UntrackGroup(pid_t pgid) { Send('g', std::to_string(pgid)); }
  void TrackPid(pid_t pid) { Send('P', std::to_string(pid)); }
  void UntrackPid(pid_t pid) { Send('p', std::to_string(pid)); }
  void TrackCgroup(const std::string& dir) { Send('C', dir); }
  void UntrackCgroup(const std::string& dir) { Send('c', dir); }

 private:
  Guardian(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
  void Send(char op, const std::string& arg);

  pid_t pid_ = -1;
  int fd_ = -1;
};

}  // namespace compatlab

#endif  // COMPATLAB_RUNNER_GUARDIAN_H_
