#include "cli/suites.h"

#include <cstdio>
#include <iostream>

#include "cli/common.h"
#include "sweep/listing.h"
#include "util/fs.h"

namespace compatlab {

CLI::App* AddSuitesCommand(CLI::App& app, SuitesFlags& flags) {
  CLI::App* cmd = app.add_subcommand("suites", "List suites, or expand one into its tests");
  cmd->add_option("name", flags.name, "suite to expand");
  cmd->add_option("--format", flags.format, "table or json")
      ->check(CLI::IsMember({"table", "json"}));
  cmd->add_option("--python", flags.python, "interpreter that runs the probe");
  return cmd;
}

int RunSuites(const SuitesFlags& flags) {
  if (flags.name.empty()) {
    absl::StatusOr<std::string> table = SuitesTable(ProjectHome());
    if (!table.ok()) return Fail(kExitBadInput, table.status());
    std::cout << *table;
    return kExitOk;
  }
  PlanRequest request;
  request.suite = flags.name;
  ProbeEnv probe = ResolveProbeEnv(flags.python);
  request.base.python = probe.python;
  request.base.probe_dir = probe.probe_dir;
  size_t count = 0;
  absl::StatusOr<std::string> listing = SuitePlanListing(
      request, ProjectHome(), flags.format == "json" ? ListingFormat::kJson : ListingFormat::kTable,
      &count);
  if (!listing.ok()) {
    return Fail(absl::IsInternal(listing.status()) ? kExitFailure : kExitBadInput,
                listing.status());
  }
  std::cout << *listing;
  if (flags.format != "json") std::fprintf(stderr, "%zu tests\n", count);
  return kExitOk;
}

}  // namespace compatlab
