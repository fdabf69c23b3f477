#include "cli/sweep.h"

#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cli/common.h"
#include "cli/progress.h"
#include "plan/catalog.h"
#include "plan/plan.h"
#include "plan/suite.h"
#include "plan/target.h"
#include "query/error_kb.h"
#include "query/runs_format.h"
#include "runner/guardian.h"
#include "runner/memlimit.h"
#include "runner/supervisor.h"
#include "runner/zygote.h"
#include "store/store.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/time.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;

std::string RandomHex(int bytes) {
  static std::random_device rd;
  static std::mt19937_64 gen((static_cast<uint64_t>(rd()) << 32) ^ rd() ^
                             static_cast<uint64_t>(getpid()));
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < bytes; ++i) {
    unsigned v = static_cast<unsigned>(gen() & 0xff);
    out += kDigits[v >> 4];
    out += kDigits[v & 0xf];
  }
  return out;
}

std::string NewSweepId() {
  std::string now = UtcNowIso8601();  // 2026-11-30T02:24:35.123Z
  std::string compact;
  for (char c : now.substr(0, 19)) {
    if (c != '-' && c != ':') compact += c;
  }
  return absl::StrCat(compact, "Z-", RandomHex(3));
}

std::string HostName() {
  char buf[256] = {0};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "";
}

int UsableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
}

}  // namespace

int RunSweep(const SweepFlags& flags) {
  // 1. Validate every input before anything is written.
  if (flags.jobs < 1 || flags.jobs > 256)
    return Fail(kExitBadInput, "--jobs must be from 1 to 256");
  if (flags.timeout_s.has_value() && !(*flags.timeout_s > 0)) {
    return Fail(kExitBadInput, "--timeout must be a positive number of seconds");
  }
  absl::StatusOr<int64_t> mem_limit = ParseByteSize(flags.mem_limit);
  if (!mem_limit.ok())
    return Fail(kExitBadInput, absl::StrCat("--mem-limit: ", mem_limit.status().message()));
  if (*mem_limit < (int64_t{64} << 20))
    return Fail(kExitBadInput, "--mem-limit must be at least 64M");
  auto limiter = MakeMemoryLimiter(flags.mem_limit_method);
  if (!limiter.ok()) return Fail(kExitBadInput, limiter.status());
  bool plan_flags = !flags.suite.empty() || !flags.models.empty() || !flags.model_path.empty() ||
                    !flags.kinds.empty() || !flags.targets.empty() || !flags.modes.empty() ||
                    !flags.backend.empty() || !flags.dtypes.empty() || !flags.batch_sizes.empty() ||
                    !flags.seq_lens.empty() || flags.new_tokens.has_value() ||
                    flags.train_steps.has_value();
  if (flags.resume && plan_flags) {
    return Fail(kExitBadInput,
                "--resume continues a stored plan; it takes no --suite, --models, "
                "--model-path, --kinds, --targets, --modes, --backend, --dtypes, "
                "--batch-sizes, --seq-lens, --new-tokens or --train-steps");
  }
  const fs::path targets_dir = ProjectHome() / "targets";
  std::map<std::string, TargetProfile> profiles;
  ProbeEnv probe = ResolveProbeEnv(flags.python);
  if (access(probe.python.c_str(), X_OK) != 0) {
    return Fail(kExitBadInput, absl::StrCat("no Python interpreter at ", probe.python,
                                            " (run `make python`, or pass --python)"));
  }
  fs::path db_path = flags.db;
  std::error_code ec;
  bool db_exists = fs::exists(db_path, ec);

  std::unique_ptr<Store> store;
  std::string sweep_id;
  std::vector<TestSpec> pending;
  int64_t planned = 0;
  bool already_finished = false;
  std::string suite_name;
  if (flags.resume) {
    if (!db_exists)
      return Fail(kExitBadInput, absl::StrCat("no store at ", flags.db, " to resume"));
    auto opened = Store::Open(db_path, OpenMode::kReadWrite);
    if (!opened.ok()) return Fail(kExitBadInput, opened.status());
    store = std::move(*opened);
    if (flags.resume_id.empty()) {
      auto latest = store->LatestUnfinishedSweep();
      if (!latest.ok()) return Fail(kExitFailure, latest.status());
      if (!latest->has_value()) return Fail(kExitBadInput, "no unfinished sweep to resume");
      sweep_id = (*latest)->sweep_id;
    } else {
      sweep_id = flags.resume_id;
    }
    auto info = store->GetSweep(sweep_id);
    if (!info.ok()) return Fail(kExitBadInput, info.status());
    planned = info->planned;
    already_finished = info->finished_at.has_value();
    suite_name = info->suite;
    auto p = store->PendingTests(sweep_id);
    if (!p.ok()) return Fail(kExitFailure, p.status());
    pending = std::move(*p);
    // A deadline given now applies to the tests still to run.
    if (flags.timeout_s.has_value()) {
      for (TestSpec& s : pending) s.timeout_s = *flags.timeout_s;
    }
    std::vector<std::string> targets;
    for (const TestSpec& s : pending) {
      if (s.model_id != "none" &&
          std::find(targets.begin(), targets.end(), s.target) == targets.end()) {
        targets.push_back(s.target);
      }
    }
    auto loaded = LoadTargetProfiles(&targets, targets_dir);
    if (!loaded.ok()) return Fail(kExitBadInput, loaded.status());
    profiles = std::move(*loaded);
    std::fprintf(stderr, "compatlab: resuming sweep %s: %zu of %lld tests left\n", sweep_id.c_str(),
                 pending.size(), static_cast<long long>(planned));
  } else {
    if (db_exists) {  // a bad store is refused before planning, and left untouched
      auto opened = Store::Open(db_path, OpenMode::kReadWrite);
      if (!opened.ok()) return Fail(kExitBadInput, opened.status());
      store = std::move(*opened);
    }
    std::string suite_arg = flags.suite.empty() ? "smoke" : flags.suite;
    auto suite = LoadSuite(suite_arg, ProjectHome() / "suites");
    if (!suite.ok()) return Fail(kExitBadInput, suite.status());
    suite_name = suite->name;
    PlanOverrides overrides;
    overrides.models = flags.models;
    overrides.kinds = flags.kinds;
    overrides.timeout_s = flags.timeout_s;
    overrides.modes = flags.modes;
    overrides.backend = flags.backend;
    overrides.dtypes = flags.dtypes;
    overrides.batch_sizes = flags.batch_sizes;
    overrides.seq_lens = flags.seq_lens;
    overrides.new_tokens = flags.new_tokens;
    overrides.train_steps = flags.train_steps;
    overrides.targets = flags.targets;
    overrides.targets = PlanTargets(*suite, overrides);
    auto loaded = LoadTargetProfiles(&overrides.targets, targets_dir);
    if (!loaded.ok()) return Fail(kExitBadInput, loaded.status());
    profiles = std::move(*loaded);
    if (!flags.model_path.empty()) {
      fs::path dir = fs::absolute(flags.model_path, ec);
      if (!fs::is_directory(dir, ec)) {
        return Fail(kExitBadInput,
                    absl::StrCat("--model-path: not a directory: ", flags.model_path));
      }
      auto hash = HashDirectory(dir);
      if (!hash.ok()) return Fail(kExitBadInput, hash.status());
      auto info = InspectCheckpoint(probe, dir.string());
      if (!info.ok()) {
        return Fail(kExitBadInput,
                    absl::StrCat("--model-path ", flags.model_path, ": ", info.status().message()));
      }
      overrides.checkpoint_dir = dir.string();
      overrides.checkpoint_hash = *hash;
      overrides.checkpoint = *info;
    }
    std::optional<ModelCatalog> catalog;
    if (PlanNeedsCatalog(*suite, overrides)) {
      auto loaded = LoadCatalog(probe);
      if (!loaded.ok()) return Fail(kExitFailure, loaded.status());
      catalog = std::move(*loaded);
    }
    auto plan = ExpandPlan(*suite, overrides, catalog ? &*catalog : nullptr, profiles);
    if (!plan.ok()) return Fail(kExitBadInput, plan.status());
    if (store == nullptr) {  // created only once the plan is known to be good
      auto opened = Store::Open(db_path, OpenMode::kReadWriteCreate);
      if (!opened.ok()) return Fail(kExitBadInput, opened.status());
      store = std::move(*opened);
    }
    sweep_id = NewSweepId();
    SweepInfo info;
    info.sweep_id = sweep_id;
    info.created_at = UtcNowIso8601();
    info.suite = suite_name;
    info.args = flags.command_line;
    info.host = HostName();
    info.jobs = flags.jobs;
    if (absl::Status s = store->CreateSweep(info, *plan); !s.ok()) return Fail(kExitFailure, s);
    planned = static_cast<int64_t>(plan->size());
    pending = std::move(*plan);
    std::fprintf(stderr, "compatlab: sweep %s: suite %s, %lld tests, --jobs %d, store %s\n",
                 sweep_id.c_str(), suite_name.c_str(), static_cast<long long>(planned), flags.jobs,
                 flags.db.c_str());
  }

  // 2. Supervise.
  absl::StatusOr<Guardian> guardian = Guardian::Start();
  if (!guardian.ok()) return Fail(kExitFailure, guardian.status());
  ZygoteOptions zopts;
  zopts.preload = PlanModelTypes(pending);  // before the specs move into the jobs
  // Every shape compiles on its own when the plan has several (cost curves).
  std::set<std::pair<int64_t, int64_t>> shapes;
  for (const TestSpec& s : pending) {
    if (s.model_id != "none") shapes.insert({s.batch_size, s.seq_len});
  }
  std::vector<TestJob> jobs;
  jobs.reserve(pending.size());
  for (TestSpec& s : pending) {
    TestJob job{RandomHex(16), std::move(s), "", ""};
    if (auto it = profiles.find(job.spec.target);
        it != profiles.end() && job.spec.model_id != "none") {
      job.target_profile_json = it->second.json;
      if (job.spec.mode == "compile") {
        job.compile_options_json = shapes.size() > 1
                                       ? WithStaticShapes(it->second.compile_options_json)
                                       : it->second.compile_options_json;
      }
    }
    jobs.push_back(std::move(job));
  }
  zopts.python = probe.python;
  zopts.probe_dir = probe.probe_dir;
  zopts.log_path =
      (fs::temp_directory_path() / absl::StrCat("compatlab-", sweep_id, ".zygote.log")).string();
  zopts.env["COMPATLAB_SWEEP_ID"] = sweep_id;
  ZygoteLauncher launcher(zopts, &*guardian);
  SupervisorOptions sopts;
  sopts.jobs = flags.jobs;
  sopts.grace_s = flags.grace_s;
  sopts.mem_limit_bytes = *mem_limit;
  sopts.torch_num_threads = std::max(1, UsableCores() / flags.jobs);
  // Per-test compile caches live here; whatever a killed sweep left is removed.
  const fs::path cache_root =
      fs::temp_directory_path() / absl::StrCat("compatlab-cache-", sweep_id);
  fs::remove_all(cache_root, ec);
  sopts.compile_cache_root = cache_root.string();
  sopts.warm = flags.warm;
  Supervisor supervisor(sopts, &launcher, limiter->get(), &*guardian);

  bool live = isatty(fileno(stderr)) != 0;
  Progress progress(stderr, live, planned, planned - static_cast<int64_t>(jobs.size()));
  const std::string host = HostName();
  const std::string cpu = CpuModel();
  SupervisorCallbacks callbacks;
  callbacks.on_start = [&](const TestJob& job) { progress.Started(job.run_id, job.spec); };
  callbacks.on_tick = [&]() { progress.Tick(); };
  callbacks.on_result = [&](const TestOutcome& o) -> absl::Status {
    RunRecord rec;
    rec.run_id = o.job->run_id;
    rec.sweep_id = sweep_id;
    rec.test_id = o.job->spec.TestId();
    rec.spec = o.job->spec;
    rec.result = o.result;
    rec.result.compile_options = o.job->compile_options_json;
    if (rec.result.status != TestStatus::kPass && rec.result.status != TestStatus::kSkipped) {
      rec.result.error_signature = FailureSignature(rec.result);
    }
    if (!rec.result.torch_num_threads.has_value() && o.job->spec.model_id != "none") {
      rec.result.torch_num_threads = sopts.torch_num_threads;
    }
    rec.started_at = o.started_at;
    rec.finished_at = o.finished_at;
    rec.host = host;
    rec.cpu_model = cpu;
    rec.jobs = flags.jobs;
    rec.compatlab_version = COMPATLAB_VERSION;
    progress.Finished(o.job->run_id, o.job->spec, o.result);
    return store->InsertRun(rec);
  };
  if (!jobs.empty()) {  // started here so that no test's wall time includes it
    double zygote_start = MonotonicSeconds();
    if (absl::Status s = launcher.Start(); !s.ok()) return Fail(kExitFailure, s);
    std::fprintf(stderr, "compatlab: zygote ready in %.1f s (%zu modelling modules preloaded%s)\n",
                 MonotonicSeconds() - zygote_start, zopts.preload.size(),
                 launcher.import_failures().empty()
                     ? ""
                     : absl::StrCat(", ", launcher.import_failures().size(), " failed").c_str());
  }
  progress.ResetClock();  // elapsed and ETA count tests, not the zygote's start
  double start = MonotonicSeconds();
  absl::Status run = jobs.empty() ? absl::OkStatus() : supervisor.Run(jobs, callbacks);
  progress.Close();
  fs::remove_all(cache_root, ec);
  double wall = MonotonicSeconds() - start;
  if (absl::IsCancelled(run)) {
    std::fprintf(stderr,
                 "compatlab: %s after %lld of %lld tests; resume with: compatlab sweep --db %s "
                 "--resume %s\n",
                 std::string(run.message()).c_str(), static_cast<long long>(progress.done()),
                 static_cast<long long>(planned), flags.db.c_str(), sweep_id.c_str());
    return kExitInterrupted;
  }
  if (!run.ok()) return Fail(kExitFailure, run);
  // The zygote's log is kept only when something went wrong with it.
  if (launcher.Restarts() == 0) fs::remove(zopts.log_path, ec);
  if (!already_finished) {  // a resume of a complete sweep changes nothing
    if (absl::Status s = store->FinishSweep(sweep_id, UtcNowIso8601()); !s.ok()) {
      return Fail(kExitFailure, s);
    }
  }
  RunFilter filter;
  filter.sweep_id = sweep_id;
  auto records = store->QueryRuns(filter);
  if (!records.ok()) return Fail(kExitFailure, records.status());
  std::cout << FormatSweepSummary(*records);
  std::fprintf(
      stderr,
      "compatlab: sweep %s finished: %zu results in %s (%lld this run, %.1f ms per test)%s\n",
      sweep_id.c_str(), records->size(), HumanDuration(wall).c_str(),
      static_cast<long long>(jobs.size()),
      jobs.empty() ? 0.0 : wall * 1000 / static_cast<double>(jobs.size()),
      launcher.Restarts() > 0
          ? absl::StrCat("; zygote restarted ", launcher.Restarts(), "x").c_str()
          : "");
  return kExitOk;
}

}  // namespace compatlab
