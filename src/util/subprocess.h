// Running short helper commands to completion (the probe's catalog, for
// example). Long-lived children (zygote, tests) are the runner's business.
#ifndef COMPATLAB_UTIL_SUBPROCESS_H_
#define COMPATLAB_UTIL_SUBPROCESS_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace compatlab {

struct CommandResult {
  int exit_code = -1;   // -1 when killed by a signal
  int term_signal = 0;  // signal number when killed by one
  std::string stdout_text;
  std::string stderr_text;
};

// Runs argv[0] (searched in PATH) with argv, the current environment plus
// `extra_env`, and collects its output. Standard input reads `input`, then end
// of file (an anonymous file holding it, so a large input cannot block; it
// never appears in argv); /dev/null when `input` is empty. Kills it (SIGKILL)
// after `timeout_s`, which is an error. Error only when the command cannot be
// started or times out; a non-zero exit is a result.
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         const std::map<std::string, std::string>& extra_env,
                                         double timeout_s, std::string_view input = {});

// Builds a NULL-terminated envp: the current environment with `extra` set
// (overriding). The strings live in `storage`.
std::vector<char*> BuildEnv(const std::map<std::string, std::string>& extra,
                            std::vector<std::string>& storage);

}  // namespace compatlab

#endif  // COMPATLAB_UTIL_SUBPROCESS_H_
