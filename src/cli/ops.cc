#include "cli/ops.h"

#include <iostream>
#include <memory>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/common.h"
#include "ops/op_json.h"
#include "ops/op_report.h"
#include "store/store.h"
#include "util/fs.h"

namespace compatlab {
namespace {

void AddOpsRun(CLI::App& ops, OpsFlags& flags) {
  OpsRunFlags& f = flags.run;
  CLI::App* cmd = flags.run_cmd =
      ops.add_subcommand("run", "Run PyTorch's OpInfo database on a target and mode");
  cmd->add_option("--db", f.db, "SQLite store")->capture_default_str();
  cmd->add_option("--target", f.target, "target profile name (or a path)")->capture_default_str();
  cmd->add_flag("--allow-profile-paths", f.allow_profile_paths,
                "let --target name a profile file by path");
  cmd->add_option("--mode", f.mode, "eager, or compile with the target's backend")
      ->capture_default_str();
  cmd->add_option("--backend", f.backend, "compile mode: this backend instead of the profile's");
  cmd->add_option("--dtypes", f.dtypes, "float32, float16, bfloat16, float64")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--ops", f.ops, "only these ops, by exact key NAME or NAME:VARIANT")
      ->delimiter(',');
  cmd->add_option("--limit", f.limit, "only the first N ops of op_db (0: all)")
      ->capture_default_str();
  cmd->add_option("--shard", f.shard, "I/N: every N-th op from the I-th (0-based)");
  cmd->add_option("--max-samples", f.max_samples, "sample inputs per op and dtype")
      ->capture_default_str();
  cmd->add_option("--batch-size", f.batch_size, "ops per test child")->capture_default_str();
  cmd->add_option("--op-timeout", f.op_timeout_s, "seconds one op and dtype may take")
      ->capture_default_str();
  cmd->add_option("--jobs", f.jobs, "test children at once")->capture_default_str();
  cmd->add_flag("--check-skips", f.check_skips,
                "run skipped cases anyway and list the skips that now pass (stale)");
  cmd->add_option("--python", f.python, "interpreter that runs the probe");
}

void AddOpsShow(CLI::App& ops, OpsFlags& flags) {
  OpsShowFlags& f = flags.show;
  CLI::App* cmd = flags.show_cmd =
      ops.add_subcommand("show", "A stored op sweep's counts and its cases, most used first");
  cmd->add_option("--db", f.db, "SQLite store")->capture_default_str();
  cmd->add_option("--op-sweep", f.op_sweep, "op sweep id (default: the latest)");
  cmd->add_option("--category", f.categories,
                  "only cases of these categories (native, fallback, fail, error, timeout, "
                  "crash, skipped)")
      ->delimiter(',');
  cmd->add_option("--limit", f.limit, "at most N rows (0: all)")->capture_default_str();
  cmd->add_option("--format", f.format, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
}

void AddOpsDiff(CLI::App& ops, OpsFlags& flags) {
  OpsDiffFlags& f = flags.diff;
  CLI::App* cmd = flags.diff_cmd =
      ops.add_subcommand("diff", "Compare two op sweeps or torch versions, target and mode alike");
  cmd->add_option("--db", f.db, "SQLite store")->capture_default_str();
  cmd->add_option("--base-db", f.base_db, "the base side's store (default: --db)");
  cmd->add_option("--base", f.base, "an op sweep id, or torch=VERSION")->required();
  cmd->add_option("--head", f.head, "the same, for the side under test")->required();
  cmd->add_flag("--fail-on-regression", f.fail_on_regression,
                "exit 1 when an op that was supported fails now");
}

// "I/N" into the selection; InvalidArgument otherwise.
absl::Status ParseShard(const std::string& text, OpSelection* selection) {
  if (text.empty()) return absl::OkStatus();
  std::vector<std::string> parts = absl::StrSplit(text, '/');
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &selection->shard) ||
      !absl::SimpleAtoi(parts[1], &selection->shards) || selection->shards < 1 ||
      selection->shards > 10000 || selection->shard < 0 || selection->shard >= selection->shards) {
    return absl::InvalidArgumentError(absl::StrCat("--shard ", text, ": want I/N with 0 <= I < N"));
  }
  return absl::OkStatus();
}

int RunOpsRun(const OpsFlags& flags) {
  const OpsRunFlags& f = flags.run;
  OpsOptions o;
  o.db = f.db;
  o.home = ProjectHome();
  o.target = f.target;
  o.allow_profile_paths = f.allow_profile_paths;
  o.mode = f.mode;
  o.backend = f.backend;
  o.dtypes = f.dtypes;
  o.selection.ops = f.ops;
  o.selection.limit = f.limit;
  if (absl::Status s = ParseShard(f.shard, &o.selection); !s.ok()) return Fail(kExitBadInput, s);
  o.max_samples = f.max_samples;
  o.batch_size = f.batch_size;
  o.op_timeout_s = f.op_timeout_s;
  o.jobs = f.jobs;
  o.check_skips = f.check_skips;
  o.probe = ResolveProbeEnv(f.python);
  o.command_line = flags.command_line;
  OpsOutcome outcome = RunOps(o);
  switch (outcome.end) {
    case OpsEnd::kDone:
      return kExitOk;
    case OpsEnd::kBadInput:
      return Fail(kExitBadInput, outcome.status);
    case OpsEnd::kInterrupted:
      Fail(kExitInterrupted, outcome.status);
      return kExitInterrupted;
    case OpsEnd::kFailed:
      return Fail(kExitFailure, outcome.status);
  }
  return kExitFailure;
}

absl::StatusOr<std::unique_ptr<Store>> OpenReadOnly(const std::string& db) {
  return Store::Open(db, OpenMode::kReadOnly);
}

int RunOpsShow(const OpsShowFlags& f) {
  absl::StatusOr<std::unique_ptr<Store>> store = OpenReadOnly(f.db);
  if (!store.ok()) return Fail(ExitCodeOf(store.status()), store.status());
  OpTableOptions options;
  options.limit = f.limit;
  for (const std::string& name : f.categories) {
    absl::StatusOr<OpCategory> c = ParseOpCategory(name);
    if (!c.ok()) return Fail(kExitBadInput, c.status());
    options.categories.insert(*c);
  }
  absl::StatusOr<std::vector<OpSweepInfo>> sweeps = (*store)->ListOpSweeps();
  if (!sweeps.ok()) return Fail(kExitFailure, sweeps.status());
  if (sweeps->empty()) return Fail(kExitBadInput, absl::StrCat(f.db, ": no op sweep"));
  std::string id = f.op_sweep.empty() ? sweeps->back().op_sweep_id : f.op_sweep;
  absl::StatusOr<OpSweepInfo> sweep = (*store)->GetOpSweep(id);
  if (!sweep.ok()) return Fail(ExitCodeOf(sweep.status()), sweep.status());
  absl::StatusOr<std::vector<OpResult>> results = (*store)->OpResults(id);
  if (!results.ok()) return Fail(kExitFailure, results.status());
  absl::StatusOr<OpUsers> users = FallbackUsers(**store);
  if (!users.ok()) return Fail(kExitFailure, users.status());
  const std::vector<OpRow> rows = OpRows(*results, *users, options);
  if (f.format == "json") {
    std::cout << OpSweepReportJson(*sweep, CountOps(*results), rows)
                     .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";
    return kExitOk;
  }
  double wall_s = 0;
  for (const OpResult& r : *results) wall_s += r.wall_s;
  std::cout << OpSweepReport(*sweep, *results, wall_s);
  std::cout << OpTableText(rows);
  return kExitOk;
}

int RunOpsDiff(const OpsDiffFlags& f) {
  absl::StatusOr<std::unique_ptr<Store>> head_store = OpenReadOnly(f.db);
  if (!head_store.ok()) return Fail(ExitCodeOf(head_store.status()), head_store.status());
  std::unique_ptr<Store> base_owned;
  Store* base_store = head_store->get();
  if (!f.base_db.empty()) {
    absl::StatusOr<std::unique_ptr<Store>> opened = OpenReadOnly(f.base_db);
    if (!opened.ok()) return Fail(ExitCodeOf(opened.status()), opened.status());
    base_owned = *std::move(opened);
    base_store = base_owned.get();
  }
  absl::StatusOr<OpSidesDiff> diff = DiffOpSides(*base_store, f.base, **head_store, f.head);
  if (!diff.ok()) return Fail(ExitCodeOf(diff.status()), diff.status());
  std::cout << diff->text;
  const int64_t regressions = diff->regressions;
  return f.fail_on_regression && regressions > 0 ? kExitFailure : kExitOk;
}

}  // namespace

CLI::App* AddOpsCommand(CLI::App& app, OpsFlags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "ops", "Op coverage: PyTorch's OpInfo database on a target (run, show, diff)");
  cmd->require_subcommand(1);
  AddOpsRun(*cmd, flags);
  AddOpsShow(*cmd, flags);
  AddOpsDiff(*cmd, flags);
  return cmd;
}

int RunOpsCommand(const OpsFlags& flags) {
  if (flags.run_cmd != nullptr && *flags.run_cmd) return RunOpsRun(flags);
  if (flags.show_cmd != nullptr && *flags.show_cmd) return RunOpsShow(flags.show);
  if (flags.diff_cmd != nullptr && *flags.diff_cmd) return RunOpsDiff(flags.diff);
  return kExitBadInput;
}

}  // namespace compatlab
