#include "store/migrations.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "sqlite3.h"
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

// Op coverage (doc/ops.md, "Store tables"): an op sweep per target and mode, and
// its results, one per (op, variant, dtype).
constexpr const char* kOpCoverageTables[] = {
    "CREATE TABLE op_sweeps (\n"
    "  op_sweep_id TEXT NOT NULL PRIMARY KEY,\n"
    "  created_at TEXT NOT NULL,\n"
    "  finished_at TEXT,\n"
    "  target TEXT NOT NULL,\n"
    "  mode TEXT NOT NULL,\n"
    "  backend TEXT NOT NULL,\n"
    "  dtypes TEXT NOT NULL,\n"
    "  max_samples INTEGER NOT NULL,\n"
    "  check_skips INTEGER NOT NULL,\n"
    "  torch_version TEXT NOT NULL,\n"
    "  python_version TEXT NOT NULL,\n"
    "  host TEXT NOT NULL,\n"
    "  args TEXT NOT NULL,\n"
    "  planned INTEGER NOT NULL\n"
    ") STRICT",
    "CREATE TABLE op_results (\n"
    "  op_sweep_id TEXT NOT NULL REFERENCES op_sweeps (op_sweep_id),\n"
    "  op TEXT NOT NULL,\n"
    "  variant TEXT NOT NULL,\n"
    "  dtype TEXT NOT NULL,\n"
    "  status TEXT NOT NULL,\n"
    "  detail TEXT NOT NULL,\n"
    "  samples INTEGER NOT NULL,\n"
    "  passed INTEGER NOT NULL,\n"
    "  failed INTEGER NOT NULL,\n"
    "  errored INTEGER NOT NULL,\n"
    "  timed_out INTEGER NOT NULL,\n"
    "  first_failure TEXT NOT NULL,\n"
    "  error_type TEXT NOT NULL,\n"
    "  signature TEXT NOT NULL,\n"
    "  max_abs_err REAL,\n"
    "  max_rel_err REAL,\n"
    "  atol REAL,\n"
    "  rtol REAL,\n"
    "  tol_source TEXT NOT NULL,\n"
    "  ref_dtype TEXT NOT NULL,\n"
    "  fallback_audit TEXT NOT NULL,\n"
    "  aten_ops TEXT NOT NULL,\n"
    "  fallback_ops TEXT NOT NULL,\n"
    "  skip_source TEXT NOT NULL,\n"
    "  skip_kind TEXT NOT NULL,\n"
    "  skip_reason TEXT NOT NULL,\n"
    "  wall_s REAL NOT NULL,\n"
    "  PRIMARY KEY (op_sweep_id, op, variant, dtype)\n"
    ") STRICT",
};

}  // namespace

std::vector<std::string> MigrationStatements(int version, const std::vector<FieldDef>& fields) {
  std::vector<std::string> statements;
  if (version == 1) statements = CreateTables(fields);
  // Hand-written steps of later versions (table rebuilds, new tables) go here,
  // under `if (version == N)`, before the added columns.
  if (version == kShardedSweepsVersion) {
    statements.push_back("ALTER TABLE sweeps ADD COLUMN plan_id TEXT NOT NULL DEFAULT ''");
    statements.push_back("ALTER TABLE sweeps ADD COLUMN shard INTEGER");
    statements.push_back("ALTER TABLE sweeps ADD COLUMN shards INTEGER");
  }
  if (version == kOpCoverageVersion) {
    for (const char* sql : kOpCoverageTables) statements.push_back(sql);
  }
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

namespace {

// One schema object as sqlite_schema lists it, with what defines it: a
// table's kind (a virtual table is no store's), whether it is STRICT, and
// columns ("name type pk hidden notnull default" each), an index's SQL text
// (NULL for the indexes SQLite makes for PRIMARY KEY and UNIQUE).
struct SchemaObject {
  std::string type;
  std::string table;
  std::vector<std::string> definition;
  bool operator==(const SchemaObject&) const = default;
};
using SchemaObjects = std::map<std::string, SchemaObject>;

bool IsStatTable(const std::string& name) { return name.starts_with("sqlite_stat"); }

absl::StatusOr<SchemaObjects> ReadSchemaObjects(sqlite::Database& db) {
  SchemaObjects objects;
  STORE_ASSIGN_OR_RETURN(sqlite::Statement list,
                         db.Prepare("SELECT type, name, tbl_name, sql FROM sqlite_schema"));
  while (true) {
    STORE_ASSIGN_OR_RETURN(const bool row, list.Step());
    if (!row) break;
    SchemaObject& object = objects[list.ColumnText(1)];
    object.type = list.ColumnText(0);
    object.table = list.ColumnText(2);
    if (object.type == "index") {
      object.definition.push_back(list.ColumnIsNull(3) ? "(auto)" : list.ColumnText(3));
    } else if (object.type == "table") {
      const bool virtual_table = list.ColumnText(3).starts_with("CREATE VIRTUAL");
      object.definition.push_back(virtual_table ? "virtual table" : "table");
    }
  }
  STORE_ASSIGN_OR_RETURN(sqlite::Statement columns,
                         db.Prepare("SELECT name, type, pk, hidden, \"notnull\", dflt_value "
                                    "FROM pragma_table_xinfo(?) ORDER BY cid"));
  STORE_ASSIGN_OR_RETURN(
      sqlite::Statement strict,
      db.Prepare("SELECT strict FROM pragma_table_list(?) WHERE schema = 'main'"));
  for (auto& [name, object] : objects) {
    if (object.type != "table" || IsStatTable(name) || object.definition.front() != "table") {
      continue;  // a virtual table is refused unread
    }
    strict.Reset();
    STORE_RETURN_IF_ERROR(strict.BindAll(name));
    STORE_ASSIGN_OR_RETURN(const bool listed, strict.Step());
    object.definition.push_back(listed && strict.ColumnInt(0) == 1 ? "strict" : "not strict");
    columns.Reset();
    STORE_RETURN_IF_ERROR(columns.BindAll(name));
    while (true) {
      STORE_ASSIGN_OR_RETURN(const bool row, columns.Step());
      if (!row) break;
      object.definition.push_back(fmt::format(
          "{} {} pk={} hidden={} notnull={} default={}", columns.ColumnText(0),
          columns.ColumnText(1), columns.ColumnInt(2), columns.ColumnInt(3), columns.ColumnInt(4),
          columns.ColumnIsNull(5) ? "none" : columns.ColumnText(5)));
    }
  }
  return objects;
}

// What Migrate runs to reach `version` over `fields`: the key of its schema.
std::string MigrationKey(int version, const std::vector<FieldDef>& fields) {
  std::string key;
  for (int v = 1; v <= version; ++v) {
    for (const std::string& sql : MigrationStatements(v, fields)) key += sql + ";\n";
  }
  return key;
}

// The schema objects of migrations 1..version over `fields`, made once per
// version and fields in an in-memory database.
absl::StatusOr<SchemaObjects> ExpectedSchemaObjects(int version,
                                                    const std::vector<FieldDef>& fields) {
  static std::mutex mu;
  static auto* const made = new std::map<std::pair<int, std::string>, SchemaObjects>();
  const std::pair<int, std::string> key(version, MigrationKey(version, fields));
  std::lock_guard lock(mu);
  if (auto it = made->find(key); it != made->end()) return it->second;
  STORE_ASSIGN_OR_RETURN(
      std::unique_ptr<sqlite::Database> reference,
      sqlite::Database::Open(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  STORE_RETURN_IF_ERROR(Migrate(*reference, version, fields));
  STORE_ASSIGN_OR_RETURN(SchemaObjects objects, ReadSchemaObjects(*reference));
  return made->emplace(key, std::move(objects)).first->second;
}

// The first column definition where `found` differs from `expected`.
std::string FirstDifference(const std::vector<std::string>& found,
                            const std::vector<std::string>& expected) {
  for (size_t i = 0; i < std::max(found.size(), expected.size()); ++i) {
    const std::string f = i < found.size() ? found[i] : "nothing";
    const std::string e = i < expected.size() ? expected[i] : "nothing";
    if (f != e) return fmt::format("has '{}' where this version has '{}'", f, e);
  }
  return "differs";
}

}  // namespace

absl::Status CheckSchemaObjects(sqlite::Database& db, int version,
                                const std::vector<FieldDef>& fields) {
  STORE_ASSIGN_OR_RETURN(const SchemaObjects expected, ExpectedSchemaObjects(version, fields));
  STORE_ASSIGN_OR_RETURN(const SchemaObjects found, ReadSchemaObjects(db));
  auto refuse = [&db, version](const std::string& what) {
    return absl::FailedPreconditionError(
        fmt::format("{}: not a compatlab store of schema version {}: {}; nothing read from it",
                    db.path(), version, what));
  };
  // What a store must hold first (a view in a table's place is the telling
  // difference), then what it must not.
  for (const auto& [name, want] : expected) {
    auto it = found.find(name);
    if (it == found.end()) return refuse(fmt::format("it has no {} {}", want.type, name));
    const SchemaObject& object = it->second;
    if (object.type != want.type) {
      return refuse(fmt::format("{} is a {} where a store has a {}", name, object.type, want.type));
    }
    if (object.table != want.table) {
      return refuse(
          fmt::format("{} {} belongs to {}, not {}", object.type, name, object.table, want.table));
    }
    if (object.definition != want.definition) {
      return refuse(fmt::format("{} {} {}", object.type, name,
                                FirstDifference(object.definition, want.definition)));
    }
  }
  for (const auto& [name, object] : found) {
    if (expected.count(name) != 0 || (object.type == "table" && IsStatTable(name))) continue;
    return refuse(fmt::format("it holds {} {}, which no store has", object.type, name));
  }
  return absl::OkStatus();
}

}  // namespace compatlab
