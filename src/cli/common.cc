#include "cli/common.h"

#include <cstdlib>
#include <iostream>

#include "util/fs.h"
#include "util/utf8.h"

namespace compatlab {

int Fail(int code, const std::string& message) {
  std::string line = message;
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  // Messages quote files and stored data: no control character reaches the terminal.
  std::cerr << "compatlab: error: " << EscapeControls(line, false) << std::endl;
  return code;
}

int Fail(int code, const absl::Status& status) { return Fail(code, std::string(status.message())); }

void Warn(const std::string& message) {
  std::cerr << "compatlab: warning: " << EscapeControls(message, false) << "\n";
}

int ExitCodeOf(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAlreadyExists:
      return kExitBadInput;
    default:
      return kExitFailure;
  }
}

ProbeEnv ResolveProbeEnv(const std::string& python_flag) {
  std::filesystem::path home = ProjectHome();
  ProbeEnv env;
  if (!python_flag.empty()) {
    env.python = python_flag;
  } else if (const char* p = std::getenv("COMPATLAB_PYTHON"); p != nullptr && *p != '\0') {
    env.python = p;
  } else {
    env.python = (home / ".venv" / "bin" / "python").string();
  }
  env.probe_dir = (home / "probe").string();
  return env;
}

std::string DefaultStackOf(const std::string& python) {
  const std::filesystem::path own = ProjectHome() / ".venv" / "bin" / "python";
  return std::filesystem::path(python).lexically_normal() == own.lexically_normal() ? "default"
                                                                                    : "";
}

}  // namespace compatlab
