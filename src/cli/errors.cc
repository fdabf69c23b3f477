#include "cli/errors.h"

#include <iostream>

#include "cli/common.h"
#include "query/error_kb.h"
#include "query/errors_report.h"

namespace compatlab {

int RunErrors(const ErrorsFlags& flags) {
  absl::StatusOr<RunFilter> filter = ToRunFilter(flags.filter);
  if (!filter.ok()) return Fail(kExitBadInput, filter.status());
  if (filter->status.has_value() && !IsFailureStatus(*filter->status)) {
    return Fail(kExitBadInput, "errors lists failures; --status " + flags.filter.status +
                                   " is not one (use query for it)");
  }
  const std::filesystem::path kb_path =
      flags.kb.empty() ? DefaultKnowledgeBasePath() : std::filesystem::path(flags.kb);
  absl::StatusOr<ErrorKnowledgeBase> kb = ErrorKnowledgeBase::Load(kb_path);
  if (!kb.ok()) {
    return Fail(kExitFailure,
                "cannot use the knowledge base: " + std::string(kb.status().message()));
  }
  auto store = Store::Open(flags.db, OpenMode::kReadOnly);
  if (!store.ok()) return Fail(kExitBadInput, store.status());
  auto runs = (*store)->QueryRuns(*filter);
  if (!runs.ok()) return Fail(kExitFailure, runs.status());
  const std::vector<ErrorGroup> groups = GroupErrors(*runs, &*kb);
  if (flags.format == "json") {
    std::cout << FormatErrorsJson(groups, kb_path.string());
  } else {
    std::cout << FormatErrorsText(groups, kb_path.string());
  }
  return kExitOk;
}

}  // namespace compatlab
