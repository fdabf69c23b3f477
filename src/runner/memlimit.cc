#include "runner/memlimit.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "util/fs.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;

bool WriteSmallFile(const fs::path& path, const std::string& value) {
  std::ofstream out(path);
  if (!out) return false;
  out << value;
  out.flush();
  return static_cast<bool>(out);
}

// Value of "key N" in a flat keyed file (memory.events, memory.oom_control).
int64_t ReadKeyedCounter(const fs::path& path, const std::string& key) {
  auto text = ReadFile(path);
  if (!text.ok()) return 0;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    std::vector<std::string> parts = absl::StrSplit(line, ' ', absl::SkipEmpty());
    int64_t v = 0;
    if (parts.size() == 2 && parts[0] == key && absl::SimpleAtoi(parts[1], &v)) return v;
  }
  return 0;
}

std::optional<int64_t> ReadNumber(const fs::path& path) {
  auto text = ReadFile(path);
  int64_t v = 0;
  if (text.ok() && absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &v)) return v;
  return std::nullopt;
}

// The calling process's cgroup path for a v1 controller ("memory") or for v2 ("").
std::optional<std::string> OwnCgroupPath(const std::string& controller) {
  auto text = ReadFile("/proc/self/cgroup");
  if (!text.ok()) return std::nullopt;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    std::vector<std::string> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (parts.size() != 3) continue;
    if (controller.empty() && parts[0] == "0" && parts[1].empty()) return parts[2];
    if (!controller.empty()) {
      for (absl::string_view c : absl::StrSplit(parts[1], ',')) {
        if (c == controller) return parts[2];
      }
    }
  }
  return std::nullopt;
}

// Mount point of a cgroup hierarchy: fstype "cgroup2", or "cgroup" with option `option`.
std::optional<fs::path> FindMount(const std::string& fstype, const std::string& option) {
  auto text = ReadFile("/proc/self/mounts");
  if (!text.ok()) return std::nullopt;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    std::vector<std::string> f = absl::StrSplit(line, ' ');
    if (f.size() < 4 || f[2] != fstype) continue;
    if (option.empty()) return fs::path(f[1]);
    for (absl::string_view o : absl::StrSplit(f[3], ',')) {
      if (o == option) return fs::path(f[1]);
    }
  }
  return std::nullopt;
}

void KillTasksIn(const fs::path& procs) {
  for (int round = 0; round < 100; ++round) {
    auto text = ReadFile(procs);
    if (!text.ok()) return;
    bool any = false;
    for (absl::string_view line : absl::StrSplit(*text, '\n', absl::SkipEmpty())) {
      int pid = 0;
      if (absl::SimpleAtoi(line, &pid) && pid > 0) {
        kill(pid, SIGKILL);
        any = true;
      }
    }
    if (!any) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Removes an emptied cgroup, retrying while the kernel still counts exiting tasks.
void RemoveCgroupDir(const fs::path& dir) {
  for (int i = 0; i < 100; ++i) {
    if (rmdir(dir.c_str()) == 0 || errno == ENOENT) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

class CgroupLimit : public MemoryLimit {
 public:
  CgroupLimit(bool v2, fs::path dir, int64_t bytes)
      : v2_(v2), dir_(std::move(dir)), bytes_(bytes) {}
  ~CgroupLimit() override {
    KillAll();
    RemoveCgroupDir(dir_);
  }
  std::string Method() const override { return v2_ ? "cgroup_v2" : "cgroup_v1"; }
  int64_t Bytes() const override { return bytes_; }
  std::string ProcsPath() const override { return (dir_ / "cgroup.procs").string(); }
  std::string Dir() const override { return dir_.string(); }
  int64_t OomKills() const override {
    return v2_ ? ReadKeyedCounter(dir_ / "memory.events", "oom_kill")
               : ReadKeyedCounter(dir_ / "memory.oom_control", "oom_kill");
  }
  std::optional<int64_t> PeakBytes() const override {
    return ReadNumber(dir_ / (v2_ ? "memory.peak" : "memory.max_usage_in_bytes"));
  }
  void KillAll() override {
    if (v2_ && WriteSmallFile(dir_ / "cgroup.kill", "1")) {
      // cgroup.kill is asynchronous; fall through to wait for the tasks to go.
    }
    KillTasksIn(dir_ / "cgroup.procs");
  }

 private:
  bool v2_;
  fs::path dir_;
  int64_t bytes_;
};

class CgroupLimiter : public MemoryLimiter {
 public:
  CgroupLimiter(bool v2, fs::path parent) : v2_(v2), parent_(std::move(parent)) {}
  std::string Method() const override { return v2_ ? "cgroup_v2" : "cgroup_v1"; }
  std::string DirFor(const std::string& name) const override { return (parent_ / name).string(); }
  absl::StatusOr<std::unique_ptr<MemoryLimit>> Create(const std::string& name,
                                                      int64_t bytes) override {
    fs::path dir = DirFor(name);
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::PermissionDeniedError(absl::StrCat("cannot create cgroup ", dir.string()));
    }
    auto limit = std::make_unique<CgroupLimit>(v2_, dir, bytes);
    std::string value = std::to_string(bytes);
    bool ok = v2_ ? WriteSmallFile(dir / "memory.max", value) &&
                        (WriteSmallFile(dir / "memory.swap.max", "0") || true)
                  : WriteSmallFile(dir / "memory.limit_in_bytes", value);
    if (!v2_ && fs::exists(dir / "memory.memsw.limit_in_bytes")) {
      WriteSmallFile(dir / "memory.memsw.limit_in_bytes", value);  // no swap either
    }
    if (!ok) return absl::PermissionDeniedError(absl::StrCat("cannot set limit in ", dir.string()));
    return limit;
  }

 private:
  bool v2_;
  fs::path parent_;
};

class RlimitLimit : public MemoryLimit {
 public:
  explicit RlimitLimit(int64_t bytes) : bytes_(bytes) {}
  std::string Method() const override { return "rlimit"; }
  int64_t Bytes() const override { return bytes_; }
  std::string ProcsPath() const override { return ""; }
  std::string Dir() const override { return ""; }
  int64_t OomKills() const override { return 0; }
  std::optional<int64_t> PeakBytes() const override { return std::nullopt; }
  void KillAll() override {}

 private:
  int64_t bytes_;
};

class RlimitLimiter : public MemoryLimiter {
 public:
  std::string Method() const override { return "rlimit"; }
  std::string DirFor(const std::string&) const override { return ""; }
  absl::StatusOr<std::unique_ptr<MemoryLimit>> Create(const std::string&, int64_t bytes) override {
    return std::make_unique<RlimitLimit>(bytes);
  }
};

// A directory under which this process may create memory-limited cgroups.
std::optional<fs::path> UsableCgroupParent(bool v2) {
  std::optional<fs::path> mount = v2 ? FindMount("cgroup2", "") : FindMount("cgroup", "memory");
  std::optional<std::string> own = OwnCgroupPath(v2 ? "" : "memory");
  if (!mount || !own) return std::nullopt;
  fs::path base = *mount / fs::path(*own).relative_path();
  if (v2) {
    // Children of `base` get the memory controller only if base delegates it.
    auto controllers = ReadFile(base / "cgroup.subtree_control");
    if (!controllers.ok() || controllers->find("memory") == std::string::npos) return std::nullopt;
  }
  fs::path probe = base / absl::StrCat("compatlab-probe-", getpid());
  if (mkdir(probe.c_str(), 0755) != 0) return std::nullopt;
  bool has_limit = fs::exists(probe / (v2 ? "memory.max" : "memory.limit_in_bytes"));
  rmdir(probe.c_str());
  if (!has_limit) return std::nullopt;
  return base;
}

}  // namespace

void KillAndRemoveCgroup(const std::string& dir) {
  KillTasksIn(fs::path(dir) / "cgroup.procs");
  RemoveCgroupDir(dir);
}

absl::StatusOr<std::unique_ptr<MemoryLimiter>> MakeMemoryLimiter(const std::string& force_method) {
  if (force_method.empty() || force_method == "cgroup_v2") {
    if (auto parent = UsableCgroupParent(true))
      return std::make_unique<CgroupLimiter>(true, *parent);
    if (!force_method.empty())
      return absl::UnavailableError("no writable cgroup v2 memory controller");
  }
  if (force_method.empty() || force_method == "cgroup_v1") {
    if (auto parent = UsableCgroupParent(false)) {
      return std::make_unique<CgroupLimiter>(false, *parent);
    }
    if (!force_method.empty())
      return absl::UnavailableError("no writable cgroup v1 memory controller");
  }
  if (force_method.empty() || force_method == "rlimit") return std::make_unique<RlimitLimiter>();
  return absl::InvalidArgumentError(absl::StrCat("unknown memory-limit method '", force_method,
                                                 "' (cgroup_v2, cgroup_v1, rlimit)"));
}

absl::StatusOr<int64_t> ParseByteSize(const std::string& text) {
  std::string s(absl::StripAsciiWhitespace(text));
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  double value = 0;
  if (i == 0 || !absl::SimpleAtod(s.substr(0, i), &value)) {
    return absl::InvalidArgumentError(absl::StrCat("bad size '", text, "' (e.g. 8G, 512M)"));
  }
  std::string unit = s.substr(i);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double mult = 1;
  if (unit.empty() || unit == "B")
    mult = 1;
  else if (unit == "K" || unit == "KB" || unit == "KIB")
    mult = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MIB")
    mult = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GIB")
    mult = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TB" || unit == "TIB")
    mult = 1024.0 * 1024 * 1024 * 1024;
  else
    return absl::InvalidArgumentError(absl::StrCat("bad size unit in '", text, "'"));
  double bytes = value * mult;
  if (bytes < 1 || bytes > 9.2e18) {
    return absl::InvalidArgumentError(absl::StrCat("size out of range: '", text, "'"));
  }
  return static_cast<int64_t>(std::llround(bytes));
}

}  // namespace compatlab
