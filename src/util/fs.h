// File helpers in the leveldb manner: whole-file reads, and writes that go to a
// temporary file first and are renamed into place, so a reader never sees a
// half-written file.
#ifndef COMPATLAB_UTIL_FS_H_
#define COMPATLAB_UTIL_FS_H_

#include <filesystem>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace compatlab {

absl::StatusOr<std::string> ReadFile(const std::filesystem::path& path);

// Writes `contents` to `path` atomically (temporary file in the same
// directory, fsync, rename).
absl::Status WriteFileAtomic(const std::filesystem::path& path, std::string_view contents);

// Directory holding the running executable's source tree resources: the value
// of $COMPATLAB_HOME if set, else the first ancestor of the executable's
// directory that holds suites/ and probe/.
std::filesystem::path ProjectHome();

}  // namespace compatlab

#endif  // COMPATLAB_UTIL_FS_H_
