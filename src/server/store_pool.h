// The server's store connections: opened read-only on demand, lent to one
// request at a time and kept for the next. Thread-safe.
#ifndef COMPATLAB_SERVER_STORE_POOL_H_
#define COMPATLAB_SERVER_STORE_POOL_H_

#include <filesystem>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"
#include "store/store.h"

namespace compatlab {

class StorePool {
 public:
  // A connection lent to one request; back to the pool when it is destroyed.
  // REQUIRES: the pool outlives it.
  class Lease {
   public:
    Lease(StorePool* pool, std::unique_ptr<Store> store);
    Lease(Lease&&) = default;
    ~Lease();
    Store& operator*() { return *store_; }
    Store* operator->() { return store_.get(); }

   private:
    StorePool* pool_;
    std::unique_ptr<Store> store_;
  };

  // Opens nothing yet.
  explicit StorePool(std::filesystem::path db) : db_(std::move(db)) {}

  // An idle connection, else a new one (OpenMode::kReadOnly: never creates
  // the store). Errors: those of Store::Open.
  absl::StatusOr<Lease> Borrow();

  // Connections waiting to be lent.
  size_t idle() const;

 private:
  const std::filesystem::path db_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Store>> idle_;
};

}  // namespace compatlab

#endif  // COMPATLAB_SERVER_STORE_POOL_H_
