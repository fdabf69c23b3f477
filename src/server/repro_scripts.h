// /api/repro's bounds (doc/api.md): each script is made by a Python process
// (src/repro), so answers are kept by run id (runs never change once stored)
// in a size-bounded cache, and at most kMaxGenerators processes run at once;
// a request past them is answered 503 at once instead of holding a worker
// thread that the other endpoints need.
#ifndef COMPATLAB_SERVER_REPRO_SCRIPTS_H_
#define COMPATLAB_SERVER_REPRO_SCRIPTS_H_

#include <atomic>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace compatlab {

class ReproScripts {
 public:
  static constexpr int kMaxGenerators = 2;                    // generator processes at once
  static constexpr size_t kMaxCacheBytes = size_t{16} << 20;  // bodies kept, all together
  static constexpr size_t kMaxBodyBytes = size_t{1} << 20;    // a larger body is not kept

  // A generator's place, held while it runs; given back when destroyed.
  class Slot {
   public:
    explicit Slot(std::atomic<int>* running) : running_(running) {}
    Slot(Slot&& other) noexcept : running_(other.running_) { other.running_ = nullptr; }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    Slot& operator=(Slot&&) = delete;
    ~Slot() {
      if (running_ != nullptr) running_->fetch_sub(1);
    }

   private:
    std::atomic<int>* running_;
  };

  explicit ReproScripts(int max_generators = kMaxGenerators, size_t max_bytes = kMaxCacheBytes)
      : max_generators_(max_generators), max_bytes_(max_bytes) {}

  // The answer kept for `run_id`, if any.
  std::optional<std::string> Find(const std::string& run_id) const;
  // Keeps `body` for `run_id` (not when over kMaxBodyBytes); when the cache
  // would hold more than its bound, it starts again, empty.
  void Put(const std::string& run_id, std::string body);
  // A generator's place; nullopt when max_generators run already.
  std::optional<Slot> TryStart();

  size_t bytes() const;
  int running() const { return running_.load(); }

 private:
  const int max_generators_;
  const size_t max_bytes_;
  std::atomic<int> running_{0};
  mutable std::mutex mu_;
  size_t bytes_ = 0;
  std::unordered_map<std::string, std::string> bodies_;
};

}  // namespace compatlab

#endif  // COMPATLAB_SERVER_REPRO_SCRIPTS_H_
