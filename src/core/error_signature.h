// Error signatures: one failure, seen in many runs, models, machines or
// stacks, reads the same. A signature is the error type and the error
// message with what varies between occurrences removed.
#ifndef COMPATLAB_CORE_ERROR_SIGNATURE_H_
#define COMPATLAB_CORE_ERROR_SIGNATURE_H_

#include <string>
#include <string_view>

#include "core/records.h"

namespace compatlab {

// `message` normalised: its first non-blank line, with
//   - paths (a token starting with '/', "./", "../" or "~/") -> "<path>",
//   - hexadecimal numbers ("0x7f3a...") and bare hex runs of 12 or more
//     digits (hashes, addresses) -> "<hex>",
//   - decimal numbers not glued to a preceding letter, digit or '_'
//     ("3", "-1", "0.25", "1e-05", but not the 32 of "float32") -> "N",
// and runs of whitespace collapsed to one space, trimmed.
// Example: "size mismatch at /tmp/x.py:12, got 0x7ffd1234 and 64 (float32)"
//       -> "size mismatch at <path>, got <hex> and N (float32)".
std::string NormalizeErrorMessage(std::string_view message);

// "<error_type>: <normalised message>", "<error_type>" when the message
// normalises to nothing, "" when both are empty.
std::string ErrorSignature(std::string_view error_type, std::string_view error_message);

// True for the statuses that have an error signature: every status but pass
// and skipped.
bool IsFailureStatus(TestStatus status);

// The signature a failure is grouped, compared and matched by, as stored in
// RunResult::error_signature: "" unless IsFailureStatus(result.status); else
// ErrorSignature(type, message), or, when that is empty (a crash, a timeout),
// status_detail normalised as a message ("SIGSEGV"); "" when both are empty.
// Computed once, when the record is made; readers use the stored field.
std::string FailureSignature(const RunResult& result);

// Sets result->error_signature to FailureSignature(*result) when it is empty:
// for a row of an older Parquet file or store that has no stored signature
// (read or imported). A no-op for every row this compatlab recorded.
void FillMissingErrorSignature(RunResult* result);

}  // namespace compatlab

#endif  // COMPATLAB_CORE_ERROR_SIGNATURE_H_
