// `compatlab cache ls|push|pull|explain|gc`: the compile store (cache/; doc/compile-cache.md)
// between the local store and a remote (a directory, or hub:ORG/NAME).
#ifndef COMPATLAB_CLI_CACHE_H_
#define COMPATLAB_CLI_CACHE_H_

#include <string>

#include "CLI/CLI.hpp"

namespace compatlab {

struct CacheFlags {
  std::string store;   // --store: the local store ("" = cache::LocalStoreDir())
  std::string remote;  // push/pull REMOTE; ls/explain --remote
  std::string run_id;  // explain RUN_ID
  std::string key;     // push/pull --key ID: that entry only
  std::string db = "compatlab.db";
  std::string max_size = "20G";  // gc --max-size
  std::string python;            // the Hub helper's interpreter
  CLI::App* ls = nullptr;
  CLI::App* push = nullptr;
  CLI::App* pull = nullptr;
  CLI::App* explain = nullptr;
  CLI::App* gc = nullptr;
};

// Adds the `cache` subcommand and its five subcommands to `app`; options fill `flags`.
CLI::App* AddCacheCommand(CLI::App& app, CacheFlags& flags);

// Runs the chosen subcommand. Exit codes as in cli/common.h.
int RunCache(const CacheFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_CACHE_H_
