// `compatlab errors` as a use case: stored failures grouped by error
// signature, with the knowledge base's explanations (doc/errors-kb.md).
#ifndef COMPATLAB_QUERY_LIST_ERRORS_H_
#define COMPATLAB_QUERY_LIST_ERRORS_H_

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"
#include "store/store.h"

namespace compatlab {

struct ListErrorsOptions {
  std::filesystem::path db;
  RunFilter filter;
  std::filesystem::path kb_path;  // the knowledge file; required
  bool json = false;              // FormatErrorsJson instead of FormatErrorsText
  bool by_blame = false;          // grouped by blame first (GroupErrors' by_blame)
};

// The report to print (also when there are no failures). Errors:
// InvalidArgument when filter.status is not a failure status (pass,
// skipped); Unavailable when the knowledge file cannot be used;
// FailedPrecondition when the store cannot be opened; Internal when it cannot
// be read.
absl::StatusOr<std::string> ListErrors(const ListErrorsOptions& options);

}  // namespace compatlab

#endif  // COMPATLAB_QUERY_LIST_ERRORS_H_
