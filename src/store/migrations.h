// Schema migrations of a store. Internal to the store module.
//
// Version N of the schema is reached by applying migrations 1..N in order.
// Migration 1 creates the tables; the `runs` columns of every version come
// from the field table (FieldDef::since_version), so a version that only adds
// result fields needs no hand-written SQL: migration N adds, with ALTER TABLE,
// the fields whose since_version is N. See doc/results-schema.md.
#ifndef COMPATLAB_STORE_MIGRATIONS_H_
#define COMPATLAB_STORE_MIGRATIONS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "store/schema.h"
#include "store/sqlite.h"

namespace compatlab {

// The SQL statements of migration `version` (from version - 1 to `version`),
// with `fields` as the result fields.
// REQUIRES: 1 <= version.
std::vector<std::string> MigrationStatements(int version, const std::vector<FieldDef>& fields);

// Brings `db` from its PRAGMA user_version up to `target` in one transaction:
// the statements of each migration, then meta.schema_version, user_version and
// application_id. A store already at `target` is left untouched.
// FailedPrecondition when the store is newer than `target`.
// REQUIRES: no transaction is open on `db`.
absl::Status Migrate(sqlite::Database& db, int target, const std::vector<FieldDef>& fields);

// Checks, reading sqlite_schema and the tables' column lists only (no row of
// any table), that `db` holds exactly the schema objects that migrations
// 1..`version` make over `fields`: each table a table (never a view), STRICT
// as made, with the same columns (name, declared type, primary-key position,
// NOT NULL, DEFAULT; no generated column), each index the same index, and
// nothing else (no view, no trigger, no other table
// or index; SQLite's own sqlite_stat tables of ANALYZE aside).
// FailedPrecondition naming the first difference otherwise.
// REQUIRES: 1 <= version <= kSchemaVersion.
absl::Status CheckSchemaObjects(sqlite::Database& db, int version,
                                const std::vector<FieldDef>& fields);

}  // namespace compatlab

#endif  // COMPATLAB_STORE_MIGRATIONS_H_
