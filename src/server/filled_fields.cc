#include "server/filled_fields.h"

#include <mutex>

namespace compatlab {

namespace {

constexpr size_t kBits = 64;

}  // namespace

FilledFields::FilledFields(size_t fields) : fields_(fields) {}

std::optional<std::vector<size_t>> FilledFields::Union(const std::vector<int64_t>& rowids) const {
  Set all((fields_ + kBits - 1) / kBits, 0);
  {
    std::shared_lock lock(mu_);
    uint32_t last = UINT32_MAX;  // runs next to each other mostly share a set
    for (int64_t rowid : rowids) {
      auto it = run_sets_.find(rowid);
      if (it == run_sets_.end()) return std::nullopt;
      if (it->second == last) continue;
      last = it->second;
      const Set& set = sets_[last];
      for (size_t w = 0; w < all.size(); ++w) all[w] |= set[w];
    }
  }
  std::vector<size_t> fields;
  for (size_t i = 0; i < fields_; ++i) {
    if (all[i / kBits] >> (i % kBits) & 1) fields.push_back(i);
  }
  return fields;
}

void FilledFields::Learn(const std::vector<int64_t>& rowids,
                         const std::vector<std::vector<bool>>& filled) {
  std::vector<Set> sets;
  sets.reserve(filled.size());
  for (const std::vector<bool>& flags : filled) {
    Set set((fields_ + kBits - 1) / kBits, 0);
    for (size_t i = 0; i < fields_ && i < flags.size(); ++i) {
      if (flags[i]) set[i / kBits] |= uint64_t{1} << (i % kBits);
    }
    sets.push_back(std::move(set));
  }
  std::unique_lock lock(mu_);
  for (size_t r = 0; r < rowids.size() && r < sets.size(); ++r) {
    auto [it, added] = set_ids_.try_emplace(sets[r], static_cast<uint32_t>(sets_.size()));
    if (added) sets_.push_back(sets[r]);
    run_sets_[rowids[r]] = it->second;
  }
}

size_t FilledFields::runs() const {
  std::shared_lock lock(mu_);
  return run_sets_.size();
}

size_t FilledFields::sets() const {
  std::shared_lock lock(mu_);
  return sets_.size();
}

}  // namespace compatlab
