#include "cli/repro.h"

#include <iostream>

#include "cli/common.h"
#include "repro/repro.h"
#include "util/fs.h"

namespace compatlab {

CLI::App* AddReproCommand(CLI::App& app, ReproFlags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "repro", "Print a standalone Python script (torch and transformers only) that reruns a run");
  cmd->add_option("run_id", flags.run_id, "the run (run_id of query's JSON or CSV)")->required();
  cmd->add_option("--db", flags.db, "SQLite store")->capture_default_str();
  cmd->add_option("--kb", flags.kb,
                  "knowledge file (default: knowledge/errors.json of the project)");
  cmd->add_option("--python", flags.python, "interpreter that runs the probe");
  cmd->add_flag("--allow-stored-code", flags.allow_stored_code,
                "keep the backend, profile and compile options the stored plan names even "
                "where they are not this installation's own (trust the store first; "
                "doc/repro.md)");
  return cmd;
}

int RunRepro(const ReproFlags& flags) {
  ReproOptions options;
  options.db = flags.db;
  options.run_id = flags.run_id;
  options.kb_path = flags.kb.empty() ? DefaultKnowledgeBasePath() : std::filesystem::path(flags.kb);
  options.targets_dir = ProjectHome() / "targets";
  options.probe = ResolveProbeEnv(flags.python);
  options.allow_stored_code = flags.allow_stored_code;
  absl::StatusOr<ReproScript> script = ReproduceStoredRun(options);
  if (!script.ok()) return Fail(ExitCodeOf(script.status()), script.status());
  for (const std::string& warning : script->warnings) Warn(warning);
  std::cout << script->script << std::flush;
  return kExitOk;
}

}  // namespace compatlab
