// `compatlab sweeps`: a store's sweeps with their plan, shard and progress,
// then each plan's planned, stored and missing tests over all its shards
// (doc/scale-out.md, "Progress").
#ifndef COMPATLAB_QUERY_SWEEPS_REPORT_H_
#define COMPATLAB_QUERY_SWEEPS_REPORT_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "store/store.h"

namespace compatlab {

// The most missing tests listed per plan; the rest are counted.
inline constexpr size_t kMaxListedMissing = 100;

// A table of every sweep of `store`, oldest first (id, suite, plan id's
// first 12 characters, shard I/N, planned, stored, missing, finished), then
// for each plan id one line of its tests (planned by any of its sweeps),
// stored (with a run in any of them: a retried shard's runs count once) and
// missing, and a line per missing test (its shard, test id, model, kind,
// mode, target, dtype), at most kMaxListedMissing of them. Errors: the store's.
absl::StatusOr<std::string> SweepsReport(Store& store);

}  // namespace compatlab

#endif  // COMPATLAB_QUERY_SWEEPS_REPORT_H_
