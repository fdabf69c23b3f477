#include "cli/repro.h"

#include <iostream>

#include "cli/common.h"
#include "repro/repro.h"
#include "util/fs.h"

namespace compatlab {

int RunRepro(const ReproFlags& flags) {
  ReproOptions options;
  options.db = flags.db;
  options.run_id = flags.run_id;
  options.kb_path = flags.kb.empty() ? DefaultKnowledgeBasePath() : std::filesystem::path(flags.kb);
  options.targets_dir = ProjectHome() / "targets";
  options.probe = ResolveProbeEnv(flags.python);
  absl::StatusOr<ReproScript> script = ReproduceStoredRun(options);
  if (!script.ok()) return Fail(ExitCodeOf(script.status()), script.status());
  for (const std::string& warning : script->warnings) Warn(warning);
  std::cout << script->script << std::flush;
  return kExitOk;
}

}  // namespace compatlab
