// Artifacts kept beside a store: a profiled run's gzip Chrome trace, named by
// its content (doc/results-schema.md, "Profile traces"). The row holds the
// digest and the size; the file is <store>.artifacts/<sha256>.json.gz.
#ifndef COMPATLAB_STORE_ARTIFACTS_H_
#define COMPATLAB_STORE_ARTIFACTS_H_

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace compatlab {

// The artifact directory of the store at `store_path`: "<store_path>.artifacts".
std::filesystem::path ArtifactDir(const std::filesystem::path& store_path);

struct KeptArtifact {
  std::string sha256;  // lower-case hex
  int64_t bytes = 0;
};

// Writes `data` (a gzip stream: it starts with gzip's magic bytes) into `dir`
// (created when missing) as <sha256>.json.gz, write-then-rename; an artifact of
// that digest already there is kept as it is. InvalidArgument when `data` is
// not gzip or holds more than `max_bytes`; the I/O error otherwise.
absl::StatusOr<KeptArtifact> StoreArtifact(const std::filesystem::path& dir, std::string_view data,
                                           int64_t max_bytes);

// StoreArtifact of the file `file` (at most `max_bytes`: a larger one is not
// read), which is removed either way.
absl::StatusOr<KeptArtifact> KeepArtifactFile(const std::filesystem::path& dir,
                                              const std::filesystem::path& file, int64_t max_bytes);

// The path of artifact `sha256` in `dir`. InvalidArgument unless `sha256` is
// 64 lower-case hex digits (a stored digest is untrusted: never a path as is).
absl::StatusOr<std::filesystem::path> ArtifactPath(const std::filesystem::path& dir,
                                                   std::string_view sha256);

}  // namespace compatlab

#endif  // COMPATLAB_STORE_ARTIFACTS_H_
