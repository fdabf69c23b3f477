// The compile store (doc/compile-cache.md): the local store under the project's home,
// size-bounded with least-recently-used eviction, and the copy of whole entries between
// stores (a directory remote is a store of the same layout). Each entry is copied into the
// destination's staging directory, checked there with its content against its digests,
// and renamed into entries/: atomic per entry, and a copy stopped half-way is resumed by
// copying what is still missing.
#ifndef COMPATLAB_CACHE_STORE_H_
#define COMPATLAB_CACHE_STORE_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cache/entry.h"

namespace compatlab::cache {

// The local store's default size bound (least recently used entries evicted past it).
inline constexpr int64_t kDefaultStoreMaxBytes = int64_t{20} << 30;
// At most this many entries are read from one store (doc/limits.md).
inline constexpr size_t kMaxStoreEntries = 100'000;

// The local store: $COMPATLAB_COMPILE_STORE if set, else .compile-store in the project's home.
std::filesystem::path LocalStoreDir();
// ROOT/entries: where a store's entries are, each a directory named by its id.
std::filesystem::path EntriesDir(const std::filesystem::path& root);

// The entries of the store at `root`, each read (not its content verified) and sorted by
// id; an unreadable or malformed one is left out and named in `problems` ("entry ID: why"),
// and its id (when its name is one) added to `malformed` (may be null).
std::vector<Entry> ListEntries(const std::filesystem::path& root,
                               std::vector<std::string>* problems,
                               std::vector<std::string>* malformed = nullptr);

// Moves the staged entry in `staged` (a child's, sweep/execute) into the store at `root`,
// checked with its content, replacing an older entry of the same key; then evicts least
// recently used entries past `max_bytes`. Returns its id.
absl::StatusOr<std::string> Keep(const std::filesystem::path& root,
                                 const std::filesystem::path& staged, int64_t max_bytes);

struct GcReport {
  int removed = 0;    // leftovers of stopped copies and malformed entries
  int evicted = 0;    // least recently used, past the bound
  int64_t bytes = 0;  // left in the store
  size_t entries = 0;
};

// Removes staging leftovers and malformed entries of the store at `root`, then evicts
// least recently used entries until the rest holds at most `max_bytes`.
GcReport Collect(const std::filesystem::path& root, int64_t max_bytes);

struct CopyReport {
  std::vector<std::string> copied;   // ids
  std::vector<std::string> present;  // ids the destination had
  std::vector<std::string> refused;  // "ID: why" (malformed, or content not its digest)
};

// Copies every entry of the store at `from` that the store at `to` lacks and `want`
// accepts (null: every one), each checked as Keep checks it. An error only when `to`
// cannot be written at all.
absl::StatusOr<CopyReport> CopyEntries(const std::filesystem::path& from,
                                       const std::filesystem::path& to,
                                       const std::function<bool(const Entry&)>& want);

}  // namespace compatlab::cache

#endif  // COMPATLAB_CACHE_STORE_H_
