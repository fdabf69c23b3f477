#include "sweep/execute.h"

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <list>
#include <memory>
#include <set>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cache/store.h"
#include "core/blame.h"
#include "core/error_signature.h"
#include "core/limits.h"
#include "plan/plan.h"
#include "plan/target.h"
#include "query/noise_mark.h"
#include "runner/decide_status.h"
#include "runner/supervisor.h"
#include "store/artifacts.h"
#include "sweep/progress.h"
#include "util/hash.h"
#include "util/time.h"

namespace compatlab {

void MergeWarmResult(const RunResult& warm, RunResult* cold) {
  cold->warm_prepare_s = warm.prepare_s;
  cold->warm_cache_hits = warm.cache_hits;
  cold->warm_cache_misses = warm.cache_misses;
  if (warm.status != TestStatus::kPass && warm.status != TestStatus::kFailAccuracy) {
    cold->warm_state =
        absl::StrCat(std::string(kWarmStateFailedPrefix), std::string(TestStatusName(warm.status)));
    if (!warm.error_message.empty()) {
      absl::StrAppend(&cold->warm_state, " (", warm.error_message.substr(0, 200), ")");
    }
  } else if (warm.cache_hits.value_or(0) > 0) {
    cold->warm_state = kWarmStateWarm;
  } else {
    cold->warm_state = kWarmStateNoCacheHits;
  }
}

bool TakesCalibration(const TestSpec& spec, const std::string& target_profile_json) {
  if (!spec.IsCompiled() || spec.backend != "inductor") return false;
  if (target_profile_json.empty()) return true;
  absl::StatusOr<TargetProfile> profile = ParseTargetProfile(target_profile_json, spec.target);
  return profile.ok() && profile->device == "cpu";
}

int64_t ReductionRerunBudget(int64_t mem_limit_bytes, int64_t mem_available_bytes, int jobs) {
  if (mem_available_bytes < 0) return mem_limit_bytes;
  return std::min(mem_limit_bytes, mem_available_bytes / std::max(1, jobs));
}

void MergeRerunResult(const RunResult& rerun, RunResult* failed) {
  failed->rerun_status = std::string(TestStatusName(rerun.status));
  failed->rerun_error_signature = FailureSignature(rerun);
  failed->rerun_size = rerun.reduced.has_value() && *rerun.reduced == 0 ? "full" : "milder";
  failed->rerun_reduction = rerun.reduction;
}

namespace {

// The --profile fields of `from` into `to`: the profile stays with the trace it describes.
void CopyProfile(const RunResult& from, RunResult* to) {
  to->profile = from.profile;
  to->profile_calls = from.profile_calls;
  to->profile_median_s = from.profile_median_s;
  to->profile_compute_s = from.profile_compute_s;
  to->profile_copy_s = from.profile_copy_s;
  to->profile_fallback_s = from.profile_fallback_s;
  to->profile_framework_s = from.profile_framework_s;
  to->profile_idle_s = from.profile_idle_s;
  to->profile_top_ops = from.profile_top_ops;
  to->profile_top_lines = from.profile_top_lines;
  to->profile_fallback_ops = from.profile_fallback_ops;
  to->profile_trace_sha256 = from.profile_trace_sha256;
  to->profile_trace_bytes = from.profile_trace_bytes;
}

}  // namespace

void MergeRemeasureResult(const RunResult& again, RunResult* first) {
  auto keep_other = [](const RunResult& other, RunResult* row) {
    row->remeasure_other_steady_median_s = other.steady_median_s;
    row->remeasure_other_prepare_s = other.prepare_s;
    row->remeasure_other_noisy_reason = other.noisy_reason;
  };
  if (again.status != TestStatus::kPass) {
    first->remeasure_state =
        std::string(kRemeasureFailedPrefix) + std::string(TestStatusName(again.status));
    keep_other(again, first);
    return;
  }
  const bool quiet = !AnyNoisy(again);
  const bool faster = again.steady_median_s.has_value() &&
                      (!first->steady_median_s || *again.steady_median_s < *first->steady_median_s);
  if (!quiet && !faster) {  // noisy again and no faster: the first stays, still marked
    first->remeasure_state = std::string(kRemeasureStillNoisy);
    keep_other(again, first);
    return;
  }
  RunResult row = again;
  row.warm_state = first->warm_state;  // the first measurement's warm rerun stays the row's
  row.warm_prepare_s = first->warm_prepare_s;
  row.warm_cache_hits = first->warm_cache_hits;
  row.warm_cache_misses = first->warm_cache_misses;
  CopyProfile(*first, &row);  // so does its profile (a second measurement is not profiled)
  row.remeasure_state = std::string(quiet ? kRemeasureQuiet : kRemeasureStillNoisy);
  keep_other(*first, &row);
  *first = std::move(row);
}

namespace {

namespace fs = std::filesystem;

// MemAvailable of /proc/meminfo in bytes; -1 when it cannot be read.
int64_t MemAvailableBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kib * 1024;
  }
  return -1;
}

// Removes `dir` and what it holds, when it is not ""; errors ignored.
void RemoveDir(const std::string& dir) {
  if (dir.empty()) return;
  std::error_code ignored;
  fs::remove_all(dir, ignored);
}

// One planned test on its way: its job (cold, then warm) and the cold result
// a warm rerun waits with; a reduction rerun's job and the failed result it
// waits with.
struct Entry {
  const ResolvedTest* test = nullptr;
  TestJob job;
  std::optional<RunResult> cold;
  std::string cold_started_at;
  TestJob rerun_job;
  std::optional<RunResult> failed;
  std::string failed_started_at;
  // A noisy test held back to be measured again: its record's result and start, and the
  // job that measures it again.
  TestJob remeasure_job;
  std::optional<RunResult> held;
  std::string held_started_at;
};

// Where the child of run `run_id` writes its profile trace: <artifact_dir>/tmp/<run_id>.json.gz.
fs::path ProfileTracePath(const std::string& artifact_dir, const std::string& run_id) {
  return fs::path(artifact_dir) / "tmp" / (run_id + ".json.gz");
}

// The trace `job`'s child wrote, kept in `artifact_dir` by its digest (profile_trace_sha256
// and profile_trace_bytes); a trace that is missing, over kMaxProfileTraceBytes or not gzip
// is not kept, and its temporary file is removed either way.
void KeepProfileTrace(const TestJob& job, const std::string& artifact_dir, RunResult* result) {
  if (job.profile_trace_path.empty()) return;
  absl::StatusOr<KeptArtifact> kept =
      KeepArtifactFile(artifact_dir, job.profile_trace_path, kMaxProfileTraceBytes);
  if (!kept.ok()) return;
  result->profile_trace_sha256 = kept->sha256;
  result->profile_trace_bytes = kept->bytes;
}

// The supervisor's job for `test` as stored: its request, deadline, grace and memory limit.
TestJob MakeJob(const ResolvedTest& test, const ExecuteOptions& options) {
  const TestExecution& e = *test.execution;
  TestJob job;
  job.run_id = RandomHex(16);
  job.spec = test.spec;
  if (options.timeout_s) job.spec.timeout_s = *options.timeout_s;
  job.target_profile_json = e.target_profile_json;
  job.compile_options_json = e.compile_options_json;
  job.measure = e.measure;
  job.grace_s = options.grace_s.value_or(e.grace_s);
  job.mem_limit_bytes = options.mem_limit_bytes.value_or(e.mem_limit_bytes);
  // A reduced model is timed with one intra-op thread: its calls are too small to share, and
  // with two threads OpenMP's fork and join made most of a compiled call and varied with
  // whatever else the cores ran (doc/probe.md, "Steady state: threads"). Its compiler
  // still builds with the sweep's share of the cores.
  job.torch_num_threads = PlannedReduced(test.spec) ? 1 : options.torch_num_threads;
  job.compile_threads = options.torch_num_threads;
  if (test.spec.IsCompiled() && !options.compile_cache_root.empty()) {
    job.compile_cache_dir = (fs::path(options.compile_cache_root) / job.run_id).string();
    job.cache_phase = kCachePhaseCold;
    if (!options.compile_store_root.empty()) {
      job.compile_entry_out = job.compile_cache_dir + ".entry";
      if (options.load_from_store) {
        job.compile_store_dir = cache::EntriesDir(options.compile_store_root).string();
      }
    }
  }
  job.profile = e.profile;
  if (!e.profile.empty() && !options.artifact_dir.empty()) {
    job.profile_trace_path = ProfileTracePath(options.artifact_dir, job.run_id).string();
  }
  return job;
}

// The reduction rerun of `entry`'s test: its job at full size (or the milder
// reduction where full size does not fit `fit_bytes`), its own cache directory.
TestJob MakeRerunJob(const Entry& entry, const ExecuteOptions& options, int64_t fit_bytes) {
  TestJob job = MakeJob(*entry.test, options);
  job.profile.clear();  // the failed run's profile is the record's
  job.profile_trace_path.clear();
  job.spec.kind_params["size"] = "full";
  job.spec.kind_params["fit_bytes"] = std::to_string(std::max<int64_t>(1, fit_bytes));
  // A pass/fail check, not a timing: the sweep's share of the cores, never the one
  // thread MakeJob gives a reduced model (a full-size rerun on one thread times out).
  job.torch_num_threads = options.torch_num_threads;
  return job;
}

// The sweep's loop: what runs next, and what a finished test becomes.
class Executor {
 public:
  Executor(const std::vector<ResolvedTest>& tests, const ExecuteOptions& options,
           TestLauncher* launcher, MemoryLimiter* limiter, Guardian* guardian, Store* store,
           const ExecuteCallbacks& callbacks)
      : options_(options),
        limiter_(limiter),
        store_(store),
        callbacks_(callbacks),
        supervisor_({options.tail_bytes, options.limit_prefix}, launcher, limiter, guardian),
        remeasure_left_(options.remeasure_noisy) {
    for (const ResolvedTest& t : tests) {
      pending_.push_back({&t, LoadBaseTestId(t.spec), LoadSloTestId(t.spec)});
      if (IsLoadOffline(t.spec) || IsLoadSingleStream(t.spec)) {
        unfinished_group_rows_.insert(t.spec.TestId());
      }
    }
  }

  // Kind load: the bases and objectives of the groups whose offline and
  // single_stream rows the store holds already (a resume), read before anything runs.
  absl::Status ReadStoredLoadGroupRows();
  // Runs every test to its committed result (or until stopped); the first failure, or
  // Cancelled naming the signal that interrupted it.
  absl::Status Run();

 private:
  // A test not started yet, with its load group's offline test id (LoadBaseTestId) and
  // single_stream test id (LoadSloTestId), computed once: a waiting row is looked at on
  // every start.
  struct Pending {
    const ResolvedTest* test;
    std::optional<std::string> base;
    std::optional<std::string> slo;
  };
  bool Waits(const Pending& p) const {
    return (p.base && unfinished_group_rows_.count(*p.base)) ||
           (p.slo && unfinished_group_rows_.count(*p.slo));
  }
  // The first pending test that may start now (a load row waits for its group's
  // single_stream row, a server row also for its offline row), removed from pending_;
  // nullopt when none may.
  std::optional<Pending> TakeStartable();
  // Records what a load group's offline or single_stream row gives the group's other rows.
  void NoteLoadGroupRow(const RunRecord& record);
  void StartNext();
  void Start(TestJob* job);
  void OnFinished(FinishedTest finished);
  void Commit(Entry& entry, RunResult result, const std::string& started_at,
              const std::string& finished_at);
  // The record of a finished test, assembled (signature, blame, start-up, settings).
  RunRecord MakeRecord(const Entry& entry, RunResult result, const std::string& started_at,
                       const std::string& finished_at) const;
  // Stores `rec` (and what a load group's row gives its group); a store error stops the run.
  void Insert(const RunRecord& rec);
  // Whether `rec` (passed, noisy, not kind load, within options_.remeasure_noisy) is held
  // back to be measured again instead of stored now.
  bool HoldForRemeasure(Entry& entry, const RunRecord& rec);
  // Once nothing else is left: waits for the machine to be quiet (up to
  // options_.remeasure_wait_s), then measures the held tests again one at a time; when it
  // stays busy, stores them as they are (machine_busy).
  void StartRemeasure();
  // The wait for quiet, one poll (QuietNow: true once quiet), and its end when it stays busy.
  bool QuietNow();
  void StoreHeldAsBusy(double waited);
  void Note(const std::string& line) const {
    if (callbacks_.on_note) callbacks_.on_note(line);
  }
  // A finished result, its warm rerun folded in: rerun for its reduction, or committed.
  // A cold run's compile-store entry (its child wrote compile_entry_out) checked and kept
  // when the run `compiled` (pass or fail_accuracy), its compile_entry saying so; the
  // written directory removed either way.
  void KeepCompileEntry(const TestJob& job, bool compiled, RunResult* result) const;
  void Settle(Entry* entry, RunResult result, const std::string& started_at,
              const std::string& finished_at);
  void Stop(absl::Status status);
  // One turn of Run's loop: starts what may start, waits up to a second for the running
  // tests, settles what finished, ticks once a second; false once nothing is left to do.
  bool Turn(double* last_tick);
  // After the loop: the stopped run's waiting cache directories removed, the supervisor
  // ended; how the run ended (see Run).
  absl::Status End();
  bool Done() const {
    return supervisor_.running() == 0 &&
           (stopping_ || (pending_.empty() && warm_.empty() && reruns_.empty() && held_.empty()));
  }
  // Only held noisy tests are left: the wait for quiet (or their second measurement).
  bool OnlyHeldLeft() const {
    return !stopping_ && !held_.empty() && supervisor_.running() == 0 && pending_.empty() &&
           warm_.empty() && reruns_.empty();
  }

  const ExecuteOptions& options_;
  MemoryLimiter* limiter_;
  Store* store_;
  const ExecuteCallbacks& callbacks_;
  Supervisor supervisor_;
  std::vector<std::unique_ptr<Entry>> entries_;
  std::unordered_map<const TestJob*, Entry*> by_job_;
  std::deque<Entry*> warm_;                 // cold runs waiting for their warm rerun
  std::deque<Entry*> reruns_;               // failed reduced runs waiting for their reduction rerun
  std::deque<Entry*> held_;                 // noisy tests waiting to be measured again
  int remeasure_left_ = 0;                  // how many more may be held (options_.remeasure_noisy)
  std::optional<double> quiet_wait_start_;  // when the wait for quiet began
  bool remeasuring_ = false;                // the machine was found quiet: measuring again
  std::vector<FinishedTest> unstarted_;
  std::list<Pending> pending_;  // not started yet, in plan order
  // Kind load: the offline and single_stream rows still to record in this run, the
  // base of each group whose offline row passed (by the offline row's test id) and the
  // objective of each group whose single_stream row passed (by its test id).
  std::set<std::string> unfinished_group_rows_;
  std::unordered_map<std::string, LoadBase> load_bases_;
  std::unordered_map<std::string, LoadSlo> load_slos_;
  bool stopping_ = false;
  absl::Status stop_status_;
};

absl::Status Executor::Run() {
  if (absl::Status s = supervisor_.Begin(); !s.ok()) return s;
  double last_tick = MonotonicSeconds();
  while (Turn(&last_tick)) {
  }
  return End();
}

bool Executor::Turn(double* last_tick) {
  StartNext();
  StartRemeasure();
  // Waiting for quiet: poll twice a second (signals still stop the run).
  const double wait_s = supervisor_.running() > 0 ? 1.0 : OnlyHeldLeft() ? 0.5 : 0;
  if (absl::Status s = supervisor_.DoWork(wait_s); !s.ok()) Stop(s);
  if (supervisor_.interrupt_signal() != 0) Stop(absl::OkStatus());
  std::vector<FinishedTest> finished = supervisor_.TakeFinished();
  for (FinishedTest& f : unstarted_) finished.push_back(std::move(f));
  unstarted_.clear();
  for (FinishedTest& f : finished) OnFinished(std::move(f));
  if (double now = MonotonicSeconds(); callbacks_.on_tick && now - *last_tick >= 1.0) {
    *last_tick = now;
    callbacks_.on_tick();
  }
  return !finished.empty() || !Done();
}

absl::Status Executor::End() {
  for (Entry* e : warm_) RemoveDir(e->job.compile_cache_dir);  // a stopped run's
  for (Entry* e : reruns_) RemoveDir(e->rerun_job.compile_cache_dir);
  for (const auto& e : entries_) RemoveDir(e->remeasure_job.compile_cache_dir);
  supervisor_.End();
  if (!stop_status_.ok()) return stop_status_;
  if (int sig = supervisor_.interrupt_signal(); sig != 0) {
    return absl::CancelledError(absl::StrCat("interrupted by ", SignalName(sig)));
  }
  return absl::OkStatus();
}

absl::Status Executor::ReadStoredLoadGroupRows() {
  std::set<std::string> wanted;
  for (const Pending& p : pending_) {
    for (const std::optional<std::string>& row : {p.base, p.slo}) {
      if (row && !unfinished_group_rows_.count(*row)) wanted.insert(*row);
    }
  }
  for (const std::string& test_id : wanted) {
    RunFilter filter;
    filter.sweep_id = options_.sweep_id;
    filter.test_id = test_id;
    absl::StatusOr<std::vector<RunRecord>> runs = store_->QueryRuns(filter);
    if (!runs.ok()) return runs.status();
    for (const RunRecord& run : *runs) NoteLoadGroupRow(run);
  }
  return absl::OkStatus();
}

// An offline row gives its group its throughput, a single_stream row its objectives,
// when it passed.
void Executor::NoteLoadGroupRow(const RunRecord& record) {
  const bool offline = IsLoadOffline(record.spec);
  if (!offline && !IsLoadSingleStream(record.spec)) return;
  unfinished_group_rows_.erase(record.test_id);
  const RunResult& r = record.result;
  if (r.status != TestStatus::kPass) return;
  if (offline && r.load_requests_per_s.value_or(0) > 0) {
    load_bases_[record.test_id] = LoadBase{*r.load_requests_per_s, record.run_id};
  }
  if (!offline && r.load_slo_ttft_s.value_or(0) > 0 && r.load_slo_itl_s.value_or(0) > 0) {
    load_slos_[record.test_id] = LoadSlo{*r.load_slo_ttft_s, *r.load_slo_itl_s, record.run_id};
  }
}

std::optional<Executor::Pending> Executor::TakeStartable() {
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (Waits(*it)) continue;
    Pending startable = *it;
    pending_.erase(it);
    return startable;
  }
  return std::nullopt;
}

// Warm and reduction reruns first: their first results wait for them to be reported.
void Executor::StartNext() {
  while (!stopping_ && static_cast<int>(supervisor_.running()) < options_.jobs &&
         (!warm_.empty() || !reruns_.empty() || !pending_.empty())) {
    if (!reruns_.empty()) {
      Entry* entry = reruns_.front();
      reruns_.pop_front();
      Start(&entry->rerun_job);
      continue;
    }
    if (!warm_.empty()) {
      Entry* entry = warm_.front();
      warm_.pop_front();
      entry->job.cache_phase = kCachePhaseWarm;
      entry->job.profile.clear();  // the cold run's profile is the record's
      entry->job.profile_trace_path.clear();
      Start(&entry->job);
      continue;
    }
    const std::optional<Pending> next = TakeStartable();
    if (!next) return;  // load rows waiting for their group's single_stream or offline row
    auto entry = std::make_unique<Entry>();
    entry->test = next->test;
    entry->job = MakeJob(*next->test, options_);
    if (next->base) {
      if (auto it = load_bases_.find(*next->base); it != load_bases_.end()) {
        entry->job.load_base = it->second;
      }
    }
    if (next->slo) {
      if (auto it = load_slos_.find(*next->slo); it != load_slos_.end()) {
        entry->job.load_slo = it->second;
      }
    }
    by_job_[&entry->job] = entry.get();
    if (callbacks_.on_start) callbacks_.on_start(entry->job.run_id, entry->job.spec);
    Start(&entry->job);
    entries_.push_back(std::move(entry));
  }
}

void Executor::Start(TestJob* job) {
  const std::string& dir = job->compile_cache_dir;
  if (!dir.empty()) {
    std::error_code ec;
    if (job->cache_phase == kCachePhaseCold) fs::remove_all(dir, ec);
    fs::create_directories(dir, ec);
    if (!ec && job->cache_phase == kCachePhaseCold && !options_.compile_seed_dir.empty() &&
        TakesCalibration(job->spec, job->target_profile_json)) {
      fs::copy(options_.compile_seed_dir, dir, fs::copy_options::recursive, ec);
    }
    if (ec) {
      FinishedTest f{job, {}, UtcNowIso8601(), UtcNowIso8601()};
      f.facts.launch_error = absl::StrCat("compile cache directory ", dir, ": ", ec.message());
      f.facts.mem_limit_bytes = job->mem_limit_bytes;
      f.facts.mem_limit_method = limiter_->Method();
      unstarted_.push_back(std::move(f));
      return;
    }
  }
  supervisor_.Add(job);
}

void Executor::OnFinished(FinishedTest finished) {
  Entry* entry = by_job_.at(finished.job);
  if (stopping_) {  // a stopped run reports nothing more; its tests run again on resume
    RemoveDir(entry->job.compile_cache_dir);
    RemoveDir(entry->rerun_job.compile_cache_dir);
    RemoveDir(entry->remeasure_job.compile_cache_dir);
    RemoveDir(entry->job.profile_trace_path);
    return;
  }
  RunResult result = DecideStatus(finished.facts);
  if (finished.job == &entry->remeasure_job) {
    RemoveDir(entry->remeasure_job.compile_cache_dir);
    RunResult merged = *std::move(entry->held);
    entry->held.reset();
    MergeRemeasureResult(result, &merged);
    RunRecord rec =
        MakeRecord(*entry, std::move(merged), entry->held_started_at, finished.finished_at);
    if (callbacks_.on_remeasured) callbacks_.on_remeasured(rec);
    Insert(rec);
    return;
  }
  if (finished.job == &entry->rerun_job) {
    RemoveDir(entry->rerun_job.compile_cache_dir);
    RunResult failed = *std::move(entry->failed);
    MergeRerunResult(result, &failed);
    Commit(*entry, std::move(failed), entry->failed_started_at, finished.finished_at);
    return;
  }
  const bool compiled =
      result.status == TestStatus::kPass || result.status == TestStatus::kFailAccuracy;
  if (entry->job.cache_phase == kCachePhaseCold) KeepCompileEntry(entry->job, compiled, &result);
  if (entry->job.cache_phase == kCachePhaseCold && entry->test->execution->warm && compiled) {
    // The cold run's trace is the record's: kept now, before the warm rerun clears its path.
    KeepProfileTrace(entry->job, options_.artifact_dir, &result);
    entry->cold = std::move(result);
    entry->cold_started_at = finished.started_at;
    warm_.push_back(entry);  // the cache directory stays for the warm rerun
    return;
  }
  RemoveDir(entry->job.compile_cache_dir);
  std::string started_at = finished.started_at;
  if (entry->cold) {
    MergeWarmResult(result, &*entry->cold);
    result = *std::move(entry->cold);
    started_at = entry->cold_started_at;
  }
  Settle(entry, std::move(result), started_at, finished.finished_at);
}

void Executor::KeepCompileEntry(const TestJob& job, bool compiled, RunResult* result) const {
  if (job.compile_entry_out.empty()) return;
  if (compiled && result->compile_entry == kCompileEntryWritten) {
    absl::StatusOr<std::string> id = cache::Keep(options_.compile_store_root, job.compile_entry_out,
                                                 options_.compile_store_max_bytes);
    result->compile_entry = id.ok()
                                ? absl::StrCat(std::string(kCompileEntryKeptPrefix), *id)
                                : absl::StrCat("not kept: ", std::string(id.status().message()));
  }
  RemoveDir(job.compile_entry_out);
}

void Executor::Settle(Entry* entry, RunResult result, const std::string& started_at,
                      const std::string& finished_at) {
  result.error_signature = FailureSignature(result);
  if (options_.rerun_reduced && NeedsReductionRerun(entry->job.spec, result)) {
    const int64_t fit =
        ReductionRerunBudget(entry->job.mem_limit_bytes, MemAvailableBytes(), options_.jobs);
    entry->rerun_job = MakeRerunJob(*entry, options_, fit);
    by_job_[&entry->rerun_job] = entry;
    entry->failed = std::move(result);
    entry->failed_started_at = started_at;
    reruns_.push_back(entry);
    return;
  }
  Commit(*entry, std::move(result), started_at, finished_at);
}

// Assembles the record of a finished test; reports it and stores it, or holds it back to be
// measured again.
void Executor::Commit(Entry& entry, RunResult result, const std::string& started_at,
                      const std::string& finished_at) {
  const RunRecord rec = MakeRecord(entry, std::move(result), started_at, finished_at);
  if (callbacks_.on_finish) callbacks_.on_finish(rec);
  if (HoldForRemeasure(entry, rec)) return;
  Insert(rec);
}

RunRecord Executor::MakeRecord(const Entry& entry, RunResult result, const std::string& started_at,
                               const std::string& finished_at) const {
  RunRecord rec;
  rec.run_id = entry.job.run_id;
  rec.sweep_id = options_.sweep_id;
  rec.test_id = entry.job.spec.TestId();
  rec.spec = entry.job.spec;
  rec.result = std::move(result);
  rec.result.compile_options = entry.job.compile_options_json;
  rec.result.stack = options_.stack;
  rec.result.error_signature = FailureSignature(rec.result);  // once, here; stored, read everywhere
  rec.result.missing_packages = MissingPackagesText(rec.result);  // from error_message
  rec.result.blame = Blame(rec.result);                           // whose failure (core/blame.h)
  KeepProfileTrace(entry.job, options_.artifact_dir, &rec.result);
  if (TakesCalibration(rec.spec, entry.job.target_profile_json)) {
    rec.result.compiler_startup_s = options_.compiler_startup_s;
  }
  if (!rec.result.torch_num_threads.has_value() && !rec.spec.IsHarness()) {
    rec.result.torch_num_threads = entry.job.torch_num_threads;
  }
  rec.started_at = started_at;
  rec.finished_at = finished_at;
  rec.host = options_.host;
  rec.cpu_model = options_.cpu_model;
  rec.jobs = options_.jobs;
  rec.compatlab_version = COMPATLAB_VERSION;
  return rec;
}

void Executor::Insert(const RunRecord& rec) {
  if (absl::Status s = store_->InsertRun(rec); !s.ok()) {
    Stop(s);
    return;
  }
  NoteLoadGroupRow(rec);
}

bool Executor::HoldForRemeasure(Entry& entry, const RunRecord& rec) {
  if (remeasure_left_ <= 0 || rec.result.status != TestStatus::kPass || !AnyNoisy(rec.result) ||
      rec.spec.IsHarness() || rec.spec.kind == "load") {
    return false;  // kind load: its group's other rows wait for its figures
  }
  --remeasure_left_;
  entry.held = rec.result;
  entry.held_started_at = rec.started_at;
  held_.push_back(&entry);
  return true;
}

// The held tests as they are, when the machine stayed busy.
void Executor::StoreHeldAsBusy(double waited) {
  Note(absl::StrFormat(
      "compatlab: the machine stayed busy for %.0f s: %d %s noisy figures (marked %s; "
      "remeasure_state machine_busy)\n",
      waited, held_.size(), held_.size() == 1 ? "test keeps its" : "tests keep their", kNoisyMark));
  for (Entry* e : held_) {
    RunResult result = *std::move(e->held);
    e->held.reset();
    result.remeasure_state = std::string(kRemeasureMachineBusy);
    Insert(MakeRecord(*e, std::move(result), e->held_started_at, UtcNowIso8601()));
  }
  held_.clear();
}

// Whether the wait for quiet is over with a quiet machine (false: wait on, or it stayed busy
// and the held tests were stored).
bool Executor::QuietNow() {
  const double now = MonotonicSeconds();
  if (!quiet_wait_start_) {
    quiet_wait_start_ = now;
    Note(absl::StrFormat(
        "compatlab: %d noisy test%s to measure again once the machine is quiet (waiting up "
        "to %.0f s: --remeasure-wait-s)\n",
        held_.size(), held_.size() == 1 ? "" : "s", options_.remeasure_wait_s));
  }
  const bool quiet = options_.machine_quiet && options_.machine_quiet();
  const double waited = now - *quiet_wait_start_;
  if (!quiet && waited < options_.remeasure_wait_s) return false;  // wait on
  if (callbacks_.on_quiet_wait) callbacks_.on_quiet_wait(waited);
  if (!quiet) {
    StoreHeldAsBusy(waited);
    return false;
  }
  Note(absl::StrFormat("compatlab: the machine is quiet after %.0f s: measuring %d test%s again\n",
                       waited, held_.size(), held_.size() == 1 ? "" : "s"));
  return true;
}

void Executor::StartRemeasure() {
  if (!OnlyHeldLeft()) return;
  if (!remeasuring_) {
    remeasuring_ = QuietNow();
    if (!remeasuring_) return;
  }
  // One at a time: two at once would make each other noisy.
  Entry* entry = held_.front();
  held_.pop_front();
  entry->remeasure_job = MakeJob(*entry->test, options_);
  entry->remeasure_job.profile.clear();  // the first measurement's profile is the record's
  entry->remeasure_job.profile_trace_path.clear();
  by_job_[&entry->remeasure_job] = entry;
  Note(absl::StrCat("compatlab: measuring again: ", TestLabel(entry->job.spec), "\n"));
  Start(&entry->remeasure_job);
}

// Stops starting tests and kills the running ones; `status` (if not OK and
// the first) is what Run returns.
void Executor::Stop(absl::Status status) {
  if (!status.ok() && stop_status_.ok()) stop_status_ = status;
  stopping_ = true;
  supervisor_.KillAll();
}

}  // namespace

absl::Status ExecutePlan(const std::vector<ResolvedTest>& tests, const ExecuteOptions& options,
                         TestLauncher* launcher, MemoryLimiter* limiter, Guardian* guardian,
                         Store* store, const ExecuteCallbacks& callbacks) {
  for (const ResolvedTest& t : tests) {
    if (!t.execution.has_value()) {
      return absl::FailedPreconditionError(
          absl::StrCat("test ", t.spec.TestId(), " has no execution settings"));
    }
  }
  std::error_code ec;
  if (!options.compile_cache_root.empty()) fs::remove_all(options.compile_cache_root, ec);
  // Profile traces are written under <artifact_dir>/tmp (other sweeps of the store may share it).
  const fs::path trace_tmp = ProfileTracePath(options.artifact_dir, "x").parent_path();
  const bool traces = !options.artifact_dir.empty() &&
                      std::any_of(tests.begin(), tests.end(), [](const ResolvedTest& t) {
                        return !t.execution->profile.empty();
                      });
  if (traces) fs::create_directories(trace_tmp, ec);
  Executor executor(tests, options, launcher, limiter, guardian, store, callbacks);
  absl::Status status = executor.ReadStoredLoadGroupRows();
  if (status.ok()) status = executor.Run();
  if (!options.compile_cache_root.empty()) fs::remove_all(options.compile_cache_root, ec);
  if (traces) fs::remove(trace_tmp, ec);  // only when empty
  return status;
}

}  // namespace compatlab
