// Compile-store remotes (doc/compile-cache.md): a directory (a shared file system: NFS, EFS,
// FSx), a store of the local store's layout, or a Hub repository (`hub:ORG/NAME`) holding
// that layout, reached through huggingface_hub by the probe's helper
// (`python -m compatlab_probe.compile_hub`). Whatever comes from a remote is checked as a
// stranger's: each entry with its content against its digests before it is kept.
#ifndef COMPATLAB_CACHE_REMOTE_H_
#define COMPATLAB_CACHE_REMOTE_H_

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "cache/store.h"

namespace compatlab::cache {

struct Remote {
  enum class Kind { kDirectory, kHub };
  Kind kind = Kind::kDirectory;
  std::string location;  // the directory, or the Hub repository ORG/NAME
};

// The Python that runs the Hub helper, and the probe's directory (its PYTHONPATH).
struct HubHelper {
  std::string python;
  std::string probe_dir;
};

// `hub:ORG/NAME` (the id checked) or a directory path (not empty).
absl::StatusOr<Remote> ParseRemote(std::string_view text);
// The remote as a user writes it again: hub:ORG/NAME or the directory.
std::string RemoteName(const Remote& remote);

// Pushes the local store's entries that `want` accepts (null: all) and the remote lacks.
absl::StatusOr<CopyReport> Push(const std::filesystem::path& local, const Remote& remote,
                                const HubHelper& helper,
                                const std::function<bool(const Entry&)>& want);

// Pulls the remote's entries that `want` accepts (null: all) and the local store lacks,
// each checked with its content (a Hub remote's downloaded to a staging directory first).
absl::StatusOr<CopyReport> Pull(const Remote& remote, const std::filesystem::path& local,
                                const HubHelper& helper,
                                const std::function<bool(const Entry&)>& want);

// The remote's entries, read and bounded, their content not verified (`problems` as
// ListEntries'). A Hub remote's key and manifest files are downloaded into `scratch`.
absl::StatusOr<std::vector<Entry>> RemoteEntries(const Remote& remote, const HubHelper& helper,
                                                 const std::filesystem::path& scratch,
                                                 std::vector<std::string>* problems);

}  // namespace compatlab::cache

#endif  // COMPATLAB_CACHE_REMOTE_H_
