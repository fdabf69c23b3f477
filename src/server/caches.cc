#include "server/caches.h"

#include "query/errors_report.h"

namespace compatlab {

const KnownError* KnownErrorCache::Find(const RunResult& result) {
  if (!kb_ || !IsFailureStatus(result.status)) return nullptr;
  const std::string& signature = result.error_signature;
  std::string subject = MatchSubject(TestStatusName(result.status), signature);
  std::lock_guard lock(mu_);
  if (auto it = known_.find(subject); it != known_.end()) return it->second;
  const KnownError* known = kb_->Match(TestStatusName(result.status), signature);
  if (known_.size() >= kMaxEntries) known_.clear();
  known_.emplace(std::move(subject), known);
  return known;
}

size_t KnownErrorCache::size() const {
  std::lock_guard lock(mu_);
  return known_.size();
}

std::optional<std::string> SummaryCache::Find(const std::string& key, int64_t runs) const {
  std::lock_guard lock(mu_);
  if (auto it = bodies_.find(key); it != bodies_.end() && it->second.first == runs) {
    return it->second.second;
  }
  return std::nullopt;
}

void SummaryCache::Put(const std::string& key, int64_t runs, std::string body) {
  std::lock_guard lock(mu_);
  if (bodies_.size() >= max_entries_) bodies_.clear();
  bodies_[key] = {runs, std::move(body)};
}

}  // namespace compatlab
