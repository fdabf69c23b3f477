// The error knowledge base: a curated file (knowledge/errors.json, format in
// doc/errors-kb.md) that maps failure signatures to an explanation, a likely
// cause and a workaround. `compatlab errors`, `compatlab repro` and the
// table form of `compatlab query` show the entry that matches a failure.
//
// A failure is matched by its *subject*: "<status> <signature>", where the
// signature is the error signature of error_signature.h (or, for a failure
// without an error, its normalised status_detail). Each entry's pattern is an
// ECMAScript regular expression searched in the subject; entries are tried in
// file order and the first match wins.
#ifndef COMPATLAB_QUERY_ERROR_KB_H_
#define COMPATLAB_QUERY_ERROR_KB_H_

#include <cstddef>
#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/error_signature.h"  // FailureSignature: the signature matched here
#include "core/records.h"

namespace compatlab {

// Patterns see at most this many bytes of a subject (libstdc++'s std::regex
// recurses per character; an 8 KiB message line must not exhaust the stack).
inline constexpr size_t kMaxSubjectBytes = 1024;

// "<status> <signature>", or "<status>" when the signature is empty; cut to
// kMaxSubjectBytes.
std::string MatchSubject(std::string_view status, std::string_view signature);

// A failure seen in a real run, recorded with the entry it backs.
struct ObservedFailure {
  std::string model_type;
  std::string status;     // a status name (fail_to_run, ...)
  std::string signature;  // as FailureSignature gives it
  std::string torch_version;
  std::string transformers_version;
  std::string source;  // where it was seen (a sweep id, a suite), free text
};

struct KnownError {
  std::string id;                         // [a-z0-9-]+, unique in the file
  std::string pattern;                    // ECMAScript regex over MatchSubject()
  std::string explanation;                // what the error means
  std::string cause;                      // the likely cause
  std::string workaround;                 // what to do about it
  std::vector<ObservedFailure> observed;  // at least one
};

class ErrorKnowledgeBase {
 public:
  // Parses the JSON text of a knowledge file; `origin` names it in errors.
  // InvalidArgument (one line, naming the entry) for bad JSON, a missing or
  // empty required field, an unknown key (keys starting with '_' are
  // comments), a duplicate or malformed id, an unknown status, or a pattern
  // that does not compile.
  static absl::StatusOr<ErrorKnowledgeBase> Parse(std::string_view json_text,
                                                  const std::string& origin);
  // Reads and parses `path`; NotFound when it does not exist.
  static absl::StatusOr<ErrorKnowledgeBase> Load(const std::filesystem::path& path);

  // The first entry whose pattern is found in MatchSubject(status,
  // signature), or nullptr. The pointer lives as long as this object.
  const KnownError* Match(std::string_view status, std::string_view signature) const;
  // The entry for a stored failure (its status and FailureSignature), or nullptr.
  const KnownError* MatchResult(const RunResult& result) const;

  // OK when every entry's every observed failure is matched by that entry
  // itself (not by an earlier one); else FailedPrecondition listing each one
  // that is not.
  absl::Status CheckObservedExamples() const;

  const std::vector<KnownError>& entries() const { return entries_; }

 private:
  std::vector<KnownError> entries_;
  // One compiled pattern per entry (shared: std::regex is copyable but big).
  std::vector<std::shared_ptr<const std::regex>> patterns_;
};

// <project home>/knowledge/errors.json.
std::filesystem::path DefaultKnowledgeBasePath();

}  // namespace compatlab

#endif  // COMPATLAB_QUERY_ERROR_KB_H_
