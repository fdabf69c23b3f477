#include "store/artifacts.h"

#include <system_error>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "util/fs.h"
#include "util/hash.h"

namespace compatlab {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kGzipMagic = "\x1f\x8b";
constexpr std::string_view kArtifactSuffix = ".json.gz";

bool IsSha256Hex(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

fs::path ArtifactDir(const fs::path& store_path) {
  return fs::path(store_path.string() + ".artifacts");
}

absl::StatusOr<KeptArtifact> StoreArtifact(const fs::path& dir, std::string_view data,
                                           int64_t max_bytes) {
  if (static_cast<int64_t>(data.size()) > max_bytes) {
    return absl::InvalidArgumentError(fmt::format(
        "profile trace of {} bytes, over the limit of {} (doc/limits.md)", data.size(), max_bytes));
  }
  if (!data.starts_with(kGzipMagic)) {
    return absl::InvalidArgumentError("profile trace is not a gzip stream");
  }
  KeptArtifact kept{Sha256Hex(data), static_cast<int64_t>(data.size())};
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        fmt::format("artifact directory {}: {}", dir.string(), ec.message()));
  }
  const fs::path path = dir / (kept.sha256 + std::string(kArtifactSuffix));
  if (fs::exists(path, ec)) return kept;
  if (absl::Status s = WriteFileAtomic(path, data); !s.ok()) return s;
  return kept;
}

absl::StatusOr<KeptArtifact> KeepArtifactFile(const fs::path& dir, const fs::path& file,
                                              int64_t max_bytes) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(file, ec);
  absl::StatusOr<KeptArtifact> kept = absl::NotFoundError(fmt::format("no file {}", file.string()));
  if (!ec && size > static_cast<uintmax_t>(max_bytes)) {
    kept = absl::InvalidArgumentError(fmt::format(
        "profile trace of {} bytes, over the limit of {} (doc/limits.md)", size, max_bytes));
  } else if (!ec) {
    absl::StatusOr<std::string> data = ReadFile(file);
    kept = data.ok() ? StoreArtifact(dir, *data, max_bytes) : data.status();
  }
  fs::remove(file, ec);
  return kept;
}

absl::StatusOr<fs::path> ArtifactPath(const fs::path& dir, std::string_view sha256) {
  if (!IsSha256Hex(sha256)) {
    return absl::InvalidArgumentError("a profile trace digest must be 64 lower-case hex digits");
  }
  return dir / (std::string(sha256) + std::string(kArtifactSuffix));
}

}  // namespace compatlab
