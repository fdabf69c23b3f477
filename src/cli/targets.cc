#include "cli/targets.h"

#include <iostream>

#include "cli/common.h"
#include "sweep/listing.h"
#include "util/fs.h"

namespace compatlab {

CLI::App* AddTargetsCommand(CLI::App& app, TargetsFlags&) {
  return app.add_subcommand("targets", "List the target profiles (targets/)");
}

int RunTargets(const TargetsFlags&) {
  absl::StatusOr<std::string> table = TargetsTable(ProjectHome());
  if (!table.ok()) return Fail(kExitBadInput, table.status());
  std::cout << *table;
  return kExitOk;
}

}  // namespace compatlab
