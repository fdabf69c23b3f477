// The page's static files: a request path mapped to a file inside a mounted
// folder (web/ at "/", the charting library at "/vendor/"), never outside it,
// and the file's Content-Type.
#ifndef COMPATLAB_SERVER_STATIC_FILES_H_
#define COMPATLAB_SERVER_STATIC_FILES_H_

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace compatlab {

struct StaticMount {
  std::string prefix;         // "/" or a path ending in '/', e.g. "/vendor/"
  std::filesystem::path dir;  // the folder served under it
};

// The regular file that serves the decoded request `path`: the first mount
// whose prefix starts `path` and whose folder holds the rest as a regular file
// (a path ending in '/' names its index.html). nullopt when none does, and
// for any path that would leave its folder ("..", past the top) or holds a
// NUL byte.
std::optional<std::filesystem::path> FindStaticFile(const std::vector<StaticMount>& mounts,
                                                    std::string_view path);

// The Content-Type of a file by its extension (text/html, text/javascript,
// text/css, image/png, application/json, ...); "" when unknown.
std::string_view StaticContentType(const std::filesystem::path& file);

}  // namespace compatlab

#endif  // COMPATLAB_SERVER_STATIC_FILES_H_
