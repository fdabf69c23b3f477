#include "export/dataset.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <utility>

#include "core/limits.h"
#include "export/parquet_runs.h"
#include "fmt/format.h"
#include "util/fs.h"
#include "util/hash.h"

namespace compatlab {

namespace fs = std::filesystem;

namespace {

// Writes `contents` ({path under `dir`, bytes}) whole: every file is first
// written under a temporary directory (a sibling of `dir` when `dir` does not
// exist yet, then renamed into place at once; else one inside `dir`, whose
// files are renamed into place once all are written). A failure leaves `dir`
// as it was and removes the temporary directory.
absl::Status WriteExportFiles(const fs::path& dir,
                              const std::vector<std::pair<fs::path, std::string>>& contents) {
  const fs::path target = (dir / "").parent_path();  // "out/" and "out" alike
  std::error_code error;
  const bool existed = fs::exists(target, error);
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!existed) fs::create_directories(parent, error);
  const fs::path staging =
      existed ? target / (".compatlab-export-" + RandomHex(6))
              : parent / ("." + target.filename().string() + ".tmp-" + RandomHex(6));
  auto relative = [&target](const fs::path& path) {
    return path.lexically_normal().lexically_relative(target.lexically_normal());
  };
  auto fail = [&](const std::string& what) {
    std::error_code ignored;
    fs::remove_all(staging, ignored);
    return absl::PermissionDeniedError(what);
  };
  for (const auto& [path, bytes] : contents) {
    const fs::path staged = staging / relative(path);
    fs::create_directories(staged.parent_path(), error);
    if (error) {
      return fail(fmt::format("cannot create directory {}: {}", staged.parent_path().string(),
                              error.message()));
    }
    if (absl::Status s = WriteFileAtomic(staged, bytes); !s.ok()) {
      return fail(std::string(s.message()));
    }
  }
  if (!existed) {
    fs::rename(staging, target, error);
    if (error)
      return fail(fmt::format("cannot rename into {}: {}", target.string(), error.message()));
    return absl::OkStatus();
  }
  for (const auto& [path, bytes] : contents) {
    fs::create_directories(path.parent_path(), error);
    if (!error) fs::rename(staging / relative(path), path, error);
    if (error) return fail(fmt::format("cannot write {}: {}", path.string(), error.message()));
  }
  fs::remove_all(staging, error);
  return absl::OkStatus();
}

}  // namespace

std::string SafePathComponent(std::string_view version) {
  if (version.empty()) return "unknown";
  std::string safe;
  for (char c : version) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '+' || c == '-';
    safe += keep ? c : '_';
  }
  if (safe.front() == '.') safe.insert(safe.begin(), '_');
  // The hashed suffix keeps two long versions with a common prefix apart.
  constexpr size_t kHashChars = 16;
  if (safe.size() > kMaxPathComponentBytes) {
    safe.resize(kMaxPathComponentBytes - kHashChars - 1);
    safe += "-" + Sha256Hex(version).substr(0, kHashChars);
  }
  return safe;
}

fs::path StackFilePath(const std::string& torch_version, const std::string& transformers_version,
                       const std::string& stack_versions) {
  std::string stack;
  if (!stack_versions.empty() && stack_versions != "{}") {
    stack = "-stack-" + Sha256Hex(stack_versions).substr(0, 16);
  }
  return fs::path("torch-" + SafePathComponent(torch_version)) /
         ("transformers-" + SafePathComponent(transformers_version) + stack + ".parquet");
}

absl::StatusOr<std::vector<ExportedFile>> ExportRuns(const std::vector<RunRecord>& runs,
                                                     const fs::path& dir) {
  std::map<fs::path, std::vector<RunRecord>> by_file;
  for (const RunRecord& run : runs) {
    by_file[StackFilePath(run.result.torch_version, run.result.transformers_version,
                          run.result.stack_versions)]
        .push_back(run);
  }
  // Everything is encoded before the first file is written.
  std::vector<std::pair<fs::path, std::string>> contents;
  std::vector<ExportedFile> written;
  for (auto& [relative, file_runs] : by_file) {
    const int64_t count = static_cast<int64_t>(file_runs.size());
    absl::StatusOr<std::string> bytes = RunsToParquet(std::move(file_runs));
    if (!bytes.ok()) return bytes.status();
    contents.emplace_back(dir / relative, *std::move(bytes));
    written.push_back({dir / relative, count});
  }
  if (absl::Status s = WriteExportFiles(dir, contents); !s.ok()) return s;
  return written;
}

absl::StatusOr<std::vector<fs::path>> CollectParquetFiles(const std::vector<fs::path>& paths) {
  std::set<fs::path> files;
  for (const fs::path& path : paths) {
    std::error_code error;
    const fs::file_status status = fs::status(path, error);
    if (!fs::exists(status)) {
      return absl::NotFoundError(fmt::format("{}: no such file or directory", path.string()));
    }
    if (!fs::is_directory(status)) {
      files.insert(path.lexically_normal());
      continue;
    }
    for (auto it = fs::recursive_directory_iterator(path, error);
         !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
      if (it->is_regular_file() && it->path().extension() == ".parquet") {
        files.insert(it->path().lexically_normal());
      }
    }
    if (error) {
      return absl::PermissionDeniedError(
          fmt::format("{}: cannot list: {}", path.string(), error.message()));
    }
  }
  return std::vector<fs::path>(files.begin(), files.end());
}

ReadRunsResult ReadRunFiles(const std::vector<fs::path>& files) {
  ReadRunsResult result;
  std::map<std::string, size_t> file_of_run;  // run_id -> index in `files`
  int64_t text_bytes = 0;
  for (size_t index = 0; index < files.size(); ++index) {
    const fs::path& file = files[index];
    absl::StatusOr<std::string> bytes = ReadFile(file);
    if (!bytes.ok()) {
      result.rejected.push_back(absl::InvalidArgumentError(
          fmt::format("{}: {}", file.string(), std::string(bytes.status().message()))));
      continue;
    }
    absl::StatusOr<std::vector<RunRecord>> file_runs = RunsFromParquet(*bytes, file.string());
    if (!file_runs.ok()) {
      result.rejected.push_back(file_runs.status());
      continue;
    }
    absl::Status refused;
    for (const RunRecord& run : *file_runs) {
      auto [it, inserted] = file_of_run.emplace(run.run_id, index);
      if (!inserted) {
        refused = absl::InvalidArgumentError(
            fmt::format("{}: run {} is also in {}; a run_id may appear in one file only",
                        file.string(), run.run_id, files[it->second].string()));
        break;
      }
      text_bytes += CheckImportedRun(run).value_or(0);
    }
    if (refused.ok() && static_cast<int64_t>(file_of_run.size()) > kMaxImportRuns) {
      refused = absl::InvalidArgumentError(fmt::format(
          "{}: the import holds more than {} runs (doc/limits.md)", file.string(), kMaxImportRuns));
    }
    if (refused.ok() && text_bytes > kMaxImportBytes) {
      refused = absl::InvalidArgumentError(
          fmt::format("{}: the import's text is over {} bytes (doc/limits.md)", file.string(),
                      kMaxImportBytes));
    }
    if (!refused.ok()) {
      result.rejected.push_back(refused);
      continue;
    }
    ++result.files;
    std::move(file_runs->begin(), file_runs->end(), std::back_inserter(result.runs));
  }
  return result;
}

absl::StatusOr<ImportResult> ImportFiles(Store& store, const std::vector<fs::path>& files,
                                         const std::string& args) {
  return ImportFiles([&store]() -> absl::StatusOr<Store*> { return &store; }, files, args);
}

absl::StatusOr<ImportResult> ImportFiles(const std::function<absl::StatusOr<Store*>()>& open_store,
                                         const std::vector<fs::path>& files,
                                         const std::string& args) {
  ReadRunsResult read = ReadRunFiles(files);
  ImportResult result;
  result.rejected = std::move(read.rejected);
  result.files = read.files;
  result.runs_read = static_cast<int64_t>(read.runs.size());
  if (!result.rejected.empty()) return result;
  absl::StatusOr<Store*> store = open_store();
  if (!store.ok()) return store.status();
  absl::StatusOr<MergeStats> merged = (*store)->MergeRuns(read.runs, args);
  if (!merged.ok()) return merged.status();
  result.merged = *merged;
  return result;
}

}  // namespace compatlab
