// What the server remembers between requests: the knowledge base's matches
// (regular expressions, and the same errors recur) and /api/summary answers
// (a summary walks every matching run). Both are bounded and thread-safe.
#ifndef COMPATLAB_SERVER_CACHES_H_
#define COMPATLAB_SERVER_CACHES_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/records.h"
#include "query/error_kb.h"

namespace compatlab {

// The knowledge base's entry for a failure, remembered by its match subject.
class KnownErrorCache {
 public:
  static constexpr size_t kMaxEntries = 10000;  // then it starts again, empty

  // `kb`: null when the server has no knowledge base. REQUIRES: it outlives
  // the cache.
  explicit KnownErrorCache(const ErrorKnowledgeBase* kb) : kb_(kb) {}

  // The entry matching `result`'s status and signature; null for a pass, a
  // skip, no knowledge base, or no match.
  const KnownError* Find(const RunResult& result);

  size_t size() const;

 private:
  const ErrorKnowledgeBase* const kb_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, const KnownError*> known_;
};

// Response bodies by request (canonical parameters), each valid while the
// number of runs indexed is the one it was made for.
class SummaryCache {
 public:
  static constexpr size_t kMaxEntries = 64;         // then it starts again, empty
  static constexpr size_t kMaxMatrixEntries = 512;  // /api/matrix pages are many and small
  static constexpr size_t kMaxOpsEntries = 16;      // /api/ops answers are few and large

  explicit SummaryCache(size_t max_entries = kMaxEntries) : max_entries_(max_entries) {}

  // The body stored for `key` when it was made with `runs` runs indexed.
  std::optional<std::string> Find(const std::string& key, int64_t runs) const;
  void Put(const std::string& key, int64_t runs, std::string body);

 private:
  const size_t max_entries_;
  mutable std::mutex mu_;
  std::map<std::string, std::pair<int64_t, std::string>> bodies_;
};

}  // namespace compatlab

#endif  // COMPATLAB_SERVER_CACHES_H_
