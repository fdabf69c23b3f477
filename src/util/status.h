// absl::Status helpers shared by the use cases.
#ifndef COMPATLAB_UTIL_STATUS_H_
#define COMPATLAB_UTIL_STATUS_H_

#include "absl/status/status.h"

namespace compatlab {

// `status` with the same message under `code` (OK stays OK). A use case uses it
// to say which kind of failure one of its steps is (src/cli maps the codes to
// exit codes): e.g. any failure to open the store is bad input.
inline absl::Status Recode(const absl::Status& status, absl::StatusCode code) {
  if (status.ok()) return status;
  return absl::Status(code, status.message());
}

}  // namespace compatlab

#endif  // COMPATLAB_UTIL_STATUS_H_
