// What each run fills of a fixed list of fields, learned from reads: the
// server's run lists (search, model) leave out the fields none of their runs
// fill, and with what is learned they need not read those fields at all.
#ifndef COMPATLAB_SERVER_FILLED_FIELDS_H_
#define COMPATLAB_SERVER_FILLED_FIELDS_H_

#include <cstdint>
#include <optional>
#include <shared_mutex>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace compatlab {

// Which of a list of `fields` fields each run fills (holds a value that is
// not null and not empty text), by rowid. A run is never changed once stored
// (the store only appends runs), so what is learned of a run stays true.
// Thread-safe. Memory: a map entry per run learned (a 16-byte slot and a
// control byte, at a load of 7/16 to 7/8: 20 to 40 bytes) and each
// distinct set of fields once.
class FilledFields {
 public:
  explicit FilledFields(size_t fields);

  // The fields (ascending indices into the list) that at least one of
  // `rowids` fills; nullopt when any of them has not been learned.
  std::optional<std::vector<size_t>> Union(const std::vector<int64_t>& rowids) const;

  // Records that run rowids[i] fills the fields flagged in filled[i] (a flag
  // per field of the list). REQUIRES: rowids.size() == filled.size().
  void Learn(const std::vector<int64_t>& rowids, const std::vector<std::vector<bool>>& filled);

  // How many runs, and how many distinct sets of fields, were learned.
  size_t runs() const;
  size_t sets() const;

 private:
  using Set = std::vector<uint64_t>;  // a bit per field

  const size_t fields_;
  mutable std::shared_mutex mu_;
  absl::flat_hash_map<int64_t, uint32_t> run_sets_;  // rowid -> index into sets_
  std::vector<Set> sets_;
  absl::flat_hash_map<Set, uint32_t> set_ids_;
};

}  // namespace compatlab

#endif  // COMPATLAB_SERVER_FILLED_FIELDS_H_
