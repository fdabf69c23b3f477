#include "server/store_pool.h"

namespace compatlab {

StorePool::Lease::Lease(StorePool* pool, std::unique_ptr<Store> store)
    : pool_(pool), store_(std::move(store)) {}

StorePool::Lease::~Lease() {
  if (store_ == nullptr) return;  // moved from
  std::lock_guard lock(pool_->mu_);
  pool_->idle_.push_back(std::move(store_));
}

absl::StatusOr<StorePool::Lease> StorePool::Borrow() {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      std::unique_ptr<Store> store = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(store));
    }
  }
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(db_, OpenMode::kReadOnly);
  if (!store.ok()) return store.status();
  return Lease(this, *std::move(store));
}

size_t StorePool::idle() const {
  std::lock_guard lock(mu_);
  return idle_.size();
}

}  // namespace compatlab
