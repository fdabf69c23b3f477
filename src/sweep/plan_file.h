// A plan you can ship (doc/plan-file.md): `compatlab plan` resolves a sweep's
// plan once, partitions it into shards balanced by expected cost and writes
// it as a file; `sweep --plan FILE --shard I/N` runs one shard of it, on any
// machine, without planning again. The file travels: it is read bounded and
// strictly, and the code its tests name runs only as a stored plan's does on
// a resume (sweep/stored_trust.h).
#ifndef COMPATLAB_SWEEP_PLAN_FILE_H_
#define COMPATLAB_SWEEP_PLAN_FILE_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/resolved_test.h"
#include "sweep/resolve.h"

namespace compatlab {

// The most shards a plan is cut into.
inline constexpr int64_t kMaxShards = 10000;
// The largest plan file read.
inline constexpr int64_t kMaxPlanFileBytes = int64_t{256} << 20;
// The plan file format's version (its "compatlab_plan" key).
inline constexpr int kPlanFileVersion = 1;

// One shard of a plan: `index` from 0, of `count`.
struct ShardSpec {
  int64_t index = 0;
  int64_t count = 1;
};

// "I/N" with 1 <= N <= kMaxShards and 0 <= I < N; else InvalidArgument.
absl::StatusOr<ShardSpec> ParseShardSpec(std::string_view text);

// The id of a resolved plan: the SHA-256 (hex) of its tests' planned-test
// JSON (store/record_json.h, PlannedTestToJson), one line each, in plan order.
// Errors: PlannedTestToJson's.
absl::StatusOr<std::string> PlanId(const std::vector<ResolvedTest>& tests);

// What puts tests in one shard: kind load's group (its single_stream row's
// test id, else its offline row's: plan/plan.h, LoadSloTestId, LoadBaseTestId),
// which executes in order in one sweep; the test's own id for any other test.
std::string ShardKey(const TestSpec& spec);

// The shard of `spec` among `count` shards when no plan file assigns it: the
// first 8 bytes of the SHA-256 of its ShardKey as a big-endian integer,
// modulo `count`. Stable across machines. REQUIRES: count >= 1.
int64_t StableShardOf(const TestSpec& spec, int64_t count);

// A test without history: the documented estimate of its wall seconds by
// kind and mode (doc/plan-file.md, "Costs").
double EstimatedCostS(const TestSpec& spec);

// test id -> wall seconds of its latest stored run (runs.wall_s) in the
// stores at `dbs`, opened read-only and immutable (they may come from
// elsewhere); a later store's run replaces an earlier one's. Errors: a store
// that cannot be opened or read.
absl::StatusOr<std::map<std::string, double>> LoadCosts(
    const std::vector<std::filesystem::path>& dbs);

// A test of a plan file: the resolved test, its shard and expected cost.
struct PlannedShardTest {
  ResolvedTest test;
  int64_t shard = 0;
  double cost_s = 0;
  bool measured = false;  // cost_s from a stored run, else EstimatedCostS
};

// A resolved plan cut into shards.
struct ShardedPlan {
  std::string plan_id;
  std::string suite;
  int64_t shards = 1;
  std::vector<PlannedShardTest> tests;  // in plan order
};

// `tests` (of plan `suite`) cut into `shards` by longest-processing-time
// assignment: the groups of tests with one ShardKey by cost (the sum of their
// tests'), largest first (ties by key), each to the shard with the least cost
// so far (ties: the lowest index). A test's cost is its `costs` entry (by
// test id), else EstimatedCostS. Deterministic. Errors: PlanId's.
// REQUIRES: 1 <= shards <= kMaxShards.
absl::StatusOr<ShardedPlan> PartitionPlan(std::vector<ResolvedTest> tests, const std::string& suite,
                                          int64_t shards,
                                          const std::map<std::string, double>& costs);

// The plan file's text (doc/plan-file.md): the same plan gives the same
// bytes. Errors: a test whose JSON cannot be written (invalid UTF-8).
absl::StatusOr<std::string> PlanFileText(const ShardedPlan& plan);

// Inverse of PlanFileText, strict: every key known and of its type, a key
// never twice, at most kMaxShards shards and every test's shard below them,
// costs finite and in range, every test with its execution settings, no test
// id twice, and `plan_id` equal to PlanId of the tests read. InvalidArgument
// "<origin>: ..." otherwise.
absl::StatusOr<ShardedPlan> ParsePlanFile(const std::string& text, const std::string& origin);

// ParsePlanFile of the file at `path`, refused unread past kMaxPlanFileBytes.
// NotFound when it does not exist.
absl::StatusOr<ShardedPlan> ReadPlanFile(const std::filesystem::path& path);

// What `compatlab plan` writes: the plan of `request` cut into `shards`, with
// the costs of the stores `cost_dbs`, as the file `out`.
struct WritePlanOptions {
  PlanRequest request;
  std::filesystem::path home;  // the project home (suites/, targets/)
  int64_t shards = 1;
  std::vector<std::filesystem::path> cost_dbs;
  std::filesystem::path out;
};

// LoadPlan, LoadCosts, PartitionPlan and PlanFileText, written to `out`
// (write-then-rename); returns the plan written. Errors: LoadPlan's and
// LoadCosts' (Internal when the probe could not answer), shards out of
// range (InvalidArgument), a file that cannot be written (Internal).
absl::StatusOr<ShardedPlan> WritePlan(const WritePlanOptions& options);

// The tests of `shard`, in plan order.
std::vector<ResolvedTest> ShardTests(const ShardedPlan& plan, int64_t shard);

// What one shard of a plan is predicted to cost.
struct ShardLoad {
  int64_t tests = 0;
  int64_t measured = 0;  // tests whose cost came from a stored run
  double predicted_s = 0;
};

// The load of each shard of `plan`, by index.
std::vector<ShardLoad> ShardLoads(const ShardedPlan& plan);

}  // namespace compatlab

#endif  // COMPATLAB_SWEEP_PLAN_FILE_H_
