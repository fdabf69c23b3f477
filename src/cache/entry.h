// A compile-store entry (doc/compile-cache.md): a directory named by the SHA-256 of its
// key.json, holding key.json (the key's readable parts), entry.json (the manifest: every
// other file's path, size and SHA-256), artifacts.bin (torch.compiler.save_cache_artifacts),
// kernels/ (the compiled kernels) and, when the child captured inductor's own cache-key
// details, fx_graph_details.json (graph_details.h). Every entry is data from outside until
// checked here: bounded, its names and paths checked, its content against its digests.
#ifndef COMPATLAB_CACHE_ENTRY_H_
#define COMPATLAB_CACHE_ENTRY_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "cache/graph_details.h"

namespace compatlab::cache {

inline constexpr std::string_view kKeyFile = "key.json";
inline constexpr std::string_view kManifestFile = "entry.json";
inline constexpr int kEntryFormat = 1;
// Bounds on one entry (doc/limits.md).
inline constexpr int64_t kMaxKeyBytes = int64_t{64} << 10;
inline constexpr int64_t kMaxManifestBytes = int64_t{1} << 20;
inline constexpr size_t kMaxEntryFiles = 4096;
inline constexpr int64_t kMaxEntryBytes = int64_t{2} << 30;
inline constexpr size_t kMaxKeyParts = 32;

// A key: its parts by name ("torch" -> "2.13.0+cpu").
using KeyParts = std::map<std::string, std::string>;

struct EntryFile {
  std::string path;  // relative: artifacts.bin, fx_graph_details.json or kernels/XX/NAME
  int64_t bytes = 0;
  std::string sha256;
};

struct Entry {
  std::string id;  // the SHA-256 of key.json's bytes
  KeyParts key;
  std::vector<EntryFile> files;
  std::map<std::string, int64_t> artifacts;  // torch's artifact counts by cache
  int64_t created_unix = 0;
  int64_t bytes = 0;                          // every file, key and manifest included
  std::filesystem::file_time_type last_used;  // the manifest's mtime
};

// True when `name` is an entry's name: 64 lower-case hex digits.
bool IsEntryId(std::string_view name);

// The key parts of a key's JSON object text (every value a string; bounded).
absl::StatusOr<KeyParts> ParseKey(std::string_view json_text);

// Reads the key and manifest of the entry in `dir`, expected to be named `id`: both
// bounded and parsed, the key's digest checked against `id`, every listed path checked
// (artifacts.bin, fx_graph_details.json within kMaxGraphDetailsBytes, or kernels/XX/NAME);
// the listed files themselves are not read.
absl::StatusOr<Entry> ReadEntryHeader(const std::filesystem::path& dir, std::string_view id);

// ReadEntryHeader, and no file in `dir` besides the listed ones, no link; with
// `verify_content`, every file's size and SHA-256 too, and fx_graph_details.json parsed
// (ParseGraphDetails). An error names what is wrong.
absl::StatusOr<Entry> ReadEntry(const std::filesystem::path& dir, std::string_view id,
                                bool verify_content);

// The id of a staged entry in `dir` (the SHA-256 of its key.json), checked as ReadEntry
// checks it with its content.
absl::StatusOr<Entry> ReadStagedEntry(const std::filesystem::path& dir);

// The graph details (fx_graph_details.json) of the entry `entry` read from `dir`: bounded,
// its size and SHA-256 checked against the manifest, parsed. NotFound when the entry lists
// none (an entry kept before they were captured, or of a compile that captured none).
absl::StatusOr<GraphDetails> ReadGraphDetails(const std::filesystem::path& dir, const Entry& entry);

// The key parts of `key` and `other` that differ, in the key's order ("torch", ...), with
// parts only one of them has.
std::vector<std::string> DifferingParts(const KeyParts& key, const KeyParts& other);

}  // namespace compatlab::cache

#endif  // COMPATLAB_CACHE_ENTRY_H_
