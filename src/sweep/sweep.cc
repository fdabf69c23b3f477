#include "sweep/sweep.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "cache/remote.h"
#include "core/limits.h"
#include "fmt/format.h"
#include "plan/plan.h"
#include "runner/guardian.h"
#include "runner/memlimit.h"
#include "runner/zygote.h"
#include "store/artifacts.h"
#include "store/store.h"
#include "sweep/execute.h"
#include "sweep/progress.h"
#include "sweep/stored_trust.h"
#include "sweep/summary.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/time.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;

// The outcome of bad input `s` (exit 2).
SweepOutcome BadInput(const absl::Status& s) { return {SweepEnd::kBadInput, s}; }
// The outcome of work that failed with `s` (exit 1).
SweepOutcome Failed(const absl::Status& s) { return {SweepEnd::kFailed, s}; }

// A new sweep id: the UTC time to the second and 6 random hex digits, 20261130T022435Z-1a2b3c.
std::string NewSweepId() {
  std::string now = UtcNowIso8601();  // 2026-11-30T02:24:35.123Z
  std::string compact;
  for (char c : now.substr(0, 19)) {
    if (c != '-' && c != ':') compact += c;
  }
  return absl::StrCat(compact, "Z-", RandomHex(3));
}

// This machine's host name.
std::string HostName() {
  char buf[256] = {0};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

// The first "model name" of /proc/cpuinfo, "" when there is none.
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

// The cores this process may run on (at least 1).
int UsableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
}

// --remeasure-noisy and --remeasure-wait-s out of range.
absl::Status CheckRemeasureRanges(const SweepOptions& o) {
  if (o.remeasure_noisy < 0 || o.remeasure_noisy > 1000) {
    return absl::InvalidArgumentError("--remeasure-noisy must be from 0 to 1000");
  }
  if (!(o.remeasure_wait_s >= 0 && o.remeasure_wait_s <= 3600)) {
    return absl::InvalidArgumentError("--remeasure-wait-s: expected seconds from 0 to 3600");
  }
  return absl::OkStatus();
}

// Options out of range; nothing is read or written yet.
// --cache-from names a remote: a directory, or hub:ORG/NAME (cache/remote.h).
absl::Status CheckCacheFrom(const SweepOptions& o) {
  if (o.cache_from.empty()) return absl::OkStatus();
  absl::StatusOr<cache::Remote> remote = cache::ParseRemote(o.cache_from);
  if (remote.ok()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--cache-from: ", std::string(remote.status().message())));
}

absl::Status CheckRanges(const SweepOptions& o) {
  if (o.jobs.has_value() && (*o.jobs < 1 || *o.jobs > 256))
    return absl::InvalidArgumentError("--jobs must be from 1 to 256");
  if (absl::Status s = CheckStorePath(o.db); !s.ok()) return s;
  const std::optional<double> timeout =
      o.timeout_s.has_value() ? o.timeout_s : o.request.overrides.timeout_s;
  if (timeout.has_value()) {
    if (absl::Status s = CheckDuration(*timeout, "--timeout", false); !s.ok()) return s;
  }
  const bool replays = o.resume || !o.plan_file.empty();  // a plan stored or written before
  const std::optional<double> grace = replays ? o.grace_s : o.request.base.grace_s;
  if (grace.has_value()) {
    if (absl::Status s = CheckDuration(*grace, "--grace", true); !s.ok()) return s;
  }
  if (absl::Status s = CheckRemeasureRanges(o); !s.ok()) return s;
  if (o.mem_limit_bytes.value_or(o.request.base.mem_limit_bytes) < kMinMemLimitBytes) {
    return absl::InvalidArgumentError("--mem-limit must be at least 64M");
  }
  if (replays) return absl::OkStatus();  // the stored method was checked when planned
  return MakeMemoryLimiter(o.request.base.mem_limit_method).status();
}

// The sweep to run: its id, suite, plan size and the tests still to run.
struct Prepared {
  std::unique_ptr<Store> store;
  std::string sweep_id;
  int64_t planned = 0;
  int jobs = 1;
  bool already_finished = false;
  std::vector<ResolvedTest> pending;
};

// InvalidArgument naming `python` (and `hint`) unless it is an executable file.
absl::Status CheckInterpreter(const std::string& python, const std::string& hint) {
  if (access(python.c_str(), X_OK) == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("no Python interpreter at ", python, hint));
}

// Opens the store `o.db` that exists into `p`, so that a bad one is refused before any
// planning and left untouched; leaves `p.store` null when there is none.
absl::Status OpenExistingStore(const SweepOptions& o, Prepared& p) {
  std::error_code ec;
  if (!fs::exists(o.db, ec)) return absl::OkStatus();
  auto opened = Store::Open(o.db, OpenMode::kReadWrite);
  if (!opened.ok()) return opened.status();
  p.store = *std::move(opened);
  return absl::OkStatus();
}

// Stores a new sweep of `tests` (of plan `plan_id` of `suite`; `o.shard` its shard) in `p`,
// creating the store when `p` has none, and makes them `p`'s pending tests.
absl::Status StoreNewSweep(const SweepOptions& o, Prepared& p, std::vector<ResolvedTest> tests,
                           const std::string& suite, const std::string& plan_id,
                           SweepOutcome* failure) {
  if (p.store == nullptr) {  // created only once the plan is known to be good
    auto opened = Store::Open(o.db, OpenMode::kReadWriteCreate);
    if (!opened.ok()) return opened.status();
    p.store = *std::move(opened);
  }
  p.sweep_id = NewSweepId();
  p.jobs = o.jobs.value_or(1);
  SweepInfo info{p.sweep_id,     UtcNowIso8601(), std::nullopt, suite,
                 o.command_line, HostName(),      p.jobs};
  info.plan_id = plan_id;
  if (o.shard.has_value()) {
    info.shard = o.shard->index;
    info.shards = o.shard->count;
  }
  if (absl::Status s = p.store->CreateResolvedSweep(info, tests); !s.ok()) {
    *failure = Failed(s);
    return s;
  }
  p.planned = static_cast<int64_t>(tests.size());
  p.pending = std::move(tests);
  std::cerr << SweepStartLine(p.sweep_id, suite, p.planned, p.jobs, o.db,
                              o.request.overrides.models);
  return absl::OkStatus();
}

// A new sweep: plan (and keep `o.shard`'s tests of the plan), then store the sweep with them.
absl::StatusOr<Prepared> PrepareNew(const SweepOptions& o, SweepOutcome* failure) {
  const std::string python = o.request.base.python;
  if (absl::Status s = CheckInterpreter(python, " (run `make python`, or pass --python)");
      !s.ok()) {
    return s;
  }
  Prepared p;
  if (absl::Status s = OpenExistingStore(o, p); !s.ok()) return s;
  absl::StatusOr<ResolvedPlan> plan = LoadPlan(o.request, o.home);
  if (absl::IsInternal(plan.status())) *failure = Failed(plan.status());
  if (!plan.ok()) return plan.status();
  absl::StatusOr<std::string> plan_id = PlanId(plan->tests);
  if (!plan_id.ok()) return plan_id.status();
  if (o.shard.has_value()) {
    std::erase_if(plan->tests, [&o](const ResolvedTest& t) {
      return StableShardOf(t.spec, o.shard->count) != o.shard->index;
    });
  }
  if (absl::Status s = StoreNewSweep(o, p, std::move(plan->tests), plan->suite, *plan_id, failure);
      !s.ok()) {
    return s;
  }
  return p;
}

// The sweep a resume continues: `resume_id`, else the latest unfinished sweep of `store`;
// InvalidArgument when there is none or the id fails CheckStoredId.
absl::StatusOr<std::string> SweepToResume(Store& store, const std::string& resume_id) {
  std::string sweep_id = resume_id;
  if (sweep_id.empty()) {
    auto latest = store.LatestUnfinishedSweep();
    if (!latest.ok()) return latest.status();
    if (!latest->has_value()) return absl::InvalidArgumentError("no unfinished sweep to resume");
    sweep_id = (*latest)->sweep_id;
  }
  if (absl::Status s = CheckStoredId(sweep_id, "sweep id"); !s.ok()) return s;
  return sweep_id;
}

// The whole stored plan of `sweep_id`, each test with its execution settings, checked
// against the plan flags given; FailedPrecondition for a plan stored by an older compatlab.
absl::Status CheckStoredPlan(const SweepOptions& o, Store& store, const std::string& sweep_id,
                             const std::string& suite) {
  auto plan = store.Plan(sweep_id, /*pending_only=*/false);
  if (!plan.ok()) return plan.status();
  for (const ResolvedTest& t : *plan) {
    if (t.execution.has_value()) continue;
    return absl::FailedPreconditionError(
        absl::StrCat("sweep ", sweep_id,
                     " was planned by an older compatlab that did not store how to "
                     "run its tests; it cannot be resumed exactly (start a new sweep)"));
  }
  if (absl::Status s = CheckResumeFlags(o.given, suite, *plan); !s.ok()) return s;
  absl::Status limits = CheckStoredLimits(
      *plan, {o.timeout_s.has_value(), o.grace_s.has_value(), o.mem_limit_bytes.has_value()});
  if (limits.ok()) return limits;
  return absl::InvalidArgumentError(absl::StrCat("sweep ", sweep_id, ": ", limits.message()));
}

// What the tests still to run would run: this installation's own code unless
// --allow-stored-code (CheckResumeCode), and an interpreter that exists.
absl::Status CheckPendingRuns(const SweepOptions& o, const std::string& sweep_id,
                              const std::vector<ResolvedTest>& pending) {
  if (!o.allow_stored_code) {
    if (absl::Status s =
            CheckResumeCode(absl::StrCat("sweep ", sweep_id), pending, o.probe, o.home, o.given);
        !s.ok()) {
      return s;
    }
  }
  if (pending.empty()) return absl::OkStatus();
  return CheckInterpreter(pending.front().execution->python,
                          ", which the stored plan runs its tests with");
}

// A resume: the stored plan, checked against the flags given, as stored.
absl::StatusOr<Prepared> PrepareResume(const SweepOptions& o) {
  std::error_code ec;
  if (!fs::exists(o.db, ec)) {
    return absl::InvalidArgumentError(absl::StrCat("no store at ", o.db, " to resume"));
  }
  Prepared p;
  auto opened = Store::Open(o.db, OpenMode::kReadWrite);
  if (!opened.ok()) return opened.status();
  p.store = *std::move(opened);
  absl::StatusOr<std::string> sweep_id = SweepToResume(*p.store, o.resume_id);
  if (!sweep_id.ok()) return sweep_id.status();
  p.sweep_id = *sweep_id;
  auto info = p.store->GetSweep(p.sweep_id);
  if (!info.ok()) return info.status();
  if (absl::Status s = CheckStoredPlan(o, *p.store, p.sweep_id, info->suite); !s.ok()) return s;
  auto pending = p.store->Plan(p.sweep_id, /*pending_only=*/true);
  if (!pending.ok()) return pending.status();
  p.pending = *std::move(pending);
  if (absl::Status s = CheckPendingRuns(o, p.sweep_id, p.pending); !s.ok()) return s;
  p.planned = info->planned;
  p.jobs = o.jobs.value_or(static_cast<int>(info->jobs));
  p.already_finished = info->finished_at.has_value();
  std::cerr << ResumeLine(p.sweep_id, static_cast<int64_t>(p.pending.size()), p.planned);
  return p;
}

// The latest sweep of `store` that runs shard `shard` of plan `plan_id`, if any.
absl::StatusOr<std::optional<SweepInfo>> ShardSweep(Store& store, const std::string& plan_id,
                                                    const ShardSpec& shard) {
  auto sweeps = store.ListSweeps();
  if (!sweeps.ok()) return sweeps.status();
  std::optional<SweepInfo> found;
  for (SweepInfo& sweep : *sweeps) {
    if (sweep.plan_id == plan_id && sweep.shard == shard.index && sweep.shards == shard.count) {
      found = std::move(sweep);
    }
  }
  return found;
}

// A plan file's shard `o.shard`, checked as a stored plan is on a resume: the plan flags
// given equal it, its limits are in range and its code is this installation's own unless
// --allow-stored-code.
absl::StatusOr<std::vector<ResolvedTest>> PlanFileShard(const SweepOptions& o,
                                                        const ShardedPlan& plan) {
  if (o.shard->count != plan.shards) {
    return absl::InvalidArgumentError(fmt::format("--shard {}/{}: plan file {} has {} shards",
                                                  o.shard->index, o.shard->count, o.plan_file,
                                                  plan.shards));
  }
  std::vector<ResolvedTest> all;
  for (const PlannedShardTest& t : plan.tests) all.push_back(t.test);
  if (absl::Status s = CheckResumeFlags(o.given, plan.suite, all); !s.ok()) return s;
  std::vector<ResolvedTest> tests = ShardTests(plan, o.shard->index);
  const std::string origin = "plan file " + o.plan_file;
  absl::Status limits = CheckStoredLimits(
      tests, {o.timeout_s.has_value(), o.grace_s.has_value(), o.mem_limit_bytes.has_value()});
  if (!limits.ok()) return absl::InvalidArgumentError(absl::StrCat(origin, ": ", limits.message()));
  if (!o.allow_stored_code) {
    if (absl::Status s = CheckResumeCode(origin, tests, o.probe, o.home, o.given); !s.ok()) {
      return s;
    }
  }
  return tests;
}

// A shard's stored sweep is resumed only where this store planned it: one that `merge` brought
// in holds its plan as specs only (no execution settings) and takes no more runs of its own.
absl::Status CheckShardSweepIsOwn(const SweepOptions& o, Store& store,
                                  const std::optional<SweepInfo>& stored) {
  if (!stored.has_value()) return absl::OkStatus();
  absl::StatusOr<bool> own = store.IsPlannedHere(stored->sweep_id);
  if (!own.ok()) return own.status();
  if (*own) return absl::OkStatus();
  return absl::InvalidArgumentError(fmt::format(
      "--shard {}/{}: {} holds this shard only as merged from another store (sweep {}); run "
      "the shard into a store of its own and merge that",
      o.shard->index, o.shard->count, o.db, stored->sweep_id));
}

// A shard of a plan file: its sweep in the store resumed, else a new sweep of its tests.
absl::StatusOr<Prepared> PrepareFromPlanFile(const SweepOptions& o, SweepOutcome* failure) {
  absl::StatusOr<ShardedPlan> plan = ReadPlanFile(o.plan_file);
  if (!plan.ok()) return plan.status();
  absl::StatusOr<std::vector<ResolvedTest>> tests = PlanFileShard(o, *plan);
  if (!tests.ok()) return tests.status();
  Prepared p;
  if (absl::Status s = OpenExistingStore(o, p); !s.ok()) return s;
  std::optional<SweepInfo> stored;
  if (p.store != nullptr) {
    absl::StatusOr<std::optional<SweepInfo>> found = ShardSweep(*p.store, plan->plan_id, *o.shard);
    if (!found.ok()) return found.status();
    stored = *std::move(found);
    if (absl::Status s = CheckShardSweepIsOwn(o, *p.store, stored); !s.ok()) return s;
  }
  if (!stored.has_value()) {
    absl::Status s = StoreNewSweep(o, p, *std::move(tests), plan->suite, plan->plan_id, failure);
    if (!s.ok()) return s;
  } else {  // a task run again (a requeued one): what its sweep has not stored yet
    p.sweep_id = stored->sweep_id;
    auto pending = p.store->Plan(p.sweep_id, /*pending_only=*/true);
    if (!pending.ok()) return pending.status();
    p.pending = *std::move(pending);
    p.planned = stored->planned;
    p.jobs = o.jobs.value_or(static_cast<int>(stored->jobs));
    p.already_finished = stored->finished_at.has_value();
    std::cerr << ResumeLine(p.sweep_id, static_cast<int64_t>(p.pending.size()), p.planned);
  }
  if (p.pending.empty()) return p;
  if (absl::Status s = CheckInterpreter(p.pending.front().execution->python,
                                        ", which the plan file runs its tests with");
      !s.ok()) {
    return s;
  }
  return p;
}

// The specs of `tests`, in order.
std::vector<TestSpec> Specs(const std::vector<ResolvedTest>& tests) {
  std::vector<TestSpec> specs;
  for (const ResolvedTest& t : tests) specs.push_back(t.spec);
  return specs;
}

// The zygote of the pending tests of `p`: their model types preloaded, their interpreter and
// probe, and the calibration compile's seed directory when a test takes it (TakesCalibration).
absl::StatusOr<ZygoteOptions> ZygoteOptionsFor(const Prepared& p) {
  const TestExecution& first = *p.pending.front().execution;
  ZygoteOptions zopts;
  zopts.preload = PlanModelTypes(Specs(p.pending));
  zopts.python = first.python;
  zopts.probe_dir = first.probe_dir;
  absl::StatusOr<fs::path> log_path = SweepTempPath("compatlab-", p.sweep_id, ".zygote.log");
  if (!log_path.ok()) return log_path.status();
  zopts.log_path = log_path->string();
  zopts.env["COMPATLAB_SWEEP_ID"] = p.sweep_id;
  const bool compiles = std::any_of(p.pending.begin(), p.pending.end(), [](const ResolvedTest& t) {
    return TakesCalibration(t.spec, t.execution ? t.execution->target_profile_json : "");
  });
  if (compiles) {
    absl::StatusOr<fs::path> seed = SweepTempPath("compatlab-seed-", p.sweep_id);
    if (!seed.ok()) return seed.status();
    zopts.compile_seed_dir = seed->string();
  }
  return zopts;
}

fs::path CompileStoreOf(const SweepOptions& o) {
  return o.compile_store.empty() ? cache::LocalStoreDir() : o.compile_store;
}

// --cache-from: the remote's entries of the plan's tests pulled into the local store, with
// a line saying what came (and what was refused, and why).
absl::Status PullForSweep(const SweepOptions& o, const Prepared& p) {
  absl::StatusOr<cache::Remote> remote = cache::ParseRemote(o.cache_from);
  if (!remote.ok()) return remote.status();
  std::set<std::string> test_ids;
  for (const ResolvedTest& t : p.pending) test_ids.insert(t.spec.TestId());
  const TestExecution& first = *p.pending.front().execution;
  absl::StatusOr<cache::CopyReport> pulled = cache::Pull(
      *remote, CompileStoreOf(o), {first.python, first.probe_dir}, [&](const cache::Entry& e) {
        auto it = e.key.find("test_id");
        return it != e.key.end() && test_ids.contains(it->second);
      });
  if (!pulled.ok()) {
    return absl::Status(pulled.status().code(),
                        absl::StrCat("--cache-from ", cache::RemoteName(*remote), ": ",
                                     std::string(pulled.status().message())));
  }
  std::cerr << fmt::format(
      "compatlab: cache: {} entries pulled from {} for this sweep, {} here already",
      pulled->copied.size(), cache::RemoteName(*remote), pulled->present.size());
  if (!pulled->refused.empty()) {
    std::cerr << fmt::format(", {} refused (first: {})", pulled->refused.size(),
                             TruncateForDisplay(pulled->refused.front(), 300));
  }
  std::cerr << "\n";
  return absl::OkStatus();
}

// How ExecutePlan runs the tests of `p` with the started `launcher`: the options given, the
// cores shared among the jobs, the compile caches and the calibration's seed when it ran.
absl::StatusOr<ExecuteOptions> ExecuteOptionsFor(const SweepOptions& o, const Prepared& p,
                                                 const ZygoteLauncher& launcher,
                                                 const ZygoteOptions& zopts) {
  ExecuteOptions eo;
  if (launcher.compiler_startup_s().has_value()) {
    eo.compile_seed_dir = zopts.compile_seed_dir;
    eo.compiler_startup_s = launcher.compiler_startup_s();
  }
  eo.sweep_id = p.sweep_id;
  eo.stack = p.pending.front().execution->stack;  // one interpreter, so one stack, per sweep
  eo.jobs = p.jobs;
  eo.torch_num_threads = std::max(1, UsableCores() / p.jobs);
  absl::StatusOr<fs::path> cache_root = SweepTempPath("compatlab-cache-", p.sweep_id);
  if (!cache_root.ok()) return cache_root.status();
  eo.compile_cache_root = cache_root->string();
  eo.artifact_dir = ArtifactDir(o.db).string();
  if (!o.no_keep_compile || !o.cache_from.empty()) {
    eo.compile_store_root = CompileStoreOf(o).string();
    eo.compile_store_max_bytes = cache::kDefaultStoreMaxBytes;
    eo.load_from_store = !o.cache_from.empty();
  }
  eo.timeout_s = o.timeout_s;
  eo.grace_s = o.grace_s;
  eo.mem_limit_bytes = o.mem_limit_bytes;
  eo.rerun_reduced = o.rerun_reduced;
  eo.remeasure_noisy = o.remeasure_noisy;
  eo.remeasure_wait_s = o.remeasure_wait_s;
  eo.machine_quiet = [watch = std::make_shared<QuietWatch>()] {
    absl::StatusOr<std::string> loadavg = ReadFile("/proc/loadavg");
    return watch->Poll(loadavg.ok() ? *loadavg : "");
  };
  eo.host = HostName();
  eo.cpu_model = CpuModel();
  return eo;
}

// Callbacks that report each start, finish and tick to `progress`, and add the wait for
// quiet to `times`.
ExecuteCallbacks ProgressCallbacks(Progress* progress, SweepTimes* times) {
  ExecuteCallbacks callbacks;
  callbacks.on_start = [progress](const std::string& id, const TestSpec& s) {
    progress->Started(id, s);
  };
  callbacks.on_finish = [progress](const RunRecord& r) {
    progress->Finished(r.run_id, r.spec, r.result);
  };
  callbacks.on_tick = [progress]() { progress->Tick(); };
  callbacks.on_note = [progress](const std::string& line) { progress->Note(line); };
  callbacks.on_remeasured = [progress](const RunRecord& r) { progress->Remeasured(r); };
  callbacks.on_quiet_wait = [times](double s) { times->quiet_wait_s += s; };
  return callbacks;
}

// Starts the zygote of `launcher` and prints its ready line and, when it compiles, the
// compiler's start-up line; the launcher's error when it does not start. Its seconds and
// the compiler's start-up go to `times`.
absl::Status StartZygote(ZygoteLauncher& launcher, const ZygoteOptions& zopts, SweepTimes* times) {
  double zygote_start = MonotonicSeconds();  // started here so no test's wall time includes it
  if (absl::Status s = launcher.Start(); !s.ok()) return s;
  times->zygote_s = MonotonicSeconds() - zygote_start;
  times->compiler_startup_s = launcher.compiler_startup_s();
  std::cerr << ZygoteReadyLine(*times->zygote_s, zopts.preload.size(),
                               launcher.import_failures().size());
  if (!zopts.compile_seed_dir.empty()) {
    std::cerr << CompilerStartupLine(launcher.compiler_startup_s(),
                                     launcher.compiler_startup_phases(),
                                     launcher.compiler_startup_error());
  }
  return absl::OkStatus();
}

// Removes the zygote's files: its log unless the run failed or it restarted, and the
// calibration's seed directories.
void RemoveZygoteFiles(const ZygoteOptions& zopts, bool keep_log) {
  std::error_code ec;
  if (!keep_log) fs::remove(zopts.log_path, ec);
  if (!zopts.compile_seed_dir.empty()) {
    fs::remove_all(zopts.compile_seed_dir, ec);
    fs::remove_all(zopts.compile_seed_dir + ".calibration", ec);
  }
}

// Runs the pending tests through a zygote; returns what ExecutePlan did.
SweepOutcome Execute(const SweepOptions& o, Prepared& p, Progress& progress, int* restarts,
                     SweepTimes* times) {
  auto limiter = MakeMemoryLimiter(p.pending.front().execution->mem_limit_method);
  if (!limiter.ok()) return BadInput(limiter.status());
  if (!o.cache_from.empty()) {
    if (absl::Status s = PullForSweep(o, p); !s.ok()) {
      return absl::IsInvalidArgument(s) ? BadInput(s) : Failed(s);
    }
  }
  absl::StatusOr<Guardian> guardian = Guardian::Start();
  if (!guardian.ok()) return Failed(guardian.status());
  absl::StatusOr<ZygoteOptions> zygote_options = ZygoteOptionsFor(p);
  if (!zygote_options.ok()) return BadInput(zygote_options.status());
  const ZygoteOptions& zopts = *zygote_options;
  ZygoteLauncher launcher(zopts, &*guardian);
  if (absl::Status s = StartZygote(launcher, zopts, times); !s.ok()) return Failed(s);
  absl::StatusOr<ExecuteOptions> execute_options = ExecuteOptionsFor(o, p, launcher, zopts);
  if (!execute_options.ok()) return BadInput(execute_options.status());
  const ExecuteOptions& eo = *execute_options;
  const ExecuteCallbacks callbacks = ProgressCallbacks(&progress, times);
  progress.ResetClock();  // elapsed and ETA count tests, not the zygote's start
  absl::Status run =
      ExecutePlan(p.pending, eo, &launcher, limiter->get(), &*guardian, p.store.get(), callbacks);
  progress.Close();
  *restarts = launcher.Restarts();
  RemoveZygoteFiles(zopts, !run.ok() || launcher.Restarts() != 0);
  if (absl::IsCancelled(run)) return {SweepEnd::kInterrupted, run};
  if (!run.ok()) return Failed(run);
  return {};
}

}  // namespace

SweepOutcome Sweep(const SweepOptions& o) {
  if (absl::Status s = CheckRanges(o); !s.ok()) return BadInput(s);
  if (absl::Status s = CheckCacheFrom(o); !s.ok()) return BadInput(s);
  SweepOutcome failure = {SweepEnd::kBadInput, absl::OkStatus()};
  absl::StatusOr<Prepared> prepared = o.resume               ? PrepareResume(o)
                                      : !o.plan_file.empty() ? PrepareFromPlanFile(o, &failure)
                                                             : PrepareNew(o, &failure);
  if (!prepared.ok()) return {failure.end, prepared.status()};
  Prepared& p = *prepared;
  Progress progress(stderr, isatty(fileno(stderr)) != 0, p.planned,
                    p.planned - static_cast<int64_t>(p.pending.size()));
  double start = MonotonicSeconds();
  int restarts = 0;
  SweepTimes times;
  if (!p.pending.empty()) {
    if (absl::StatusOr<std::string> loadavg = ReadFile("/proc/loadavg"); loadavg.ok()) {
      const std::string busy = BusyMachineLine(*loadavg, UsableCores());
      std::cerr << busy;
      if (!busy.empty()) progress.StartBusy();  // that line announced the first busy spell
    }
    SweepOutcome run = Execute(o, p, progress, &restarts, &times);
    if (run.end == SweepEnd::kInterrupted) {
      std::cerr << InterruptedLine(std::string(run.status.message()), progress.done(), p.planned,
                                   o.db, p.sweep_id);
    }
    if (run.end != SweepEnd::kDone) return run;
  }
  double wall = MonotonicSeconds() - start;
  if (!p.already_finished) {  // a resume of a complete sweep changes nothing
    if (absl::Status s = p.store->FinishSweep(p.sweep_id, UtcNowIso8601()); !s.ok()) {
      return Failed(s);
    }
  }
  RunFilter filter;
  filter.sweep_id = p.sweep_id;
  auto records = p.store->QueryRuns(filter);
  if (!records.ok()) return Failed(records.status());
  std::cout << SweepSummaryTable(*records);
  times.wall_s = wall;
  std::cerr << SweepTimeLine(times, *records);
  std::cerr << SweepFinishedLine(p.sweep_id, records->size(), wall, p.pending.size(), restarts);
  return {};
}

SweepOutcome SweepStacks(const SweepOptions& options, const std::vector<NamedInterpreter>& stacks) {
  SweepOutcome outcome;
  for (const NamedInterpreter& stack : stacks) {
    SweepOptions one = options;
    one.request.base.python = stack.python;
    one.request.base.stack = stack.stack;
    std::cerr << "stack " << stack.stack << ": " << stack.python << "\n";
    outcome = Sweep(one);
    if (outcome.end != SweepEnd::kDone) return outcome;
  }
  return outcome;
}

}  // namespace compatlab
