// Why a compiled test did not hit the compile store (`compatlab cache explain RUN_ID`,
// doc/compile-cache.md): the run's own key (its stored compile_key) against the keys of
// the nearest entries, each differing part named with both values; for a graph-level miss,
// inductor's own cache-key details of each graph (graph_details.h) against the entry's.
#ifndef COMPATLAB_CACHE_EXPLAIN_H_
#define COMPATLAB_CACHE_EXPLAIN_H_

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cache/entry.h"
#include "cache/graph_details.h"
#include "core/records.h"

namespace compatlab::cache {

// How many of the nearest entries explain shows.
inline constexpr size_t kExplainedEntries = 3;

// The entries nearest `key`: those of its test first, then by how few parts differ; at most
// `limit`.
std::vector<const Entry*> NearestEntries(const KeyParts& key, const std::vector<Entry>& entries,
                                         size_t limit);

// An entry's graph details, read from where the entries are (ReadGraphDetails); an error
// (NotFound: it has none) says why there are none to compare.
using DetailsReader = std::function<absl::StatusOr<GraphDetails>(const Entry&)>;

// The explanation of `run`'s compile against `entries` (of the store named `where`): the
// run's state and per-cache counts, then each nearest entry with its differing parts
// ("torch: 2.13.0+cpu here, 2.14.1 in the entry"), or that an entry has the run's very key
// (a miss there is graph-level). When the run missed FX graphs, each entry's graph details
// (`read`) against the run's own (its fx_graph_details): per graph of the run whose key the
// entry lacks, the nearest graph of the entry and the lines that differ
// ("inductor_config[max_autotune]: False here, True in the entry"), or why there are none to
// compare. InvalidArgument when the run was not compiled or holds no compile key.
absl::StatusOr<std::string> ExplainRun(const RunRecord& run, const std::vector<Entry>& entries,
                                       const std::string& where, const DetailsReader& read);

}  // namespace compatlab::cache

#endif  // COMPATLAB_CACHE_EXPLAIN_H_
