#include "server/static_files.h"

#include <sys/stat.h>

#include <array>
#include <utility>

#include "absl/strings/ascii.h"

namespace compatlab {
namespace {

// Whether `sub_path` (components separated by '/') stays inside its folder:
// ".." never climbs above the top.
bool StaysInsideFolder(std::string_view sub_path) {
  int depth = 0;
  size_t i = 0;
  while (i < sub_path.size()) {
    while (i < sub_path.size() && sub_path[i] == '/') ++i;
    const size_t start = i;
    while (i < sub_path.size() && sub_path[i] != '/') ++i;
    const std::string_view part = sub_path.substr(start, i - start);
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (depth == 0) return false;
      --depth;
    } else {
      ++depth;
    }
  }
  return true;
}

bool IsRegularFile(const std::filesystem::path& file) {
  struct stat info {};
  return ::stat(file.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

}  // namespace

std::optional<std::filesystem::path> FindStaticFile(const std::vector<StaticMount>& mounts,
                                                    std::string_view path) {
  if (path.find('\0') != std::string_view::npos) return std::nullopt;
  for (const StaticMount& mount : mounts) {
    if (!path.starts_with(mount.prefix)) continue;
    const std::string_view sub_path = path.substr(mount.prefix.size());
    if (!StaysInsideFolder(sub_path)) continue;
    std::string file = mount.dir.string() + "/" + std::string(sub_path);
    if (file.back() == '/') file += "index.html";
    if (IsRegularFile(file)) return std::filesystem::path(file);
  }
  return std::nullopt;
}

std::string_view StaticContentType(const std::filesystem::path& file) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 44> kTypes = {{
      {"css", "text/css"},
      {"csv", "text/csv"},
      {"htm", "text/html"},
      {"html", "text/html"},
      {"js", "text/javascript"},
      {"mjs", "text/javascript"},
      {"txt", "text/plain"},
      {"vtt", "text/vtt"},
      {"apng", "image/apng"},
      {"avif", "image/avif"},
      {"bmp", "image/bmp"},
      {"gif", "image/gif"},
      {"png", "image/png"},
      {"svg", "image/svg+xml"},
      {"webp", "image/webp"},
      {"ico", "image/x-icon"},
      {"tif", "image/tiff"},
      {"tiff", "image/tiff"},
      {"jpg", "image/jpeg"},
      {"jpeg", "image/jpeg"},
      {"mp4", "video/mp4"},
      {"mpeg", "video/mpeg"},
      {"webm", "video/webm"},
      {"mp3", "audio/mp3"},
      {"mpga", "audio/mpeg"},
      {"weba", "audio/webm"},
      {"wav", "audio/wave"},
      {"otf", "font/otf"},
      {"ttf", "font/ttf"},
      {"woff", "font/woff"},
      {"woff2", "font/woff2"},
      {"7z", "application/x-7z-compressed"},
      {"atom", "application/atom+xml"},
      {"pdf", "application/pdf"},
      {"json", "application/json"},
      {"map", "application/json"},
      {"rss", "application/rss+xml"},
      {"tar", "application/x-tar"},
      {"xht", "application/xhtml+xml"},
      {"xhtml", "application/xhtml+xml"},
      {"xslt", "application/xslt+xml"},
      {"xml", "application/xml"},
      {"gz", "application/gzip"},
      {"zip", "application/zip"},
  }};
  std::string extension = file.extension().string();
  if (extension.empty()) return "";
  extension = absl::AsciiStrToLower(extension.substr(1));
  for (const auto& [ext, type] : kTypes) {
    if (ext == extension) return type;
  }
  return "";
}

}  // namespace compatlab
