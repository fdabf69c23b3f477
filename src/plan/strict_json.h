// JSON of the files a person writes (suites, target profiles), read strictly.
#ifndef COMPATLAB_PLAN_STRICT_JSON_H_
#define COMPATLAB_PLAN_STRICT_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/limits.h"
#include "nlohmann/json.hpp"

namespace compatlab {

// `text` parsed as JSON. InvalidArgument "<origin>: not valid JSON" when it is
// not JSON, "<origin>: key 'K' appears twice in one object" when an object
// has a key twice (nlohmann's parser would keep the last one silently), and
// "<origin>: nested deeper than 64 levels" past kMaxStrictJsonDepth (core/limits.h).
absl::StatusOr<nlohmann::json> ParseStrictJson(const std::string& text, const std::string& origin);

}  // namespace compatlab

#endif  // COMPATLAB_PLAN_STRICT_JSON_H_
