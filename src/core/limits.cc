#include "core/limits.h"

#include <algorithm>
#include <cmath>
#include <variant>

#include "absl/strings/ascii.h"
#include "core/fields.h"
#include "fmt/format.h"
#include "util/utf8.h"

namespace compatlab {

absl::StatusOr<int64_t> CheckImportedRun(const RunRecord& record) {
  int64_t row_bytes = 0;
  for (const FieldDef& field : ResultFields()) {
    if (field.type != FieldType::kText) continue;
    const FieldValue value = field.get(record);
    const std::string* text = std::get_if<std::string>(&value);
    if (text == nullptr) continue;
    const auto size = static_cast<int64_t>(text->size());
    if (size > kMaxImportTextBytes) {
      return absl::InvalidArgumentError(
          fmt::format("field {} holds {} bytes, over the limit of {} (doc/limits.md)", field.name,
                      size, kMaxImportTextBytes));
    }
    row_bytes += size;
  }
  if (row_bytes > kMaxImportRowBytes) {
    return absl::InvalidArgumentError(
        fmt::format("its text fields hold {} bytes together, over the limit of {} per run "
                    "(doc/limits.md)",
                    row_bytes, kMaxImportRowBytes));
  }
  return row_bytes;
}

std::string TruncateForDisplay(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t cut = max_bytes;
  // Back to the start of a UTF-8 sequence: never a continuation byte.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return fmt::format("{} [... {} more bytes]", text.substr(0, cut), text.size() - cut);
}

absl::Status CheckStoredId(std::string_view id, std::string_view what) {
  const bool charset = std::all_of(id.begin(), id.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
  if (!id.empty() && id.size() <= kMaxStoredIdBytes && charset &&
      id.find("..") == std::string_view::npos && id != ".") {
    return absl::OkStatus();
  }
  // Shown as any untrusted text is: cut, valid UTF-8, control characters escaped.
  const std::string shown = EscapeControls(ToValidUtf8(TruncateForDisplay(id, 64)), false);
  return absl::InvalidArgumentError(
      fmt::format("{} '{}' is not an id compatlab writes: 1 to {} characters of letters, digits, "
                  "'.', '_' and '-', no '..' (doc/limits.md)",
                  what, shown, kMaxStoredIdBytes));
}

absl::Status CheckDuration(double seconds, std::string_view what, bool zero_ok) {
  const bool in_range =
      std::isfinite(seconds) && (zero_ok ? seconds >= 0 : seconds > 0) && seconds <= kMaxDurationS;
  if (in_range) return absl::OkStatus();
  return absl::InvalidArgumentError(
      fmt::format("{} must be a finite number of seconds, {} {} "
                  "and at most {} (a week); got {}",
                  what, zero_ok ? "at least" : "more than", 0, kMaxDurationS, seconds));
}

}  // namespace compatlab
