// File helpers in the leveldb manner: whole-file reads, and writes that go to a
// temporary file first and are renamed into place, so a reader never sees a
// half-written file.
#ifndef COMPATLAB_UTIL_FS_H_
#define COMPATLAB_UTIL_FS_H_

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace compatlab {

absl::StatusOr<std::string> ReadFile(const std::filesystem::path& path);

// Writes `contents` to `path` atomically (temporary file in the same
// directory, fsync, rename).
absl::Status WriteFileAtomic(const std::filesystem::path& path, std::string_view contents);

// Stems of the *.json files directly in `dir`, sorted ("smoke" for
// smoke.json): the names of the data files (suites, target profiles). Empty
// when `dir` cannot be read.
std::vector<std::string> JsonFileStems(const std::filesystem::path& dir);

// Directory holding the running executable's source tree resources: the value
// of $COMPATLAB_HOME if set, else the first ancestor of the executable's
// directory that holds suites/ and probe/.
std::filesystem::path ProjectHome();

}  // namespace compatlab

#endif  // COMPATLAB_UTIL_FS_H_
