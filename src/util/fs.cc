#include "util/fs.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace compatlab {

namespace fs = std::filesystem;

absl::StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path.string()));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read ", path.string()));
  return ss.str();
}

absl::Status WriteFileAtomic(const fs::path& path, std::string_view contents) {
  fs::path tmp = path;
  tmp += absl::StrCat(".tmp.", getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create ", tmp.string(), ": ", std::strerror(errno)));
  }
  size_t off = 0;
  while (off < contents.size()) {
    ssize_t n = write(fd, contents.data() + off, contents.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      close(fd);
      unlink(tmp.c_str());
      return absl::DataLossError(
          absl::StrCat("cannot write ", tmp.string(), ": ", std::strerror(err)));
    }
    off += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    unlink(tmp.c_str());
    return absl::DataLossError(absl::StrCat("cannot flush ", tmp.string()));
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return absl::PermissionDeniedError(
        absl::StrCat("cannot rename to ", path.string(), ": ", std::strerror(err)));
  }
  return absl::OkStatus();
}

fs::path ProjectHome() {
  if (const char* env = std::getenv("COMPATLAB_HOME"); env != nullptr && *env != '\0') {
    return fs::path(env);
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path dir = exe.parent_path(); !dir.empty(); dir = dir.parent_path()) {
      if (fs::is_directory(dir / "suites") && fs::is_directory(dir / "probe")) return dir;
      if (dir == dir.root_path()) break;
    }
  }
  return fs::current_path(ec);
}

std::vector<std::string> JsonFileStems(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace compatlab
