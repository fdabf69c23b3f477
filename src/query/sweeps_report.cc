#include "query/sweeps_report.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "query/text_table.h"

namespace compatlab {
namespace {

// "I/N", or "-" for a sweep of a whole plan.
std::string ShardCell(const SweepInfo& sweep) {
  if (!sweep.shard.has_value() || !sweep.shards.has_value()) return "-";
  return fmt::format("{}/{}", *sweep.shard, *sweep.shards);
}

// A planned test of a plan: its spec and the shard that plans it.
struct PlanTest {
  TestSpec spec;
  std::string shard;
};

// What one plan id's sweeps planned and stored, over all of them.
struct PlanProgress {
  std::map<std::string, PlanTest> planned;  // by test id
  std::set<std::string> stored;
  int64_t sweeps = 0;
  int64_t shards = 0;             // the plan's shard count (0: not sharded)
  std::set<int64_t> shards_seen;  // the shards a sweep here runs
};

// "shard I/N: ..." for each shard of the plan no sweep here runs: its tests are unknown to this
// store, so they are not in the planned and missing counts.
std::string UnseenShardLines(const PlanProgress& progress) {
  std::string text;
  for (int64_t i = 0; i < progress.shards; ++i) {
    if (progress.shards_seen.count(i) > 0) continue;
    text += fmt::format(
        "shard {}/{}: no sweep of it here (its tests are not counted above: run it, or merge "
        "its store)\n",
        i, progress.shards);
  }
  return text;
}

// The report's lines for `plan_id`.
std::string PlanLines(const std::string& plan_id, const PlanProgress& progress) {
  std::vector<const std::pair<const std::string, PlanTest>*> missing;
  for (const auto& entry : progress.planned) {
    if (progress.stored.count(entry.first) == 0) missing.push_back(&entry);
  }
  std::string text = fmt::format("plan {}: {} sweeps, {} tests planned, {} stored, {} missing\n",
                                 plan_id, progress.sweeps, progress.planned.size(),
                                 progress.planned.size() - missing.size(), missing.size());
  TextTable table({{"shard", TextTable::kLeft},
                   {"missing test", TextTable::kLeft},
                   {"model", TextTable::kLeft},
                   {"kind", TextTable::kLeft},
                   {"mode", TextTable::kLeft},
                   {"target", TextTable::kLeft},
                   {"dtype", TextTable::kLeft}});
  for (size_t i = 0; i < missing.size() && i < kMaxListedMissing; ++i) {
    const auto& [test_id, test] = *missing[i];
    table.AddRow({test.shard, test_id, test.spec.model_id, test.spec.kind, test.spec.mode,
                  test.spec.target, test.spec.dtype});
  }
  text += UnseenShardLines(progress);
  if (!missing.empty()) text += table.Render();
  if (missing.size() > kMaxListedMissing) {
    text += fmt::format("... and {} more missing tests\n", missing.size() - kMaxListedMissing);
  }
  return text;
}

}  // namespace

absl::StatusOr<std::string> SweepsReport(Store& store) {
  absl::StatusOr<std::vector<SweepInfo>> sweeps = store.ListSweeps();
  if (!sweeps.ok()) return sweeps.status();
  TextTable table({{"sweep", TextTable::kLeft},
                   {"suite", TextTable::kLeft},
                   {"plan", TextTable::kLeft},
                   {"shard", TextTable::kLeft},
                   {"planned", TextTable::kRight},
                   {"stored", TextTable::kRight},
                   {"missing", TextTable::kRight},
                   {"finished", TextTable::kLeft}});
  std::vector<std::string> plan_order;
  std::map<std::string, PlanProgress> plans;
  for (const SweepInfo& sweep : *sweeps) {
    absl::StatusOr<std::vector<TestSpec>> planned = store.PlannedTests(sweep.sweep_id);
    if (!planned.ok()) return planned.status();
    absl::StatusOr<std::vector<TestSpec>> pending = store.PendingTests(sweep.sweep_id);
    if (!pending.ok()) return pending.status();
    table.AddRow({sweep.sweep_id, sweep.suite.empty() ? "-" : sweep.suite,
                  sweep.plan_id.empty() ? "-" : sweep.plan_id.substr(0, 12), ShardCell(sweep),
                  std::to_string(planned->size()),
                  std::to_string(planned->size() - pending->size()),
                  std::to_string(pending->size()), sweep.finished_at.value_or("no")});
    if (sweep.plan_id.empty()) continue;
    if (plans.count(sweep.plan_id) == 0) plan_order.push_back(sweep.plan_id);
    PlanProgress& progress = plans[sweep.plan_id];
    ++progress.sweeps;
    if (sweep.shard.has_value() && sweep.shards.has_value()) {
      progress.shards = std::max(progress.shards, *sweep.shards);
      progress.shards_seen.insert(*sweep.shard);
    }
    std::set<std::string> pending_ids;
    for (const TestSpec& spec : *pending) pending_ids.insert(spec.TestId());
    for (TestSpec& spec : *planned) {
      std::string test_id = spec.TestId();
      if (pending_ids.count(test_id) == 0) progress.stored.insert(test_id);
      progress.planned.try_emplace(std::move(test_id), PlanTest{std::move(spec), ShardCell(sweep)});
    }
  }
  std::string text = table.Render();
  for (const std::string& plan_id : plan_order) text += "\n" + PlanLines(plan_id, plans[plan_id]);
  return text;
}

}  // namespace compatlab
