#include "server/responses.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "fmt/format.h"
#include "util/hash.h"

namespace compatlab {

using nlohmann::ordered_json;

void SendJson(HttpResponse& res, int status, const ordered_json& body) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(body.dump(-1, ' ', false, ordered_json::error_handler_t::replace),
                  "application/json");
}

ordered_json ObjectWithRoom(size_t members) {
  ordered_json out = ordered_json::object();
  out.get_ref<ordered_json::object_t&>().reserve(members);
  return out;
}

void SendError(HttpResponse& res, const HttpError& error) {
  SendJson(res, error.status, ordered_json{{"error", error.message}});
}

int HttpStatusOf(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
      return 400;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kUnimplemented:
      return 501;
    default:
      return 500;
  }
}

HttpError FromStatus(const absl::Status& status) {
  return {HttpStatusOf(status), std::string(status.message())};
}

namespace {

// `text` as one shell word: as it is when it holds only [A-Za-z0-9_./:@+-], else single-quoted.
std::string ShellWord(const std::string& text) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_./:@+-", c) != nullptr;
  });
  if (plain) return text;
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string CachePullCommand(const RunRecord& run, const std::string& remote) {
  const RunResult& r = run.result;
  const bool stored =
      r.compile_entry.starts_with(kCompileEntryKeptPrefix) || r.cache_bundle == "hit";
  if (remote.empty() || r.compile_key.empty() || !stored || !run.spec.IsCompiled()) return "";
  return fmt::format("compatlab cache pull {} --key {}", ShellWord(remote),
                     Sha256Hex(r.compile_key));
}

}  // namespace compatlab
