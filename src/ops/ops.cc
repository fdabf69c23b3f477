#include "ops/ops.h"

#include <unistd.h>

#include <algorithm>
#include <deque>
#include <iostream>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/error_signature.h"
#include "core/records.h"
#include "ops/op_lines.h"
#include "ops/op_report.h"
#include "runner/guardian.h"
#include "runner/memlimit.h"
#include "runner/supervisor.h"
#include "runner/zygote.h"
#include "store/store.h"
#include "util/hash.h"
#include "util/time.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;

// The module the zygote imports once for every op child (the OpInfo database).
constexpr const char* kOpDbModule = "torch.testing._internal.common_methods_invocations";
const std::set<std::string> kOpDtypes = {"float32", "float16", "bfloat16", "float64"};

absl::Status CheckOpsOptions(const OpsOptions& o) {
  if (o.mode != kModeEager && o.mode != kModeCompile) {
    return absl::InvalidArgumentError(
        absl::StrCat("--mode ", o.mode, ": ops take eager or compile"));
  }
  if (o.dtypes.empty()) return absl::InvalidArgumentError("--dtypes: none given");
  for (const std::string& d : o.dtypes) {
    if (!kOpDtypes.contains(d)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--dtypes ", d, ": ops take float32, float16, bfloat16, float64"));
    }
  }
  if (std::set<std::string>(o.dtypes.begin(), o.dtypes.end()).size() != o.dtypes.size()) {
    return absl::InvalidArgumentError("--dtypes: a dtype is given twice");
  }
  if (o.max_samples < 1 || o.max_samples > 1000) {
    return absl::InvalidArgumentError("--max-samples must be in 1..1000");
  }
  if (o.batch_size < 1 || o.batch_size > 1000) {
    return absl::InvalidArgumentError("--batch-size must be in 1..1000");
  }
  if (!(o.op_timeout_s >= 1 && o.op_timeout_s <= 3600)) {
    return absl::InvalidArgumentError("--op-timeout must be in 1..3600 seconds");
  }
  if (o.jobs < 1 || o.jobs > 64) return absl::InvalidArgumentError("--jobs must be in 1..64");
  if (o.selection.limit < 0) return absl::InvalidArgumentError("--limit must be >= 0");
  if (IsTargetProfilePath(o.target) && !o.allow_profile_paths) {
    return absl::InvalidArgumentError(
        absl::StrCat("--target ", o.target, ": a profile path needs --allow-profile-paths"));
  }
  return absl::OkStatus();
}

// The target profile, checked to take the mode; compile mode's backend.
absl::StatusOr<TargetProfile> OpsProfile(const OpsOptions& o) {
  absl::StatusOr<TargetProfile> profile = LoadTargetProfile(o.target, o.home / "targets");
  if (!profile.ok()) return profile.status();
  if (!profile->modes.empty() &&
      std::find(profile->modes.begin(), profile->modes.end(), o.mode) == profile->modes.end()) {
    return absl::InvalidArgumentError(absl::StrCat("target ", profile->name, " takes modes ",
                                                   absl::StrJoin(profile->modes, ", "), ", not ",
                                                   o.mode));
  }
  if (o.mode == kModeCompile && o.backend.empty() && profile->backend.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("target ", profile->name, " has no compile backend; give --backend"));
  }
  return profile;
}

std::string HostName() {
  char buf[256] = {};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

// A case of `key` at `dtype` that no op_case reported: `status` with `detail`.
OpResult UnreportedCase(const std::string& op_sweep_id, const std::string& key,
                        const std::string& dtype, const RunResult& batch) {
  OpResult r;
  r.op_sweep_id = op_sweep_id;
  std::tie(r.op, r.variant) = SplitOpKey(key);
  r.dtype = dtype;
  r.status = batch.status;
  r.detail = batch.status_detail.empty() ? batch.error_message : batch.status_detail;
  r.first_failure = batch.error_message.empty() ? r.detail : batch.error_message;
  r.error_type = batch.error_type;
  r.timed_out = batch.status == TestStatus::kTimeout ? 1 : 0;
  r.wall_s = batch.wall_s;
  if (IsFailureStatus(r.status)) r.signature = FailureSignature(batch);
  return r;
}

// The exclusion's skip on a case that ran anyway (check_skips), unless PyTorch's came first.
void MarkExcluded(OpResult* r, const std::map<std::string, OpExclusion>& excluded) {
  auto it = excluded.find(r->Key());
  if (it == excluded.end() || !r->skip_source.empty()) return;
  r->skip_source = kSkipSourceTarget;
  r->skip_kind = "exclude";
  r->skip_reason = absl::StrCat(it->second.reason, " (", it->second.citation, ")");
}

}  // namespace

BatchSettlement SettleBatch(const OpBatch& batch, const ExitFacts& facts,
                            const std::string& op_sweep_id,
                            const std::map<std::string, OpExclusion>& excluded) {
  BatchSettlement out;
  ExitFacts rest_facts = facts;
  absl::StatusOr<OpLines> lines = SplitOpLines(facts.result_text, batch.keys.size());
  if (lines.ok()) rest_facts.result_text = lines->rest;
  RunResult child = DecideStatus(rest_facts);
  if (!lines.ok()) {
    child.status = TestStatus::kHarnessError;
    child.status_detail = std::string(lines.status().message());
    child.error_message = child.status_detail;
    lines = OpLines{};
  }
  std::set<std::string> reported;
  const std::set<std::string> in_batch(batch.keys.begin(), batch.keys.end());
  for (OpResult& r : lines->cases) {
    if (!in_batch.contains(r.Key()) || reported.contains(r.Key())) continue;
    reported.insert(r.Key());
    r.op_sweep_id = op_sweep_id;
    r.dtype = batch.dtype;
    out.results.push_back(std::move(r));
  }
  const bool died = child.status != TestStatus::kPass;
  const bool started_any = !lines->last_started.empty();
  OpBatch rest{batch.dtype, {}};
  bool past_dead = false;
  for (const std::string& key : batch.keys) {
    if (reported.contains(key)) continue;
    if (!died || !started_any) {
      RunResult why = child;
      if (!died) {
        why.status = TestStatus::kHarnessError;
        why.status_detail =
            lines->bad_line.empty()
                ? "the child reported no result for this op"
                : absl::StrCat("the child's line for this op was refused (", lines->bad_line, ")");
        why.error_message = why.status_detail;
      }
      out.results.push_back(UnreportedCase(op_sweep_id, key, batch.dtype, why));
    } else if (!past_dead && key == lines->last_started) {
      out.results.push_back(UnreportedCase(op_sweep_id, key, batch.dtype, child));
      past_dead = true;
    } else if (past_dead) {
      rest.keys.push_back(key);
    } else {
      RunResult why = child;
      why.status = TestStatus::kHarnessError;
      why.status_detail = "the child skipped this op before it died";
      out.results.push_back(UnreportedCase(op_sweep_id, key, batch.dtype, why));
    }
  }
  for (OpResult& r : out.results) MarkExcluded(&r, excluded);
  if (!rest.keys.empty()) out.rest = std::move(rest);
  return out;
}

namespace {

// Everything a running op sweep needs.
struct OpRun {
  const OpsOptions* options;
  TargetProfile profile;
  std::map<std::string, OpExclusion> excluded;
  std::string op_sweep_id;
  Store* store;
  int64_t recorded = 0;
  int64_t planned = 0;
};

// The test job of `batch`: kind ops on the target and mode, the ops in kind_params.
TestJob MakeOpJob(const OpBatch& batch, const OpRun& run) {
  const OpsOptions& o = *run.options;
  TestJob job;
  job.run_id = RandomHex(16);
  job.spec.model_id = std::string(kHarnessModelId);
  job.spec.kind = "ops";
  job.spec.target = run.profile.name;
  job.spec.mode = o.mode;
  job.spec.backend =
      o.mode == kModeCompile ? (o.backend.empty() ? run.profile.backend : o.backend) : "";
  job.spec.dtype = batch.dtype;
  job.spec.kind_params = {{"ops", absl::StrJoin(batch.keys, ",")},
                          {"max_samples", std::to_string(o.max_samples)},
                          {"op_timeout_s", absl::StrCat(o.op_timeout_s)},
                          {"check_skips", o.check_skips ? "true" : "false"}};
  job.spec.timeout_s = o.op_timeout_s * static_cast<double>(batch.keys.size()) + kBatchStartS;
  job.target_profile_json = run.profile.json;
  if (o.mode == kModeCompile) job.compile_options_json = run.profile.compile_options_json;
  job.grace_s = o.grace_s;
  job.mem_limit_bytes = o.mem_limit_bytes;
  job.torch_num_threads = 1;
  job.compile_threads = 1;
  return job;
}

// One progress line for a settled batch.
std::string BatchLine(const OpRun& run, const OpBatch& batch, const BatchSettlement& s,
                      double wall_s) {
  OpCounts counts = CountOps(s.results);
  return absl::StrCat("[", run.recorded, "/", run.planned, "] ", batch.keys.size(), " ops at ",
                      batch.dtype, " (", batch.keys.front(), " .. ", batch.keys.back(),
                      "): ", CountsInline(counts), absl::StrFormat(" in %.1f s", wall_s),
                      s.rest ? absl::StrCat("; ", s.rest->keys.size(), " ops run again") : "",
                      "\n");
}

// Runs `batches` through `launcher`, storing each settled batch; Cancelled when interrupted.
absl::Status ExecuteBatches(std::deque<OpBatch> batches, OpRun& run, TestLauncher* launcher,
                            MemoryLimiter* limiter, Guardian* guardian) {
  Supervisor supervisor({}, launcher, limiter, guardian);
  if (absl::Status s = supervisor.Begin(); !s.ok()) return s;
  std::map<const TestJob*, std::pair<std::unique_ptr<TestJob>, OpBatch>> running;
  absl::Status failure;
  while (failure.ok() && (!batches.empty() || !running.empty())) {
    while (supervisor.interrupt_signal() == 0 &&
           static_cast<int>(running.size()) < run.options->jobs && !batches.empty()) {
      auto job = std::make_unique<TestJob>(MakeOpJob(batches.front(), run));
      const TestJob* key = job.get();
      running.emplace(key, std::make_pair(std::move(job), std::move(batches.front())));
      batches.pop_front();
      supervisor.Add(key);
    }
    if (absl::Status s = supervisor.DoWork(1.0); !s.ok()) failure = s;
    for (FinishedTest& f : supervisor.TakeFinished()) {
      auto it = running.find(f.job);
      const OpBatch& batch = it->second.second;
      BatchSettlement settled = SettleBatch(batch, f.facts, run.op_sweep_id, run.excluded);
      if (absl::Status s = run.store->InsertOpResults(settled.results); !s.ok()) failure = s;
      run.recorded += static_cast<int64_t>(settled.results.size());
      std::cerr << BatchLine(run, batch, settled, f.facts.wall_s);
      if (settled.rest) batches.push_front(*std::move(settled.rest));
      running.erase(it);
    }
    if (supervisor.interrupt_signal() != 0) {
      supervisor.KillAll();
      batches.clear();
      if (running.empty()) break;
    }
  }
  const int sig = supervisor.interrupt_signal();
  supervisor.End();
  if (!failure.ok()) return failure;
  if (sig != 0) return absl::CancelledError(absl::StrCat("interrupted by signal ", sig));
  return absl::OkStatus();
}

// The cases of excluded ops, stored without a run (none under check_skips).
absl::Status StoreExcluded(OpRun& run, const std::vector<std::string>& keys) {
  if (run.options->check_skips) return absl::OkStatus();
  std::vector<OpResult> cases;
  for (const std::string& dtype : run.options->dtypes) {
    for (const std::string& key : keys) {
      auto it = run.excluded.find(key);
      if (it != run.excluded.end())
        cases.push_back(ExcludedCase(run.op_sweep_id, key, dtype, it->second));
    }
  }
  run.recorded += static_cast<int64_t>(cases.size());
  return run.store->InsertOpResults(cases);
}

// The zygote and runner around ExecuteBatches.
absl::Status RunWithZygote(std::deque<OpBatch> batches, OpRun& run) {
  auto limiter = MakeMemoryLimiter("");
  if (!limiter.ok()) return limiter.status();
  absl::StatusOr<Guardian> guardian = Guardian::Start();
  if (!guardian.ok()) return guardian.status();
  ZygoteOptions zopts;
  zopts.python = run.options->probe.python;
  zopts.probe_dir = run.options->probe.probe_dir;
  zopts.preload_modules = {kOpDbModule};
  zopts.env["COMPATLAB_SWEEP_ID"] = run.op_sweep_id;
  ZygoteLauncher launcher(zopts, &*guardian);
  const double start = MonotonicSeconds();
  if (absl::Status s = launcher.Start(); !s.ok()) return s;
  std::cerr << absl::StrFormat("zygote ready in %.1f s (the OpInfo database imported once)\n",
                               MonotonicSeconds() - start);
  if (!launcher.import_failures().empty()) {
    return absl::FailedPreconditionError(absl::StrCat("the zygote cannot import ", kOpDbModule,
                                                      ": ",
                                                      launcher.import_failures().begin()->second));
  }
  return ExecuteBatches(std::move(batches), run, &launcher, limiter->get(), &*guardian);
}

}  // namespace

OpsOutcome RunOps(const OpsOptions& o) {
  auto bad = [](const absl::Status& s) { return OpsOutcome{OpsEnd::kBadInput, s, ""}; };
  if (absl::Status s = CheckOpsOptions(o); !s.ok()) return bad(s);
  absl::StatusOr<TargetProfile> profile = OpsProfile(o);
  if (!profile.ok()) return bad(profile.status());
  absl::StatusOr<OpCatalog> catalog = LoadOpCatalog(o.probe);
  if (!catalog.ok()) return {OpsEnd::kFailed, catalog.status(), ""};
  absl::StatusOr<std::vector<std::string>> keys = SelectOps(*catalog, o.selection);
  if (!keys.ok()) return bad(keys.status());
  if (keys->empty()) return bad(absl::InvalidArgumentError("no op selected"));
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(o.db, OpenMode::kReadWriteCreate);
  if (!store.ok()) return {OpsEnd::kFailed, store.status(), ""};
  OpRun run{&o, *profile, ExclusionsByKey(*profile), RandomHex(8), store->get()};
  run.planned = static_cast<int64_t>(keys->size() * o.dtypes.size());
  OpSweepInfo info;
  info.op_sweep_id = run.op_sweep_id;
  info.created_at = UtcNowIso8601();
  info.target = profile->name;
  info.mode = o.mode;
  info.backend = o.mode == kModeCompile ? (o.backend.empty() ? profile->backend : o.backend) : "";
  info.dtypes = absl::StrJoin(o.dtypes, ",");
  info.max_samples = o.max_samples;
  info.check_skips = o.check_skips;
  info.torch_version = catalog->torch_version;
  info.python_version = catalog->python_version;
  info.host = HostName();
  info.args = o.command_line;
  info.planned = run.planned;
  if (absl::Status s = run.store->CreateOpSweep(info); !s.ok()) return {OpsEnd::kFailed, s, ""};
  std::cerr << absl::StrFormat("op sweep %s: %d ops x %d dtypes on %s, mode %s (torch %s)\n",
                               run.op_sweep_id, keys->size(), o.dtypes.size(), profile->name,
                               o.mode, catalog->torch_version);
  const double start = MonotonicSeconds();
  absl::Status s = StoreExcluded(run, *keys);
  if (s.ok()) {
    std::vector<OpBatch> batches =
        MakeBatches(*keys, o.dtypes, o.batch_size, run.excluded, o.check_skips);
    s = RunWithZygote(std::deque<OpBatch>(batches.begin(), batches.end()), run);
  }
  if (absl::IsCancelled(s)) return {OpsEnd::kInterrupted, s, run.op_sweep_id};
  if (!s.ok()) return {OpsEnd::kFailed, s, run.op_sweep_id};
  if (absl::Status f = run.store->FinishOpSweep(run.op_sweep_id, UtcNowIso8601()); !f.ok()) {
    return {OpsEnd::kFailed, f, run.op_sweep_id};
  }
  absl::StatusOr<OpSweepInfo> stored = run.store->GetOpSweep(run.op_sweep_id);
  absl::StatusOr<std::vector<OpResult>> results = run.store->OpResults(run.op_sweep_id);
  if (!stored.ok() || !results.ok()) {
    return {OpsEnd::kFailed, stored.ok() ? results.status() : stored.status(), run.op_sweep_id};
  }
  std::cout << OpSweepReport(*stored, *results, MonotonicSeconds() - start);
  return {OpsEnd::kDone, absl::OkStatus(), run.op_sweep_id};
}

}  // namespace compatlab
