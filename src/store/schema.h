// The result fields as the SQLite store holds them: the field table itself is
// core/fields.h (ResultFields(), kSchemaVersion); this header adds what only
// the store needs.
#ifndef COMPATLAB_STORE_SCHEMA_H_
#define COMPATLAB_STORE_SCHEMA_H_

#include <cstdint>
#include <string_view>

#include "core/fields.h"

namespace compatlab {

// The PRAGMA application_id that marks a SQLite file as a compatlab store ("clab").
inline constexpr int32_t kStoreApplicationId = 0x636c6162;

// "TEXT", "INTEGER", "REAL": the SQLite (STRICT) column type of a field.
constexpr std::string_view SqlTypeName(FieldType type) {
  switch (type) {
    case FieldType::kText:
      return "TEXT";
    case FieldType::kInteger:
      return "INTEGER";
    case FieldType::kReal:
      return "REAL";
  }
  return "TEXT";
}

}  // namespace compatlab

#endif  // COMPATLAB_STORE_SCHEMA_H_
