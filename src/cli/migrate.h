// `compatlab migrate --db PATH`: brings a store written by an older compatlab
// to this build's schema version (store/store.h, MigrateStoreAt). Readers open
// stores read-only and refuse an older one, naming this command.
#ifndef COMPATLAB_CLI_MIGRATE_H_
#define COMPATLAB_CLI_MIGRATE_H_

#include <string>

#include "CLI/CLI.hpp"

namespace compatlab {

struct MigrateFlags {
  std::string db = "compatlab.db";
};

// Adds the `migrate` subcommand to `app`; its options fill `flags`.
CLI::App* AddMigrateCommand(CLI::App& app, MigrateFlags& flags);

// Migrates the store and prints one line: from which version to which, or
// that it was current. Exit codes as in cli/common.h.
int RunMigrate(const MigrateFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_MIGRATE_H_
