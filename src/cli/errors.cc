#include "cli/errors.h"

#include <iostream>

#include "cli/common.h"
#include "query/error_kb.h"
#include "query/list_errors.h"

namespace compatlab {

int RunErrors(const ErrorsFlags& flags) {
  absl::StatusOr<RunFilter> filter = ToRunFilter(flags.filter);
  if (!filter.ok()) return Fail(kExitBadInput, filter.status());
  ListErrorsOptions options;
  options.db = flags.db;
  options.filter = *std::move(filter);
  options.kb_path = flags.kb.empty() ? DefaultKnowledgeBasePath() : std::filesystem::path(flags.kb);
  options.json = flags.format == "json";
  absl::StatusOr<std::string> text = ListErrors(options);
  if (!text.ok()) return Fail(ExitCodeOf(text.status()), text.status());
  std::cout << *text;
  return kExitOk;
}

}  // namespace compatlab
