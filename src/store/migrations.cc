#include "store/migrations.h"

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "store/sqlite.h"

namespace compatlab {
namespace {

// A constant as SQL text, for DDL (where parameters cannot be bound).
std::string SqlLiteral(const FieldValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) return fmt::format("{}", *i);
  if (const auto* d = std::get_if<double>(&value)) return fmt::format("{}", *d);
  if (const auto* s = std::get_if<std::string>(&value)) {
    std::string quoted = "'";
    for (char c : *s) quoted += c == '\'' ? std::string("''") : std::string(1, c);
    return quoted + "'";
  }
  return "NULL";
}

// "name TYPE [NOT NULL [DEFAULT x]]". ALTER TABLE ADD COLUMN needs the default
// for a NOT NULL column: the value a default-constructed RunRecord holds.
std::string ColumnDef(const FieldDef& field, bool with_default) {
  std::string def = fmt::format("{} {}", field.name, SqlTypeName(field.type));
  if (!field.nullable) {
    def += " NOT NULL";
    if (with_default) def += " DEFAULT " + SqlLiteral(field.get(RunRecord{}));
  }
  return def;
}

std::vector<std::string> CreateTables(const std::vector<FieldDef>& fields) {
  std::vector<std::string> runs_columns;
  for (const FieldDef& field : fields) {
    if (field.since_version <= 1) runs_columns.push_back("  " + ColumnDef(field, false));
  }
  runs_columns.push_back("  PRIMARY KEY (run_id)");
  runs_columns.push_back("  UNIQUE (sweep_id, test_id)");
  runs_columns.push_back("  FOREIGN KEY (sweep_id) REFERENCES sweeps (sweep_id)");
  runs_columns.push_back(
      "  FOREIGN KEY (sweep_id, test_id) REFERENCES planned_tests (sweep_id, test_id)");
  return {
      "CREATE TABLE meta (\n"
      "  key TEXT NOT NULL PRIMARY KEY,\n"
      "  value TEXT NOT NULL\n"
      ") STRICT",
      "CREATE TABLE sweeps (\n"
      "  sweep_id TEXT NOT NULL PRIMARY KEY,\n"
      "  created_at TEXT NOT NULL,\n"
      "  finished_at TEXT,\n"
      "  suite TEXT NOT NULL,\n"
      "  args TEXT NOT NULL,\n"
      "  host TEXT NOT NULL,\n"
      "  jobs INTEGER NOT NULL,\n"
      "  planned INTEGER NOT NULL\n"
      ") STRICT",
      "CREATE TABLE planned_tests (\n"
      "  sweep_id TEXT NOT NULL REFERENCES sweeps (sweep_id),\n"
      "  ordinal INTEGER NOT NULL,\n"
      "  test_id TEXT NOT NULL,\n"
      "  spec TEXT NOT NULL,\n"
      "  PRIMARY KEY (sweep_id, ordinal),\n"
      "  UNIQUE (sweep_id, test_id)\n"
      ") STRICT",
      fmt::format("CREATE TABLE runs (\n{}\n) STRICT", fmt::join(runs_columns, ",\n")),
      "CREATE INDEX runs_by_test_id ON runs (test_id)",
  };
}

}  // namespace

std::vector<std::string> MigrationStatements(int version, const std::vector<FieldDef>& fields) {
  std::vector<std::string> statements;
  if (version == 1) statements = CreateTables(fields);
  // Hand-written steps of later versions (table rebuilds, new tables) go here,
  // under `if (version == N)`, before the added columns.
  for (const FieldDef& field : fields) {
    if (version > 1 && field.since_version == version) {
      statements.push_back("ALTER TABLE runs ADD COLUMN " + ColumnDef(field, true));
    }
  }
  return statements;
}

absl::Status Migrate(sqlite::Database& db, int target, const std::vector<FieldDef>& fields) {
  sqlite::Transaction transaction(&db);
  STORE_RETURN_IF_ERROR(transaction.Begin());
  // Read inside the transaction: another process may have migrated meanwhile.
  STORE_ASSIGN_OR_RETURN(const int64_t version, db.QueryInt("PRAGMA user_version"));
  if (version > target) {
    return absl::FailedPreconditionError(
        fmt::format("{}: store schema version {} is newer than this compatlab's ({}); use a "
                    "newer compatlab",
                    db.path(), version, target));
  }
  if (version == target) return absl::OkStatus();
  for (int v = static_cast<int>(version) + 1; v <= target; ++v) {
    for (const std::string& sql : MigrationStatements(v, fields)) {
      STORE_RETURN_IF_ERROR(db.Exec(sql));
    }
  }
  STORE_ASSIGN_OR_RETURN(sqlite::Statement set_meta,
                         db.Prepare("INSERT INTO meta (key, value) VALUES (?, ?) "
                                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"));
  auto set = [&set_meta](const std::string& key, const std::string& value) -> absl::Status {
    set_meta.Reset();
    STORE_RETURN_IF_ERROR(set_meta.BindAll(key, value));
    return set_meta.Run();
  };
  if (version == 0) STORE_RETURN_IF_ERROR(set("created_by", "compatlab " COMPATLAB_VERSION));
  STORE_RETURN_IF_ERROR(set("schema_version", std::to_string(target)));
  // Values from this code, not from input: safe to format into the pragma.
  STORE_RETURN_IF_ERROR(db.Exec(fmt::format("PRAGMA user_version = {}", target)));
  STORE_RETURN_IF_ERROR(db.Exec(fmt::format("PRAGMA application_id = {}", kStoreApplicationId)));
  return transaction.Commit();
}

}  // namespace compatlab
