// Error signatures: one failure, seen in many runs, models, machines or
// stacks, reads the same. A signature is the error type and the error
// message with what varies between occurrences removed.
#ifndef COMPATLAB_QUERY_ERROR_SIGNATURE_H_
#define COMPATLAB_QUERY_ERROR_SIGNATURE_H_

#include <string>
#include <string_view>

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

}  // namespace compatlab

#endif  // COMPATLAB_QUERY_ERROR_SIGNATURE_H_
