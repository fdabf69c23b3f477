#include "server/responses.h"

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

}  // namespace compatlab
