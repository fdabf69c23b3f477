// JSON answers of the API: bodies, errors {"error": ...}, and the HTTP status
// of an absl::Status.
#ifndef COMPATLAB_SERVER_RESPONSES_H_
#define COMPATLAB_SERVER_RESPONSES_H_

#include <string>

#include "absl/status/status.h"
#include "core/records.h"
#include "nlohmann/json.hpp"
#include "server/http_message.h"

namespace compatlab {

// The command that pulls `run`'s compile-store entry from `remote` (doc/compile-cache.md):
// "compatlab cache pull REMOTE --key ID", ID the SHA-256 of its compile_key, for a compiled
// run whose entry was kept or loaded (compile_entry "kept ...", cache_bundle hit); "" for any
// other run or an empty remote.
std::string CachePullCommand(const RunRecord& run, const std::string& remote);

// A request error: the HTTP status and the message of {"error": ...}.
struct HttpError {
  int status;
  std::string message;
};

// `body` as the answer, with `status`; never cached by the browser. Invalid
// UTF-8 in stored text is replaced (U+FFFD), never an exception.
void SendJson(HttpResponse& res, int status, const nlohmann::ordered_json& body);

// An empty JSON object with room for `members` members, to be filled member by
// member (`out["key"] = std::move(value)`), never regrown. nlohmann's ordered
// map is a vector of pair<const string, json>, which cannot be moved: each
// regrowth deep-copies every member already in it, and an answer built from an
// initializer list regrows at 2, 4 and 8 members (a page's rows copied three
// times over).
nlohmann::ordered_json ObjectWithRoom(size_t members);

// {"error": message} with the error's status.
void SendError(HttpResponse& res, const HttpError& error);

// 400 InvalidArgument and FailedPrecondition, 404 NotFound, 503 Unavailable,
// 501 Unimplemented, 500 anything else.
int HttpStatusOf(const absl::Status& status);

// The HTTP error of a failed status: HttpStatusOf and its message.
HttpError FromStatus(const absl::Status& status);

}  // namespace compatlab

#endif  // COMPATLAB_SERVER_RESPONSES_H_
