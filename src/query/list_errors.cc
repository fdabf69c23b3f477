#include "query/list_errors.h"

#include "query/error_kb.h"
#include "query/errors_report.h"
#include "util/status.h"

namespace compatlab {

absl::StatusOr<std::string> ListErrors(const ListErrorsOptions& options) {
  if (options.filter.status.has_value() && !IsFailureStatus(*options.filter.status)) {
    return absl::InvalidArgumentError("errors lists failures; --status " +
                                      std::string(TestStatusName(*options.filter.status)) +
                                      " is not one (use query for it)");
  }
  absl::StatusOr<ErrorKnowledgeBase> kb = ErrorKnowledgeBase::Load(options.kb_path);
  if (!kb.ok()) {
    return absl::UnavailableError("cannot use the knowledge base: " +
                                  std::string(kb.status().message()));
  }
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options.db, OpenMode::kReadOnly);
  if (!store.ok()) return Recode(store.status(), absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<std::vector<RunRecord>> runs = (*store)->QueryRuns(options.filter);
  if (!runs.ok()) return Recode(runs.status(), absl::StatusCode::kInternal);
  const std::vector<ErrorGroup> groups = GroupErrors(*runs, &*kb, options.by_blame);
  const std::string origin = options.kb_path.string();
  return options.json ? FormatErrorsJson(groups, origin) : FormatErrorsText(groups, origin);
}

}  // namespace compatlab
