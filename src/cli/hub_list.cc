#include "cli/hub_list.h"

#include <cstdio>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "cli/common.h"
#include "util/fs.h"

namespace compatlab {

CLI::App* AddHubListCommand(CLI::App& app, HubListFlags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "hub-list",
      "Write a suite file of Hub ids from the Hub's list API (by downloads or trending)");
  cmd->add_option("--task", flags.request.task, "Hub task (pipeline tag), e.g. text-generation");
  cmd->add_option("--sort", flags.request.sort, "downloads or trending")->capture_default_str();
  cmd->add_option("--limit", flags.request.limit, "how many ids")->capture_default_str();
  cmd->add_option("--out", flags.out, "suite file to write (default: print it)");
  cmd->add_option("--name", flags.name, "the suite's name")->capture_default_str();
  cmd->add_option("--python", flags.python, "interpreter that runs the probe");
  return cmd;
}

int RunHubList(const HubListFlags& flags) {
  absl::StatusOr<std::vector<std::string>> ids =
      ListHubModels(ResolveProbeEnv(flags.python), flags.request);
  if (!ids.ok()) {
    return Fail(absl::IsInvalidArgument(ids.status()) ? kExitBadInput : kExitFailure, ids.status());
  }
  const std::string suite = HubSuiteJson(flags.name, *ids);
  if (flags.out.empty()) {
    std::cout << suite;
  } else if (absl::Status s = WriteFileAtomic(flags.out, suite); !s.ok()) {
    return Fail(kExitFailure, s);
  } else {
    std::fprintf(stderr, "compatlab: %zu Hub ids written to %s (compatlab sweep --suite %s)\n",
                 ids->size(), flags.out.c_str(), flags.out.c_str());
  }
  return kExitOk;
}

}  // namespace compatlab
