#include "core/limits.h"

#include <cmath>
#include <variant>

#include "core/fields.h"
#include "fmt/format.h"

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
