#include "server/repro_scripts.h"

#include <utility>

namespace compatlab {

std::optional<std::string> ReproScripts::Find(const std::string& run_id) const {
  std::lock_guard lock(mu_);
  if (auto it = bodies_.find(run_id); it != bodies_.end()) return it->second;
  return std::nullopt;
}

void ReproScripts::Put(const std::string& run_id, std::string body) {
  const size_t size = run_id.size() + body.size();
  if (body.size() > kMaxBodyBytes || size > max_bytes_) return;
  std::lock_guard lock(mu_);
  if (bodies_.contains(run_id)) return;
  if (bytes_ + size > max_bytes_) {
    bodies_.clear();
    bytes_ = 0;
  }
  bytes_ += size;
  bodies_.emplace(run_id, std::move(body));
}

std::optional<ReproScripts::Slot> ReproScripts::TryStart() {
  if (running_.fetch_add(1) >= max_generators_) {
    running_.fetch_sub(1);
    return std::nullopt;
  }
  return Slot(&running_);
}

size_t ReproScripts::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

}  // namespace compatlab
