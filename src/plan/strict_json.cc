#include "plan/strict_json.h"

#include <set>
#include <vector>

#include "absl/strings/str_cat.h"

namespace compatlab {

absl::StatusOr<nlohmann::json> ParseStrictJson(const std::string& text, const std::string& origin) {
  using nlohmann::json;
  std::vector<std::set<std::string>> open_objects;  // the keys seen in each object being parsed
  std::string duplicate;
  bool found = false;
  bool too_deep = false;
  const json::parser_callback_t detect = [&](int depth, json::parse_event_t event, json& parsed) {
    const bool opens =
        event == json::parse_event_t::object_start || event == json::parse_event_t::array_start;
    if (opens && depth >= kMaxStrictJsonDepth) {  // skipped whole: nothing deeper is kept
      too_deep = true;
      return false;
    }
    if (event == json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == json::parse_event_t::object_end && !open_objects.empty()) {
      open_objects.pop_back();
    } else if (event == json::parse_event_t::key && !open_objects.empty() && !found) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second) {
        duplicate = key;
        found = true;
      }
    }
    return true;
  };
  json j = json::parse(text, detect, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(origin, ": not valid JSON"));
  if (too_deep) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": nested deeper than ", kMaxStrictJsonDepth, " levels"));
  }
  if (found) {
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ": key '", duplicate, "' appears twice in one object"));
  }
  return j;
}

}  // namespace compatlab
