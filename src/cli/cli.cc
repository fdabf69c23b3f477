#include "cli/cli.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "cli/cache.h"
#include "cli/common.h"
#include "cli/compare.h"
#include "cli/diff.h"
#include "cli/errors.h"
#include "cli/fields.h"
#include "cli/hub_list.h"
#include "cli/matrix.h"
#include "cli/migrate.h"
#include "cli/ops.h"
#include "cli/plan.h"
#include "cli/query.h"
#include "cli/repro.h"
#include "cli/scale_out.h"
#include "cli/stack.h"
#include "cli/suites.h"
#include "cli/sweep.h"
#include "cli/sweeps.h"
#include "cli/targets.h"
#ifndef COMPATLAB_PORTABLE
#include "cli/export.h"
#include "cli/merge.h"
#include "cli/serve.h"
#endif

namespace compatlab {
namespace {

// Every subcommand's flags, filled by the parse.
struct CliFlags {
  SweepFlags sweep;
  StackFlags stack;
  PlanCommandFlags plan;
  TargetsFlags targets;
  HubListFlags hub_list;
  SuitesFlags suites;
  QueryFlags query;
  MatrixFlags matrix;
#ifndef COMPATLAB_PORTABLE
  ExportFlags export_flags;
  ImportFlags import_flags;
  PublishFlags publish;
  MergeFlags merge;
#endif
  SweepsFlags sweeps;
  SlurmFlags slurm;
  K8sFlags k8s;
  DiffFlags diff;
  CompareFlags compare;
  ErrorsFlags errors;
  ReproFlags repro;
  OpsFlags ops;
  CacheFlags cache;
#ifndef COMPATLAB_PORTABLE
  ServeFlags serve;
#endif
  FieldsFlags fields;
  MigrateFlags migrate;
};

// A declared subcommand and the call that runs it once the parse chose it.
struct Command {
  CLI::App* app;
  std::function<int()> run;
};

// Declares a subcommand with `add` on `app`; it runs as `run(flags)`.
template <typename Flags>
Command Declare(CLI::App& app, Flags& flags, CLI::App* (*add)(CLI::App&, Flags&),
                int (*run)(const Flags&)) {
  return {add(app, flags), [&flags, run] { return run(flags); }};
}

// The command line as one string, arguments joined by spaces (stored as a sweep's args).
std::string JoinArgs(int argc, char** argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) out += ' ';
    out += argv[i];
  }
  return out;
}

// The subcommands in --help's order.
std::vector<Command> DeclareCommands(CLI::App& app, CliFlags& f) {
  return {
      Declare(app, f.sweep, AddSweepCommand, RunSweep),
      Declare(app, f.plan, AddPlanCommand, RunPlanCommand),
      Declare(app, f.stack, AddStackCommand, RunStack),
      Declare(app, f.targets, AddTargetsCommand, RunTargets),
      Declare(app, f.hub_list, AddHubListCommand, RunHubList),
      Declare(app, f.suites, AddSuitesCommand, RunSuites),
      Declare(app, f.query, AddQueryCommand, RunQuery),
      Declare(app, f.matrix, AddMatrixCommand, RunMatrix),
#ifndef COMPATLAB_PORTABLE  // the portable build (doc/targets.md) has no Arrow
      Declare(app, f.export_flags, AddExportCommand, RunExport),
      Declare(app, f.import_flags, AddImportCommand, RunImport),
      Declare(app, f.publish, AddPublishCommand, RunPublish),
      Declare(app, f.merge, AddMergeCommand, RunMerge),
#endif
      Declare(app, f.sweeps, AddSweepsCommand, RunSweeps),
      Declare(app, f.slurm, AddSlurmCommand, RunSlurm),
      Declare(app, f.k8s, AddK8sCommand, RunK8s),
      Declare(app, f.diff, AddDiffCommand, RunDiff),
      Declare(app, f.compare, AddCompareCommand, RunCompareCommand),
      Declare(app, f.errors, AddErrorsCommand, RunErrors),
      Declare(app, f.repro, AddReproCommand, RunRepro),
      Declare(app, f.ops, AddOpsCommand, RunOpsCommand),
      Declare(app, f.cache, AddCacheCommand, RunCache),
#ifndef COMPATLAB_PORTABLE  // nor Boost.Beast
      Declare(app, f.serve, AddServeCommand, RunServe),
#endif
      Declare(app, f.fields, AddFieldsCommand, RunFields),
      Declare(app, f.migrate, AddMigrateCommand, RunMigrate),
  };
}

// Parses the command line into `app`'s flags: nullopt, or the exit code when
// it printed help or the version (0) or refused the flags (2).
std::optional<int> Parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return Fail(kExitBadInput, std::string(e.what()));
  }
  return std::nullopt;
}

}  // namespace

int RunCli(int argc, char** argv) {
  CLI::App app{"compatlab: does this model run on this device and stack, and how well?"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(COMPATLAB_VERSION));
  CliFlags flags;
  flags.sweep.command_line = JoinArgs(argc, argv);
  flags.ops.command_line = flags.sweep.command_line;
#ifndef COMPATLAB_PORTABLE
  flags.import_flags.command_line = flags.sweep.command_line;
  flags.merge.command_line = flags.sweep.command_line;
#endif
  const std::vector<Command> commands = DeclareCommands(app, flags);
  if (std::optional<int> code = Parse(app, argc, argv)) return *code;
  for (const Command& command : commands) {
    if (*command.app) return command.run();
  }
  return kExitBadInput;
}

}  // namespace compatlab
