// Why a compiled test did not hit the compile store (`compatlab cache explain RUN_ID`,
// doc/compile-cache.md): the run's own key (its stored compile_key) against the keys of
// the nearest entries, each differing part named with both values.
#ifndef COMPATLAB_CACHE_EXPLAIN_H_
#define COMPATLAB_CACHE_EXPLAIN_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cache/entry.h"
#include "core/records.h"

namespace compatlab::cache {

// How many of the nearest entries explain shows.
inline constexpr size_t kExplainedEntries = 3;

// The entries nearest `key`: those of its test first, then by how few parts differ; at most
// `limit`.
std::vector<const Entry*> NearestEntries(const KeyParts& key, const std::vector<Entry>& entries,
                                         size_t limit);

// The explanation of `run`'s compile against `entries` (of the store named `where`): the
// run's state and per-cache counts, then each nearest entry with its differing parts
// ("torch: 2.13.0+cpu here, 2.14.1 in the entry"), or that an entry has the run's very key
// (a miss there is graph-level). InvalidArgument when the run was not compiled or holds no
// compile key.
absl::StatusOr<std::string> ExplainRun(const RunRecord& run, const std::vector<Entry>& entries,
                                       const std::string& where);

}  // namespace compatlab::cache

#endif  // COMPATLAB_CACHE_EXPLAIN_H_
