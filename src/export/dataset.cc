#include "export/dataset.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <utility>

#include "export/parquet_runs.h"
#include "fmt/format.h"
#include "util/fs.h"

namespace compatlab {

namespace fs = std::filesystem;

std::string SafePathComponent(std::string_view version) {
  if (version.empty()) return "unknown";
  std::string safe;
  for (char c : version) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '+' || c == '-';
    safe += keep ? c : '_';
  }
  if (safe.front() == '.') safe.insert(safe.begin(), '_');
  return safe;
}

fs::path StackFilePath(const std::string& torch_version, const std::string& transformers_version) {
  return fs::path("torch-" + SafePathComponent(torch_version)) /
         ("transformers-" + SafePathComponent(transformers_version) + ".parquet");
}

absl::StatusOr<std::vector<ExportedFile>> ExportRuns(const std::vector<RunRecord>& runs,
                                                     const fs::path& dir) {
  std::map<fs::path, std::vector<RunRecord>> by_file;
  for (const RunRecord& run : runs) {
    by_file[StackFilePath(run.result.torch_version, run.result.transformers_version)].push_back(
        run);
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
  for (const auto& [path, bytes] : contents) {
    std::error_code error;
    fs::create_directories(path.parent_path(), error);
    if (error) {
      return absl::PermissionDeniedError(fmt::format("cannot create directory {}: {}",
                                                     path.parent_path().string(), error.message()));
    }
    if (absl::Status s = WriteFileAtomic(path, bytes); !s.ok()) return s;
  }
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
  for (const fs::path& file : files) {
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
