// `compatlab hub-list`: a suite file of Hub ids from huggingface_hub's list API.
#ifndef COMPATLAB_CLI_HUB_LIST_H_
#define COMPATLAB_CLI_HUB_LIST_H_

#include <string>

#include "CLI/CLI.hpp"
#include "plan/hub.h"

namespace compatlab {

struct HubListFlags {
  HubListRequest request;
  std::string out;  // the suite file; "" prints it
  std::string name = "hub-list";
  std::string python;
};

// Adds the `hub-list` subcommand to `app`; its options fill `flags`.
CLI::App* AddHubListCommand(CLI::App& app, HubListFlags& flags);
// 0 written; 1 the Hub cannot be reached (one line); 2 bad flags.
int RunHubList(const HubListFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_HUB_LIST_H_
