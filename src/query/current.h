// Which stored run is the current one: the one comparison order that `diff`,
// `diff --expected`/`--write-expected` and `matrix` (CLI and /api/matrix)
// share. A run is newer than another when it finished later; equal
// finish times are decided by started_at, then by run_id. Insertion order
// never counts: an import of older runs leaves the current run current.
// doc/dataset.md ("Current runs").
#ifndef COMPATLAB_QUERY_CURRENT_H_
#define COMPATLAB_QUERY_CURRENT_H_

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/records.h"

namespace compatlab {

// True when `a` is newer than `b`: greater finished_at, then started_at, then
// run_id (timestamps are UTC ISO 8601 text of one fixed format, so they
// compare as text).
bool IsNewerRun(const RunRecord& a, const RunRecord& b);

// The current run of each key: for each distinct key_of(run), the newest run
// (IsNewerRun), sorted by key. `key_of` returns a value with operator< and ==.
template <typename KeyOf>
std::vector<RunRecord> CurrentPerKey(std::vector<RunRecord> runs, KeyOf key_of) {
  std::sort(runs.begin(), runs.end(), [&key_of](const RunRecord& a, const RunRecord& b) {
    decltype(auto) ka = key_of(a);
    decltype(auto) kb = key_of(b);
    if (ka < kb) return true;
    if (kb < ka) return false;
    return IsNewerRun(a, b);  // newest first within a key
  });
  std::vector<RunRecord> current;
  for (RunRecord& run : runs) {
    if (current.empty() || !(key_of(current.back()) == key_of(run))) {
      current.push_back(std::move(run));
    }
  }
  return current;
}

// The current run of each test_id, sorted by test_id.
std::vector<RunRecord> LatestPerTest(std::vector<RunRecord> runs);

}  // namespace compatlab

#endif  // COMPATLAB_QUERY_CURRENT_H_
