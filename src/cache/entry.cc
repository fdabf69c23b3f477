#include "cache/entry.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "cache/graph_details.h"
#include "nlohmann/json.hpp"
#include "util/fs.h"
#include "util/hash.h"

namespace compatlab::cache {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A file of at most `max_bytes`, read whole.
absl::StatusOr<std::string> ReadBounded(const fs::path& path, int64_t max_bytes) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(path, ec))) {
    return absl::InvalidArgumentError(absl::StrCat(path.filename().string(), ": missing"));
  }
  const auto size = fs::file_size(path, ec);
  if (ec || static_cast<int64_t>(size) > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path.filename().string(), ": larger than ", max_bytes, " bytes"));
  }
  return ReadFile(path);
}

absl::StatusOr<std::string> FileSha256(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path.string()));
  Sha256 digest;
  std::string block(1 << 20, '\0');
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    digest.Update(std::string_view(block.data(), static_cast<size_t>(in.gcount())));
  }
  return digest.FinalHex();
}

// artifacts.bin, fx_graph_details.json or kernels/XX/NAME, as the probe writes them
// (compile_store.py).
bool IsEntryFilePath(std::string_view path) {
  static const std::regex* const kPath = new std::regex(
      R"(^(artifacts\.bin|fx_graph_details\.json|kernels/[a-z0-9]{2}/[A-Za-z0-9_][A-Za-z0-9_.-]{0,199})$)");
  return path.find("..") == std::string_view::npos &&
         std::regex_match(path.begin(), path.end(), *kPath);
}

absl::StatusOr<EntryFile> ParseEntryFile(const json& item) {
  if (!item.is_object() || !item.contains("path") || !item["path"].is_string() ||
      !item.contains("bytes") || !item["bytes"].is_number_integer() || !item.contains("sha256") ||
      !item["sha256"].is_string()) {
    return absl::InvalidArgumentError("entry.json: a file without path, bytes and sha256");
  }
  EntryFile file{item["path"].get<std::string>(), item["bytes"].get<int64_t>(),
                 item["sha256"].get<std::string>()};
  if (!IsEntryFilePath(file.path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "entry.json: file path '", file.path.substr(0, 200), "' is not one of an entry"));
  }
  if (file.bytes < 0 || file.bytes > kMaxEntryBytes || !IsEntryId(file.sha256)) {
    return absl::InvalidArgumentError(
        absl::StrCat("entry.json: bad size or digest of ", file.path));
  }
  if (file.path == kGraphDetailsFile && file.bytes > kMaxGraphDetailsBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(kGraphDetailsFile, ": larger than ", kMaxGraphDetailsBytes, " bytes"));
  }
  return file;
}

absl::Status ParseManifest(std::string_view text, Entry* entry) {
  const json m = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!m.is_object() || !m.contains("format") || m["format"] != kEntryFormat) {
    return absl::InvalidArgumentError(
        absl::StrCat("entry.json: not a format ", kEntryFormat, " manifest"));
  }
  if (!m.contains("files") || !m["files"].is_array() || m["files"].size() > kMaxEntryFiles) {
    return absl::InvalidArgumentError(
        absl::StrCat("entry.json: files must be a list of at most ", kMaxEntryFiles));
  }
  std::set<std::string> seen;
  for (const json& item : m["files"]) {
    absl::StatusOr<EntryFile> file = ParseEntryFile(item);
    if (!file.ok()) return file.status();
    if (!seen.insert(file->path).second) {
      return absl::InvalidArgumentError(absl::StrCat("entry.json: ", file->path, " listed twice"));
    }
    entry->bytes += file->bytes;
    entry->files.push_back(*std::move(file));
  }
  if (!seen.contains("artifacts.bin")) {
    return absl::InvalidArgumentError("entry.json: no artifacts.bin");
  }
  if (entry->bytes > kMaxEntryBytes) {
    return absl::InvalidArgumentError(absl::StrCat("entry larger than ", kMaxEntryBytes, " bytes"));
  }
  if (m.contains("created_unix") && m["created_unix"].is_number_integer()) {
    entry->created_unix = m["created_unix"].get<int64_t>();
  }
  if (m.contains("artifacts") && m["artifacts"].is_object() && m["artifacts"].size() <= 16) {
    for (const auto& [kind, count] : m["artifacts"].items()) {
      if (count.is_number_integer() && kind.size() <= 64)
        entry->artifacts[kind] = count.get<int64_t>();
    }
  }
  return absl::OkStatus();
}

// No file in `dir` besides key.json, entry.json and the listed ones; no link.
absl::Status CheckNothingElse(const fs::path& dir, const Entry& entry) {
  std::set<std::string> listed = {std::string(kKeyFile), std::string(kManifestFile)};
  for (const EntryFile& f : entry.files) listed.insert(f.path);
  std::error_code ec;
  size_t seen = 0;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (++seen > 2 * kMaxEntryFiles + 300) return absl::InvalidArgumentError("too many files");
    const fs::file_status st = it->symlink_status(ec);
    if (fs::is_symlink(st)) return absl::InvalidArgumentError("holds a symbolic link");
    if (fs::is_directory(st)) continue;
    const std::string rel = fs::relative(it->path(), dir, ec).generic_string();
    if (!listed.contains(rel)) {
      return absl::InvalidArgumentError(
          absl::StrCat("holds a file entry.json does not list: ", rel.substr(0, 200)));
    }
  }
  if (ec) return absl::InvalidArgumentError(absl::StrCat("cannot list it: ", ec.message()));
  return absl::OkStatus();
}

absl::Status VerifyContent(const fs::path& dir, const Entry& entry) {
  for (const EntryFile& f : entry.files) {
    std::error_code ec;
    const auto size = fs::file_size(dir / f.path, ec);
    if (ec || static_cast<int64_t>(size) != f.bytes) {
      return absl::DataLossError(absl::StrCat(f.path, ": size differs from entry.json"));
    }
    absl::StatusOr<std::string> digest = FileSha256(dir / f.path);
    if (!digest.ok()) return digest.status();
    if (*digest != f.sha256) {
      return absl::DataLossError(absl::StrCat(f.path, ": content does not match its digest"));
    }
    if (f.path == kGraphDetailsFile) {
      absl::StatusOr<std::string> text = ReadBounded(dir / f.path, kMaxGraphDetailsBytes);
      absl::Status parsed = text.ok() ? ParseGraphDetails(*text).status() : text.status();
      if (!parsed.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(f.path, ": ", std::string(parsed.message())));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool IsEntryId(std::string_view name) {
  if (name.size() != 64) return false;
  for (char c : name) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

absl::StatusOr<KeyParts> ParseKey(std::string_view json_text) {
  if (static_cast<int64_t>(json_text.size()) > kMaxKeyBytes) {
    return absl::InvalidArgumentError("key: too long");
  }
  const json k = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (!k.is_object() || k.empty() || k.size() > kMaxKeyParts) {
    return absl::InvalidArgumentError(
        absl::StrCat("key: not an object of 1 to ", kMaxKeyParts, " parts"));
  }
  KeyParts parts;
  for (const auto& [name, value] : k.items()) {
    if (!value.is_string() || name.size() > 64) {
      return absl::InvalidArgumentError(
          absl::StrCat("key: part '", name.substr(0, 64), "' is not a string"));
    }
    parts[name] = value.get<std::string>();
  }
  return parts;
}

absl::StatusOr<Entry> ReadEntryHeader(const fs::path& dir, std::string_view id) {
  auto fail = [&](const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat("entry ", std::string(id.substr(0, 64)), ": ",
                                               std::string(s.message())));
  };
  if (!IsEntryId(id)) return absl::InvalidArgumentError("an entry's name is 64 hex digits");
  Entry entry;
  entry.id = std::string(id);
  absl::StatusOr<std::string> key_text = ReadBounded(dir / kKeyFile, kMaxKeyBytes);
  if (!key_text.ok()) return fail(key_text.status());
  if (Sha256Hex(*key_text) != id) {
    return fail(absl::DataLossError("key.json does not match the entry's name (its digest)"));
  }
  absl::StatusOr<KeyParts> key = ParseKey(*key_text);
  if (!key.ok()) return fail(key.status());
  entry.key = *std::move(key);
  absl::StatusOr<std::string> manifest = ReadBounded(dir / kManifestFile, kMaxManifestBytes);
  if (!manifest.ok()) return fail(manifest.status());
  if (absl::Status s = ParseManifest(*manifest, &entry); !s.ok()) return fail(s);
  entry.bytes += static_cast<int64_t>(key_text->size() + manifest->size());
  std::error_code ec;
  entry.last_used = fs::last_write_time(dir / kManifestFile, ec);
  return entry;
}

absl::StatusOr<Entry> ReadEntry(const fs::path& dir, std::string_view id, bool verify_content) {
  absl::StatusOr<Entry> entry = ReadEntryHeader(dir, id);
  if (!entry.ok()) return entry;
  absl::Status s = CheckNothingElse(dir, *entry);
  if (s.ok() && verify_content) s = VerifyContent(dir, *entry);
  if (!s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("entry ", entry->id, ": ", std::string(s.message())));
  }
  return entry;
}

absl::StatusOr<Entry> ReadStagedEntry(const fs::path& dir) {
  absl::StatusOr<std::string> key_text = ReadBounded(dir / kKeyFile, kMaxKeyBytes);
  if (!key_text.ok()) return key_text.status();
  return ReadEntry(dir, Sha256Hex(*key_text), /*verify_content=*/true);
}

absl::StatusOr<GraphDetails> ReadGraphDetails(const fs::path& dir, const Entry& entry) {
  auto listed = std::find_if(entry.files.begin(), entry.files.end(),
                             [](const EntryFile& f) { return f.path == kGraphDetailsFile; });
  if (listed == entry.files.end()) {
    return absl::NotFoundError(
        absl::StrCat("the entry holds no ", kGraphDetailsFile, " (kept before it was added)"));
  }
  absl::StatusOr<std::string> text = ReadBounded(dir / kGraphDetailsFile, kMaxGraphDetailsBytes);
  if (!text.ok()) return text.status();
  if (static_cast<int64_t>(text->size()) != listed->bytes || Sha256Hex(*text) != listed->sha256) {
    return absl::DataLossError(
        absl::StrCat(kGraphDetailsFile, ": content does not match its digest"));
  }
  return ParseGraphDetails(*text);
}

std::vector<std::string> DifferingParts(const KeyParts& key, const KeyParts& other) {
  std::vector<std::string> out;
  for (const auto& [name, value] : key) {
    auto it = other.find(name);
    if (it == other.end() || it->second != value) out.push_back(name);
  }
  for (const auto& [name, value] : other) {
    if (!key.contains(name)) out.push_back(name);
  }
  return out;
}

}  // namespace compatlab::cache
