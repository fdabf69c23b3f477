#include "cli/sweeps.h"

#include <iostream>
#include <memory>

#include "cli/common.h"
#include "query/sweeps_report.h"
#include "store/store.h"

namespace compatlab {

CLI::App* AddSweepsCommand(CLI::App& app, SweepsFlags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "sweeps", "List sweeps, plans and shards with their planned, stored and missing tests");
  cmd->add_option("--db", flags.db, "SQLite store")->capture_default_str();
  return cmd;
}

int RunSweeps(const SweepsFlags& flags) {
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(flags.db, OpenMode::kReadOnly);
  if (!store.ok()) return Fail(ExitCodeOf(store.status()), store.status());
  absl::StatusOr<std::string> report = SweepsReport(**store);
  if (!report.ok()) return Fail(ExitCodeOf(report.status()), report.status());
  std::cout << *report;
  return kExitOk;
}

}  // namespace compatlab
