#include "cache/store.h"

#include <algorithm>
#include <cstdlib>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "util/fs.h"
#include "util/hash.h"

namespace compatlab::cache {
namespace fs = std::filesystem;

namespace {

fs::path StagingDir(const fs::path& root) { return root / "staging"; }

// Renames the checked entry `staged` to ENTRIES/ID, replacing an older one of that id.
absl::Status Install(const fs::path& root, const fs::path& staged, const std::string& id) {
  std::error_code ec;
  fs::create_directories(EntriesDir(root), ec);
  const fs::path dest = EntriesDir(root) / id;
  if (fs::exists(dest, ec)) {
    const fs::path old = StagingDir(root) / absl::StrCat(id, ".old.", RandomHex(6));
    fs::rename(dest, old, ec);
    if (ec)
      return absl::InternalError(
          absl::StrCat("cannot replace ", dest.string(), ": ", ec.message()));
    fs::remove_all(old, ec);
  }
  fs::rename(staged, dest, ec);
  if (ec)
    return absl::InternalError(
        absl::StrCat("cannot move the entry to ", dest.string(), ": ", ec.message()));
  fs::last_write_time(dest / kManifestFile, fs::file_time_type::clock::now(), ec);
  return absl::OkStatus();
}

// Copies the files of `entry` (in `from`) to a fresh staging directory of `to_root`.
absl::StatusOr<fs::path> StageCopy(const fs::path& from, const Entry& entry,
                                   const fs::path& to_root) {
  std::error_code ec;
  const fs::path staged = StagingDir(to_root) / absl::StrCat(entry.id, ".", RandomHex(6));
  fs::create_directories(staged, ec);
  if (ec)
    return absl::InternalError(absl::StrCat("cannot write ", staged.string(), ": ", ec.message()));
  std::vector<std::string> names = {std::string(kKeyFile), std::string(kManifestFile)};
  for (const EntryFile& f : entry.files) names.push_back(f.path);
  for (const std::string& name : names) {
    fs::create_directories((staged / name).parent_path(), ec);
    if (!ec) fs::copy_file(from / name, staged / name, fs::copy_options::overwrite_existing, ec);
    if (ec) {
      fs::remove_all(staged, ec);
      return absl::InternalError(absl::StrCat("cannot copy ", name, ": ", ec.message()));
    }
  }
  return staged;
}

}  // namespace

fs::path LocalStoreDir() {
  if (const char* dir = std::getenv("COMPATLAB_COMPILE_STORE"); dir != nullptr && *dir != '\0') {
    return fs::path(dir);
  }
  return ProjectHome() / ".compile-store";
}

fs::path EntriesDir(const fs::path& root) { return root / "entries"; }

std::vector<Entry> ListEntries(const fs::path& root, std::vector<std::string>* problems,
                               std::vector<std::string>* malformed) {
  std::vector<Entry> entries;
  std::error_code ec;
  size_t seen = 0;
  for (fs::directory_iterator it(EntriesDir(root), ec), end; !ec && it != end; it.increment(ec)) {
    if (++seen > kMaxStoreEntries) {
      problems->push_back(
          absl::StrCat("more than ", kMaxStoreEntries, " entries: the rest not read"));
      break;
    }
    const std::string name = it->path().filename().string();
    if (!IsEntryId(name) || !it->is_directory(ec) || it->is_symlink(ec)) {
      problems->push_back(absl::StrCat(name.substr(0, 80), ": not an entry (its name or kind)"));
      continue;
    }
    absl::StatusOr<Entry> entry = ReadEntry(it->path(), name, /*verify_content=*/false);
    if (!entry.ok()) {
      problems->push_back(std::string(entry.status().message()));
      if (malformed != nullptr) malformed->push_back(name);
      continue;
    }
    entries.push_back(*std::move(entry));
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.id < b.id; });
  return entries;
}

absl::StatusOr<std::string> Keep(const fs::path& root, const fs::path& staged, int64_t max_bytes) {
  absl::StatusOr<Entry> entry = ReadStagedEntry(staged);
  if (!entry.ok()) return entry.status();
  std::error_code ec;
  fs::create_directories(StagingDir(root), ec);
  // The staged directory may be on another file system: copied into the store's staging first.
  absl::StatusOr<fs::path> copy = StageCopy(staged, *entry, root);
  if (!copy.ok()) return copy.status();
  if (absl::Status s = Install(root, *copy, entry->id); !s.ok()) return s;
  fs::remove_all(staged, ec);
  Collect(root, max_bytes);
  return entry->id;
}

GcReport Collect(const fs::path& root, int64_t max_bytes) {
  GcReport report;
  std::error_code ec;
  for (fs::directory_iterator it(StagingDir(root), ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code rm;
    fs::remove_all(it->path(), rm);
    ++report.removed;
  }
  std::vector<std::string> problems, malformed;
  std::vector<Entry> entries = ListEntries(root, &problems, &malformed);
  for (const std::string& id : malformed) {
    fs::remove_all(EntriesDir(root) / id, ec);
    ++report.removed;
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.last_used > b.last_used; });
  for (const Entry& entry : entries) {
    if (report.bytes + entry.bytes > max_bytes) {
      fs::remove_all(EntriesDir(root) / entry.id, ec);
      ++report.evicted;
      continue;
    }
    report.bytes += entry.bytes;
    ++report.entries;
  }
  return report;
}

absl::StatusOr<CopyReport> CopyEntries(const fs::path& from, const fs::path& to,
                                       const std::function<bool(const Entry&)>& want) {
  std::error_code ec;
  fs::create_directories(EntriesDir(to), ec);
  if (!ec) fs::create_directories(StagingDir(to), ec);
  if (ec)
    return absl::InvalidArgumentError(
        absl::StrCat("cannot write ", to.string(), ": ", ec.message()));
  CopyReport report;
  std::vector<std::string> problems;
  for (const Entry& entry : ListEntries(from, &problems)) {
    if (want && !want(entry)) continue;
    if (fs::exists(EntriesDir(to) / entry.id / kManifestFile, ec)) {
      report.present.push_back(entry.id);
      continue;
    }
    absl::StatusOr<fs::path> staged = StageCopy(EntriesDir(from) / entry.id, entry, to);
    if (!staged.ok()) return staged.status();
    absl::StatusOr<Entry> checked = ReadEntry(*staged, entry.id, /*verify_content=*/true);
    if (!checked.ok()) {
      fs::remove_all(*staged, ec);
      report.refused.push_back(std::string(checked.status().message()));
      continue;
    }
    if (absl::Status s = Install(to, *staged, entry.id); !s.ok()) return s;
    report.copied.push_back(entry.id);
  }
  for (std::string& problem : problems) report.refused.push_back(std::move(problem));
  return report;
}

}  // namespace compatlab::cache
