#include "export/dataset.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <new>
#include <set>
#include <utility>

#include "core/limits.h"
#include "export/parquet_ops.h"
#include "export/parquet_runs.h"
#include "export/staging.h"
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
  // Messages name the user's directory, never the staging one.
  auto fail = [&](const std::string& what) {
    std::error_code ignored;
    fs::remove_all(staging, ignored);
    return absl::PermissionDeniedError(
        fmt::format("cannot write the export under {}: {}", dir.string(), what));
  };
  for (const auto& [path, bytes] : contents) {
    const fs::path staged = staging / relative(path);
    fs::create_directories(staged.parent_path(), error);
    if (error) return fail(error.message());
    if (absl::Status s = WriteFileAtomic(staged, bytes); !s.ok()) {
      const std::string message(s.message());  // "cannot ... <staged path>: <why>"
      const size_t why = message.rfind(": ");
      return fail(fmt::format("{}: {}", relative(path).string(),
                              why == std::string::npos ? message : message.substr(why + 2)));
    }
  }
  if (!existed) {
    fs::rename(staging, target, error);
    if (error) return fail(error.message());
    return absl::OkStatus();
  }
  for (const auto& [path, bytes] : contents) {
    fs::create_directories(path.parent_path(), error);
    if (!error) fs::rename(staging / relative(path), path, error);
    if (error) return fail(fmt::format("{}: {}", path.string(), error.message()));
  }
  fs::remove_all(staging, error);
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckExportDir(const fs::path& dir) {
  fs::path at = (dir / "").parent_path();
  if (at.empty()) at = ".";
  while (true) {
    std::error_code error;
    const fs::file_status status = fs::status(at, error);
    if (fs::exists(status)) {
      if (fs::is_directory(status)) return absl::OkStatus();
      return absl::InvalidArgumentError(
          fmt::format("--parquet {}: {} is not a directory; name a directory (created if missing)",
                      dir.string(), at == dir ? "it" : at.string()));
    }
    // Missing, or below a file (ENOTDIR): the ancestors say which.
    if (error && error != std::errc::no_such_file_or_directory &&
        error != std::errc::not_a_directory) {
      return absl::InvalidArgumentError(
          fmt::format("--parquet {}: {}: {}", dir.string(), at.string(), error.message()));
    }
    if (!at.has_parent_path() || at.parent_path() == at) return absl::OkStatus();
    at = at.parent_path();
  }
}

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
                                                     const fs::path& dir,
                                                     const std::vector<ExtraExportFile>& extra) {
  std::map<fs::path, std::vector<RunRecord>> by_file;
  for (const RunRecord& run : runs) {
    by_file[StackFilePath(run.result.torch_version, run.result.transformers_version,
                          run.result.stack_versions)]
        .push_back(run);
  }
  if (absl::Status s = CheckExportDir(dir); !s.ok()) return s;
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
  for (const ExtraExportFile& file : extra) contents.emplace_back(dir / file.path, file.bytes);
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
      // An op results file (export/parquet_ops.h) is the op import's, never a runs file.
      if (!path.filename().string().ends_with(kOpResultsFileSuffix)) {
        files.insert(path.lexically_normal());
      }
      continue;
    }
    for (auto it = fs::recursive_directory_iterator(path, error);
         !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
      if (it->is_regular_file() && it->path().extension() == ".parquet" &&
          !it->path().filename().string().ends_with(kOpResultsFileSuffix)) {
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

namespace {

// What the files staged so far hold together (doc/limits.md's import limits).
struct StagedTotals {
  int64_t runs = 0;
  int64_t text_bytes = 0;
};

// Stages the runs of `files[index]` (all or none), within the limits of the
// import across files. InvalidArgument "<file>: <why>" rejects the file
// (nothing of it staged); any other error ends the import.
absl::Status StageFile(ImportStaging& staging, const std::vector<fs::path>& files, size_t index,
                       const std::vector<std::pair<int64_t, size_t>>& first_rowids,
                       StagedTotals& totals, int64_t& rows) {
  const fs::path& file = files[index];
  absl::StatusOr<std::unique_ptr<ParquetRunReader>> reader = ParquetRunReader::Open(file);
  if (!reader.ok()) return reader.status();
  StagedTotals totals_here = totals;
  auto next = [&](std::vector<RunRecord>& batch) -> absl::Status {
    if (absl::Status s = (*reader)->Next(batch); !s.ok()) return s;
    for (const RunRecord& run : batch) totals_here.text_bytes += CheckImportedRun(run).value_or(0);
    totals_here.runs += static_cast<int64_t>(batch.size());
    if (totals_here.runs > kMaxImportRuns) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: the import holds more than {} runs (doc/limits.md)", file.string(), kMaxImportRuns));
    }
    if (totals_here.text_bytes > kMaxImportBytes) {
      return absl::InvalidArgumentError(
          fmt::format("{}: the import's text is over {} bytes (doc/limits.md)", file.string(),
                      kMaxImportBytes));
    }
    return absl::OkStatus();
  };
  // A run_id staged already: earlier in this file, or in an earlier file.
  auto on_stored = [&](const RunRecord& run, int64_t rowid) -> absl::Status {
    auto later = std::upper_bound(first_rowids.begin(), first_rowids.end(),
                                  std::make_pair(rowid, files.size()));
    const size_t other = std::prev(later)->second;
    if (other == index) {
      return absl::InvalidArgumentError(
          fmt::format("{}: run {} appears twice", file.string(), run.run_id));
    }
    return absl::InvalidArgumentError(
        fmt::format("{}: run {} is also in {}; a run_id may appear in one file only", file.string(),
                    run.run_id, files[other].string()));
  };
  absl::StatusOr<MergeStats> staged = staging.Stage(next, file.string(), on_stored);
  if (!staged.ok()) return staged.status();
  totals = totals_here;
  rows = (*reader)->rows_read();
  return absl::OkStatus();
}

absl::StatusOr<ImportResult> StageAndMerge(
    const std::function<absl::StatusOr<Store*>()>& open_store, const std::vector<fs::path>& files,
    const std::string& args, const fs::path& staging_dir) {
  absl::StatusOr<std::unique_ptr<ImportStaging>> staging = ImportStaging::Create(staging_dir);
  if (!staging.ok()) return staging.status();
  ImportResult result;
  StagedTotals totals;
  std::vector<std::pair<int64_t, size_t>> first_rowids;  // (first staged rowid, file index)
  for (size_t index = 0; index < files.size(); ++index) {
    absl::StatusOr<int64_t> first = (*staging)->NextRowid();
    if (!first.ok()) return first.status();
    first_rowids.emplace_back(*first, index);
    int64_t rows = 0;
    absl::Status staged = StageFile(**staging, files, index, first_rowids, totals, rows);
    if (absl::IsInvalidArgument(staged)) {
      result.rejected.push_back(staged);
      first_rowids.pop_back();
      continue;
    }
    if (!staged.ok()) return staged;
    ++result.files;
    result.runs_read += rows;
  }
  if (!result.rejected.empty()) return result;
  absl::StatusOr<Store*> store = open_store();
  if (!store.ok()) return store.status();
  absl::StatusOr<MergeStats> merged = (*staging)->MergeInto(**store, args);
  if (!merged.ok()) return merged.status();
  result.merged = *merged;
  return result;
}

}  // namespace

absl::StatusOr<ImportResult> ImportFiles(Store& store, const std::vector<fs::path>& files,
                                         const std::string& args) {
  return ImportFiles([&store]() -> absl::StatusOr<Store*> { return &store; }, files, args,
                     store.path().parent_path());
}

absl::StatusOr<ImportResult> ImportFiles(const std::function<absl::StatusOr<Store*>()>& open_store,
                                         const std::vector<fs::path>& files,
                                         const std::string& args, const fs::path& staging_dir) {
  try {
    return StageAndMerge(open_store, files, args, staging_dir);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        "out of memory while importing (the process's memory limit is below what one batch of "
        "runs needs: doc/limits.md); nothing imported");
  }
}

}  // namespace compatlab
