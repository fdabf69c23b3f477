// Planning an op sweep (doc/ops.md): the probe's op catalog (the installed
// torch's OpInfo database, `python -m compatlab_probe.ops.catalog`), the ops
// chosen from it by exact key, the target's exclusions, and the batches a test
// child runs. The catalog's JSON stays in op_plan.cc.
#ifndef COMPATLAB_OPS_OP_PLAN_H_
#define COMPATLAB_OPS_OP_PLAN_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/op_records.h"
#include "plan/catalog.h"
#include "plan/target.h"

namespace compatlab {

// The probe's op catalog: every op_db entry's key, in op_db's order.
struct OpCatalog {
  std::string torch_version;
  std::string python_version;
  std::vector<std::string> keys;
};

// The catalog answer parsed and checked (a JSON object with "torch_version" and
// "ops", each op an object with a "key" CheckOpKey accepts; at most
// kMaxCatalogOps ops, no key twice). InvalidArgument otherwise.
inline constexpr size_t kMaxCatalogOps = 20000;
absl::StatusOr<OpCatalog> ParseOpCatalog(std::string_view text);
// Runs the probe's op catalog command.
absl::StatusOr<OpCatalog> LoadOpCatalog(const ProbeEnv& env);

// Which ops of the catalog an op sweep takes.
struct OpSelection {
  std::vector<std::string> ops;  // exact keys; empty: every op of the catalog
  int64_t limit = 0;             // the first `limit` ops of those (0: all)
  int64_t shard = 0;             // shard `shard` of `shards` (by position, round robin)
  int64_t shards = 1;
};
// The selected keys in catalog order. InvalidArgument naming a key of `ops`
// that is not in the catalog (matched exactly, never as a substring), or a bad
// shard.
absl::StatusOr<std::vector<std::string>> SelectOps(const OpCatalog& catalog,
                                                   const OpSelection& selection);

// One test child's work: `keys` at `dtype`.
struct OpBatch {
  std::string dtype;
  std::vector<std::string> keys;
};
// The batches of `keys` at each of `dtypes`, at most `batch_size` keys each, in
// order; keys in `excluded` are left out (their cases are recorded without a
// run) unless `run_excluded`. REQUIRES: batch_size >= 1.
std::vector<OpBatch> MakeBatches(const std::vector<std::string>& keys,
                                 const std::vector<std::string>& dtypes, int64_t batch_size,
                                 const std::map<std::string, OpExclusion>& excluded,
                                 bool run_excluded);

// A target's exclusions by exact op key.
std::map<std::string, OpExclusion> ExclusionsByKey(const TargetProfile& profile);

// The skipped case of an excluded op (skip source target, kind exclude, the
// reason with its citation).
OpResult ExcludedCase(const std::string& op_sweep_id, const std::string& key,
                      const std::string& dtype, const OpExclusion& exclusion);

// (name, variant) of an op key checked by CheckOpKey.
std::pair<std::string, std::string> SplitOpKey(std::string_view key);

}  // namespace compatlab

#endif  // COMPATLAB_OPS_OP_PLAN_H_
