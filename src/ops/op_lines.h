// The JSON edge of an op batch (doc/worker-protocol.md, "Op batches"): the
// lines a test child of kind "ops" writes on its result pipe before its result
// object, `{"op_start": KEY}` and `{"op_case": {...}}`, taken apart from the
// stage marks and the result object the runner reads (runner/protocol.h).
#ifndef COMPATLAB_OPS_OP_LINES_H_
#define COMPATLAB_OPS_OP_LINES_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/op_records.h"

namespace compatlab {

struct OpLines {
  std::vector<OpResult> cases;  // each op_case, in order (op_sweep_id unset)
  std::string last_started;     // the last op_start's key ("" without one)
  std::string rest;             // the pipe's other text: stage marks and the result object
  std::string bad_line;         // why the first op line that did not parse was refused
};

// Splits a result pipe's text. An op line that does not parse, or an op_case
// without a checked key or with an unknown status, is left out and named in
// `bad_line` (its op then has no case: SettleBatch makes it harness_error);
// more than `max_cases` cases is InvalidArgument (the batch's own result then
// says harness_error). Strings are bounded (kMaxOpText bytes, UTF-8 kept valid).
inline constexpr size_t kMaxOpText = 2000;
absl::StatusOr<OpLines> SplitOpLines(std::string_view text, size_t max_cases);

}  // namespace compatlab

#endif  // COMPATLAB_OPS_OP_LINES_H_
