#include "cli/migrate.h"

#include <iostream>

#include "cli/common.h"
#include "core/fields.h"
#include "store/store.h"

namespace compatlab {

CLI::App* AddMigrateCommand(CLI::App& app, MigrateFlags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "migrate", "Bring a store written by an older compatlab to this one's schema version");
  cmd->add_option("--db", flags.db, "SQLite store")->capture_default_str();
  return cmd;
}

int RunMigrate(const MigrateFlags& flags) {
  absl::StatusOr<int> was = MigrateStoreAt(flags.db);
  if (!was.ok()) return Fail(ExitCodeOf(was.status()), was.status());
  if (*was == kSchemaVersion) {
    std::cout << flags.db << ": already at schema version " << kSchemaVersion << "\n";
  } else {
    std::cout << flags.db << ": migrated from schema version " << *was << " to " << kSchemaVersion
              << "\n";
  }
  return kExitOk;
}

}  // namespace compatlab
