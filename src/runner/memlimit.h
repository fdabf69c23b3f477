// Per-test memory limits: a memory cgroup (v2 or v1) where the machine offers
// one, else RLIMIT_AS applied by the test child itself. The limit's own
// counters (OOM kills, peak usage) are what the supervisor reads to decide
// `oom`; nothing is guessed from exit codes.
#ifndef COMPATLAB_RUNNER_MEMLIMIT_H_
#define COMPATLAB_RUNNER_MEMLIMIT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace compatlab {

// The limit of one test. Destroying it kills what is left in it and removes it.
class MemoryLimit {
 public:
  virtual ~MemoryLimit() = default;
  // "cgroup_v2", "cgroup_v1" or "rlimit".
  virtual std::string Method() const = 0;
  virtual int64_t Bytes() const = 0;
  // File the child writes its pid to, to join the limit; "" for rlimit.
  virtual std::string ProcsPath() const = 0;
  // Directory of the cgroup, "" for rlimit (for the guardian).
  virtual std::string Dir() const = 0;
  // How many times the kernel's OOM killer fired inside this limit.
  virtual int64_t OomKills() const = 0;
  // Peak memory use recorded by the limit, when it keeps one.
  virtual std::optional<int64_t> PeakBytes() const = 0;
  // SIGKILLs every task still inside the limit (no-op for rlimit).
  virtual void KillAll() = 0;
};

// Creates limits. Thread-compatible.
class MemoryLimiter {
 public:
  virtual ~MemoryLimiter() = default;
  virtual std::string Method() const = 0;
  // The cgroup directory Create(name, ...) makes, "" when limits are not
  // cgroups. Known before the directory exists, so that the guardian can be
  // told of it first: a supervisor killed between the mkdir and the telling
  // must not leave the cgroup behind.
  virtual std::string DirFor(const std::string& name) const = 0;
  // Creates a fresh limit named `name` (unique per test) of `bytes`.
  virtual absl::StatusOr<std::unique_ptr<MemoryLimit>> Create(const std::string& name,
                                                              int64_t bytes) = 0;
};

// The best limiter this machine offers: a writable cgroup v2 hierarchy with the
// memory controller, else a writable cgroup v1 memory hierarchy, else rlimit.
// `force_method` ("cgroup_v2", "cgroup_v1", "rlimit", or "" for automatic)
// picks one explicitly; an unavailable forced method is an error.
absl::StatusOr<std::unique_ptr<MemoryLimiter>> MakeMemoryLimiter(const std::string& force_method);

// SIGKILLs every task of the cgroup at `dir` until it is empty, then removes
// it. What a limit's destructor does, for a cgroup known only by its path
// (the guardian's cleanup).
void KillAndRemoveCgroup(const std::string& dir);

// Parses "8G", "512M", "1.5GiB", "1048576" into bytes. Binary units.
absl::StatusOr<int64_t> ParseByteSize(const std::string& text);

}  // namespace compatlab

#endif  // COMPATLAB_RUNNER_MEMLIMIT_H_
