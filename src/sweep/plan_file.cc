#include "sweep/plan_file.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <span>
#include <utility>

#include "absl/strings/numbers.h"
#include "core/limits.h"
#include "fmt/format.h"
#include "nlohmann/json.hpp"
#include "plan/plan.h"
#include "plan/strict_json.h"
#include "store/record_json.h"
#include "store/store.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/utf8.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

// The top-level keys of a plan file, in the order it is written.
constexpr std::string_view kPlanKeys[] = {"compatlab_plan", "plan_id", "suite", "shards", "tests"};
// The keys of one test entry, in the order it is written.
constexpr std::string_view kPlanTestKeys[] = {"shard", "cost_s", "cost", "test"};
// The longest suite name a plan file holds.
constexpr size_t kMaxPlanSuiteBytes = 256;

// Costs are written to the millisecond: the file reads the same wherever it was made.
double RoundCost(double seconds) { return std::round(seconds * 1000) / 1000; }

// InvalidArgument "<origin>: <what>".
absl::Status PlanError(const std::string& origin, const std::string& what) {
  return absl::InvalidArgumentError(fmt::format("{}: {}", origin, what));
}

// OK when `object` holds only `keys`, each of them.
absl::Status CheckKeys(const json& object, std::span<const std::string_view> keys,
                       const std::string& origin, const std::string& where) {
  for (const auto& [key, value] : object.items()) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      return PlanError(origin, fmt::format("{}: unknown key '{}'", where,
                                           EscapeControls(TruncateForDisplay(key, 64), false)));
    }
  }
  for (std::string_view key : keys) {
    if (!object.contains(std::string(key)))
      return PlanError(origin, fmt::format("{}: no '{}'", where, key));
  }
  return absl::OkStatus();
}

// One test entry of a plan file of `shards` shards.
absl::StatusOr<PlannedShardTest> ParsePlanTest(const json& entry, int64_t shards,
                                               const std::string& origin, size_t at) {
  const std::string where = fmt::format("tests[{}]", at);
  if (!entry.is_object()) return PlanError(origin, where + ": not an object");
  if (absl::Status s = CheckKeys(entry, kPlanTestKeys, origin, where); !s.ok()) return s;
  PlannedShardTest test;
  const json& shard = entry["shard"];
  if (!shard.is_number_integer() || shard.get<int64_t>() < 0 || shard.get<int64_t>() >= shards) {
    return PlanError(origin,
                     fmt::format("{}: shard must be an integer from 0 to {}", where, shards - 1));
  }
  test.shard = shard.get<int64_t>();
  const json& cost = entry["cost_s"];
  if (!cost.is_number() || !CheckDuration(cost.get<double>(), "cost_s", true).ok()) {
    return PlanError(origin,
                     fmt::format("{}: cost_s must be seconds from 0 to {}", where, kMaxDurationS));
  }
  test.cost_s = cost.get<double>();
  const json& from = entry["cost"];
  if (!from.is_string() || (from != "measured" && from != "estimated")) {
    return PlanError(origin, where + ": cost must be \"measured\" or \"estimated\"");
  }
  test.measured = from == "measured";
  if (!entry["test"].is_object()) return PlanError(origin, where + ": test is not an object");
  absl::StatusOr<ResolvedTest> resolved = PlannedTestFromJson(entry["test"].dump());
  if (!resolved.ok()) {
    return PlanError(origin,
                     fmt::format("{}: {}", where, std::string(resolved.status().message())));
  }
  if (!resolved->execution.has_value()) {
    return PlanError(origin, where + ": the test has no execution settings");
  }
  test.test = *std::move(resolved);
  return test;
}

// The header of a plan file: version, plan id, suite and shard count.
absl::Status ParsePlanHeader(const json& j, const std::string& origin, ShardedPlan& plan) {
  if (!j.is_object()) return PlanError(origin, "not a JSON object");
  if (absl::Status s = CheckKeys(j, kPlanKeys, origin, "the plan"); !s.ok()) return s;
  if (j["compatlab_plan"] != kPlanFileVersion) {
    return PlanError(origin,
                     fmt::format("not a compatlab plan file of version {}", kPlanFileVersion));
  }
  if (!j["plan_id"].is_string() || !j["suite"].is_string() || !j["tests"].is_array()) {
    return PlanError(origin, "plan_id and suite must be strings, tests an array");
  }
  plan.plan_id = j["plan_id"].get<std::string>();
  if (absl::Status s = CheckStoredId(plan.plan_id, "plan id"); !s.ok()) {
    return PlanError(origin, std::string(s.message()));
  }
  plan.suite = j["suite"].get<std::string>();
  if (plan.suite.size() > kMaxPlanSuiteBytes) {
    return PlanError(origin, fmt::format("suite is over {} bytes", kMaxPlanSuiteBytes));
  }
  const json& shards = j["shards"];
  if (!shards.is_number_integer() || shards.get<int64_t>() < 1 ||
      shards.get<int64_t>() > kMaxShards) {
    return PlanError(origin, fmt::format("shards must be an integer from 1 to {}", kMaxShards));
  }
  plan.shards = shards.get<int64_t>();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ShardSpec> ParseShardSpec(std::string_view text) {
  const size_t slash = text.find('/');
  ShardSpec shard;
  const bool parsed = slash != std::string_view::npos &&
                      absl::SimpleAtoi(std::string(text.substr(0, slash)), &shard.index) &&
                      absl::SimpleAtoi(std::string(text.substr(slash + 1)), &shard.count);
  if (!parsed || shard.count < 1 || shard.count > kMaxShards || shard.index < 0 ||
      shard.index >= shard.count) {
    return absl::InvalidArgumentError(
        fmt::format("--shard must be I/N with 1 <= N <= {} and 0 <= I < N (e.g. 0/3); got '{}'",
                    kMaxShards, TruncateForDisplay(text, 40)));
  }
  return shard;
}

absl::StatusOr<std::string> PlanId(const std::vector<ResolvedTest>& tests) {
  std::string text;
  for (const ResolvedTest& test : tests) {
    absl::StatusOr<std::string> line = PlannedTestToJson(test);
    if (!line.ok()) return line.status();
    text += *line;
    text += '\n';
  }
  return Sha256Hex(text);
}

std::string ShardKey(const TestSpec& spec) {
  return LoadSloTestId(spec).value_or(LoadBaseTestId(spec).value_or(spec.TestId()));
}

int64_t StableShardOf(const TestSpec& spec, int64_t count) {
  const std::string hex = Sha256Hex(ShardKey(spec));
  uint64_t value = 0;
  for (int i = 0; i < 16; ++i) {
    const char c = hex[static_cast<size_t>(i)];
    value = value * 16 + static_cast<uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
  }
  return static_cast<int64_t>(value % static_cast<uint64_t>(count));
}

double EstimatedCostS(const TestSpec& spec) {
  if (spec.IsHarness()) return 1;
  double seconds = 10;  // forward
  if (spec.kind == "generate" || spec.kind == "train") seconds = 20;
  if (spec.kind == "load") seconds = 60;
  if (spec.mode != kModeEager) seconds *= 3;  // compile and export: the compile's cost
  return seconds;
}

absl::StatusOr<std::map<std::string, double>> LoadCosts(const std::vector<fs::path>& dbs) {
  std::map<std::string, double> costs;
  for (const fs::path& db : dbs) {
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(db, OpenMode::kReadOnlyImmutable);
    if (!store.ok()) return store.status();
    absl::Status read = (*store)->ScanFields(
        {"test_id", "wall_s"}, 0, [&costs](int64_t, std::vector<FieldValue>& values) {
          const auto* id = std::get_if<std::string>(&values[0]);
          const auto* wall = std::get_if<double>(&values[1]);
          if (id != nullptr && wall != nullptr && CheckDuration(*wall, "wall_s", true).ok()) {
            costs[*id] = *wall;
          }
        });
    if (!read.ok()) return read;
  }
  return costs;
}

absl::StatusOr<ShardedPlan> PartitionPlan(std::vector<ResolvedTest> tests, const std::string& suite,
                                          int64_t shards,
                                          const std::map<std::string, double>& costs) {
  ShardedPlan plan;
  absl::StatusOr<std::string> id = PlanId(tests);
  if (!id.ok()) return id.status();
  plan.plan_id = *id;
  plan.suite = suite;
  plan.shards = shards;
  // Each group (ShardKey) goes to one shard as a whole: its cost is its tests' sum.
  std::map<std::string, double> group_cost;
  std::vector<std::string> keys;
  for (ResolvedTest& test : tests) {
    PlannedShardTest& t = plan.tests.emplace_back();
    auto found = costs.find(test.spec.TestId());
    t.measured = found != costs.end();
    t.cost_s = RoundCost(t.measured ? found->second : EstimatedCostS(test.spec));
    keys.push_back(ShardKey(test.spec));
    group_cost[keys.back()] += t.cost_s;
    t.test = std::move(test);
  }
  std::vector<std::pair<double, std::string>> order;  // (cost, key), the largest first
  for (const auto& [key, cost] : group_cost) order.emplace_back(cost, key);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  // (load so far, shard index): the least loaded shard first.
  std::set<std::pair<double, int64_t>> loads;
  for (int64_t s = 0; s < shards; ++s) loads.emplace(0.0, s);
  std::map<std::string, int64_t> shard_of;
  for (const auto& [cost, key] : order) {
    auto least = *loads.begin();
    loads.erase(loads.begin());
    shard_of[key] = least.second;
    loads.emplace(least.first + cost, least.second);
  }
  for (size_t i = 0; i < plan.tests.size(); ++i) plan.tests[i].shard = shard_of[keys[i]];
  return plan;
}

absl::StatusOr<std::string> PlanFileText(const ShardedPlan& plan) {
  ordered_json tests = ordered_json::array();
  for (const PlannedShardTest& t : plan.tests) {
    absl::StatusOr<std::string> test = PlannedTestToJson(t.test);
    if (!test.ok()) return test.status();
    ordered_json entry;
    entry["shard"] = t.shard;
    entry["cost_s"] = t.cost_s;
    entry["cost"] = t.measured ? "measured" : "estimated";
    entry["test"] = ordered_json::parse(*test);
    tests.push_back(std::move(entry));
  }
  ordered_json j;
  j["compatlab_plan"] = kPlanFileVersion;
  j["plan_id"] = plan.plan_id;
  j["suite"] = plan.suite;
  j["shards"] = plan.shards;
  j["tests"] = std::move(tests);
  // One test a line: a plan file diffs as its tests do.
  std::string text = "{\n";
  size_t key = 0;
  for (const auto& [name, value] : j.items()) {
    text += fmt::format("  {}: ", json(name).dump());
    if (name == "tests") {
      text += "[";
      for (size_t i = 0; i < value.size(); ++i) {
        text += fmt::format("{}\n    {}", i == 0 ? "" : ",", value[i].dump());
      }
      text += value.empty() ? "]" : "\n  ]";
    } else {
      text += value.dump();
    }
    text += ++key < j.size() ? ",\n" : "\n";
  }
  return text + "}\n";
}

absl::StatusOr<ShardedPlan> ParsePlanFile(const std::string& text, const std::string& origin) {
  absl::StatusOr<json> parsed = ParseStrictJson(text, origin);
  if (!parsed.ok()) return parsed.status();
  ShardedPlan plan;
  if (absl::Status s = ParsePlanHeader(*parsed, origin, plan); !s.ok()) return s;
  const json& tests = (*parsed)["tests"];
  if (static_cast<int64_t>(tests.size()) > kMaxImportRuns) {
    return PlanError(origin, fmt::format("more than {} tests", kMaxImportRuns));
  }
  std::set<std::string> seen;
  std::vector<ResolvedTest> resolved;
  for (size_t i = 0; i < tests.size(); ++i) {
    absl::StatusOr<PlannedShardTest> test = ParsePlanTest(tests[i], plan.shards, origin, i);
    if (!test.ok()) return test.status();
    if (!seen.insert(test->test.spec.TestId()).second) {
      return PlanError(
          origin, fmt::format("tests[{}]: test {} appears twice", i, test->test.spec.TestId()));
    }
    resolved.push_back(test->test);
    plan.tests.push_back(*std::move(test));
  }
  absl::StatusOr<std::string> id = PlanId(resolved);
  if (!id.ok()) return PlanError(origin, std::string(id.status().message()));
  if (*id != plan.plan_id) {
    return PlanError(origin, fmt::format("plan_id {} is not the id of the tests it lists ({}): "
                                         "the file was changed after `compatlab plan` wrote it",
                                         plan.plan_id, *id));
  }
  return plan;
}

absl::StatusOr<ShardedPlan> ReadPlanFile(const fs::path& path) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) {
    return absl::NotFoundError(
        fmt::format("cannot read plan file {}: {}", path.string(), ec.message()));
  }
  if (size > static_cast<uintmax_t>(kMaxPlanFileBytes)) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: the plan file is over {} bytes (doc/limits.md)", path.string(), kMaxPlanFileBytes));
  }
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  if (static_cast<int64_t>(text->size()) > kMaxPlanFileBytes) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: the plan file is over {} bytes (doc/limits.md)", path.string(), kMaxPlanFileBytes));
  }
  return ParsePlanFile(*text, path.string());
}

absl::StatusOr<ShardedPlan> WritePlan(const WritePlanOptions& options) {
  if (options.shards < 1 || options.shards > kMaxShards) {
    return absl::InvalidArgumentError(fmt::format("--shards must be from 1 to {}", kMaxShards));
  }
  absl::StatusOr<std::map<std::string, double>> costs = LoadCosts(options.cost_dbs);
  if (!costs.ok()) return costs.status();
  absl::StatusOr<ResolvedPlan> resolved = LoadPlan(options.request, options.home);
  if (!resolved.ok()) return resolved.status();
  absl::StatusOr<ShardedPlan> plan =
      PartitionPlan(std::move(resolved->tests), resolved->suite, options.shards, *costs);
  if (!plan.ok()) return plan.status();
  absl::StatusOr<std::string> text = PlanFileText(*plan);
  if (!text.ok()) return text.status();
  if (absl::Status s = WriteFileAtomic(options.out, *text); !s.ok()) {
    return absl::InternalError(std::string(s.message()));
  }
  return plan;
}

std::vector<ResolvedTest> ShardTests(const ShardedPlan& plan, int64_t shard) {
  std::vector<ResolvedTest> tests;
  for (const PlannedShardTest& t : plan.tests) {
    if (t.shard == shard) tests.push_back(t.test);
  }
  return tests;
}

std::vector<ShardLoad> ShardLoads(const ShardedPlan& plan) {
  std::vector<ShardLoad> loads(static_cast<size_t>(plan.shards));
  for (const PlannedShardTest& t : plan.tests) {
    ShardLoad& load = loads[static_cast<size_t>(t.shard)];
    ++load.tests;
    load.measured += t.measured ? 1 : 0;
    load.predicted_s += t.cost_s;
  }
  return loads;
}

}  // namespace compatlab
