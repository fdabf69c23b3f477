#include "store/migrations.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "sqlite3.h"
#include "store/testing.h"

namespace compatlab {
namespace {

// The result fields of a hypothetical next schema version that adds a
// nullable metric and a text field with a default.
constexpr int kNext = kSchemaVersion + 1;
std::vector<FieldDef> FieldsOfNextVersion() {
  std::vector<FieldDef> fields = ResultFields();
  FieldDef metric{"next_metric",
                  FieldGroup::kResult,
                  FieldType::kInteger,
                  true,
                  "",
                  "A metric.",
                  kNext,
                  [](const RunRecord&) -> FieldValue { return std::monostate{}; },
                  [](const FieldValue&, RunRecord&) { return absl::OkStatus(); }};
  FieldDef text{"device_name",
                FieldGroup::kContext,
                FieldType::kText,
                false,
                "",
                "Device name.",
                kNext,
                [](const RunRecord&) -> FieldValue { return std::string("it's none"); },
                [](const FieldValue&, RunRecord&) { return absl::OkStatus(); }};
  fields.push_back(metric);
  fields.push_back(text);
  return fields;
}

std::vector<std::string> RunColumns(sqlite::Database& db) {
  std::vector<std::string> names;
  auto select = db.Prepare("SELECT name FROM pragma_table_info('runs')");
  EXPECT_TRUE(select.ok()) << select.status();
  while (select.ok() && select->Step().value_or(false)) names.push_back(select->ColumnText(0));
  return names;
}

std::unique_ptr<sqlite::Database> OpenDb(const std::filesystem::path& path) {
  auto db = sqlite::Database::Open(path.string(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  EXPECT_TRUE(db.ok()) << db.status();
  return *std::move(db);
}

TEST(MigrationsTest, VersionOneCreatesTablesWithResultColumns) {
  const std::vector<std::string> sql = MigrationStatements(1, ResultFields());
  ASSERT_GE(sql.size(), 4u);
  EXPECT_TRUE(absl::StrContains(sql[0], "CREATE TABLE meta"));
  bool has_runs = false;
  for (const std::string& s : sql) has_runs |= absl::StrContains(s, "CREATE TABLE runs");
  EXPECT_TRUE(has_runs);
  EXPECT_TRUE(MigrationStatements(kNext, ResultFields()).empty());
}

TEST(MigrationsTest, EachVersionAddsItsFieldsInTableOrder) {
  test::ScopedTempDir dir;
  auto db = OpenDb(dir.path() / "m.db");
  ASSERT_TRUE(Migrate(*db, 1, ResultFields()).ok());
  size_t previous = RunColumns(*db).size();
  for (int version = 2; version <= kSchemaVersion; ++version) {
    SCOPED_TRACE(version);
    ASSERT_TRUE(Migrate(*db, version, ResultFields()).ok());
    std::vector<std::string> expected;
    for (const FieldDef& f : ResultFields()) {
      if (f.since_version <= version) expected.push_back(std::string(f.name));
    }
    EXPECT_EQ(RunColumns(*db), expected);
    // Every version adds a field but the ones that changed Parquet's column types,
    // the one that gave sweeps their plan and shard and the one of the op tables.
    if (version == kTypedListsVersion || version == kTypedLoadDistsVersion ||
        version == kKeyValueListsVersion || version == kShardedSweepsVersion ||
        version == kOpCoverageVersion) {
      EXPECT_EQ(previous, expected.size());
    } else {
      EXPECT_LT(previous, expected.size());
    }
    previous = expected.size();
  }
  EXPECT_EQ(previous, ResultFields().size());
}

TEST(MigrationsTest, TheOpCoverageVersionAddsTheOpTables) {
  test::ScopedTempDir dir;
  auto db = OpenDb(dir.path() / "m.db");
  ASSERT_TRUE(Migrate(*db, kOpCoverageVersion - 1, ResultFields()).ok());
  EXPECT_EQ(*db->QueryInt("SELECT count(*) FROM sqlite_schema WHERE name LIKE 'op_%'"), 0);
  ASSERT_TRUE(Migrate(*db, kOpCoverageVersion, ResultFields()).ok());
  EXPECT_EQ(*db->QueryInt("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN "
                          "('op_sweeps', 'op_results')"),
            2);
  EXPECT_TRUE(CheckSchemaObjects(*db, kOpCoverageVersion, ResultFields()).ok());
}

TEST(MigrationsTest, LaterVersionAddsItsFieldsAsColumns) {
  test::ScopedTempDir dir;
  auto db = OpenDb(dir.path() / "m.db");
  std::vector<FieldDef> next = FieldsOfNextVersion();
  ASSERT_TRUE(Migrate(*db, kSchemaVersion, next).ok());
  EXPECT_EQ(RunColumns(*db).size(), ResultFields().size());
  EXPECT_EQ(*db->QueryInt("PRAGMA user_version"), kSchemaVersion);

  ASSERT_TRUE(Migrate(*db, kNext, next).ok());
  std::vector<std::string> columns = RunColumns(*db);
  ASSERT_EQ(columns.size(), next.size());
  EXPECT_EQ(columns[columns.size() - 2], "next_metric");
  EXPECT_EQ(columns.back(), "device_name");
  EXPECT_EQ(*db->QueryInt("PRAGMA user_version"), kNext);
  EXPECT_EQ(*db->QueryInt("SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'schema_version'"),
            kNext);
  EXPECT_EQ(*db->QueryInt("PRAGMA application_id"), kStoreApplicationId);

  // Going back is refused; staying is a no-op.
  EXPECT_EQ(Migrate(*db, kSchemaVersion, next).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Migrate(*db, kNext, next).ok());
}

TEST(MigrationsTest, FailedMigrationChangesNothing) {
  test::ScopedTempDir dir;
  auto db = OpenDb(dir.path() / "m.db");
  ASSERT_TRUE(Migrate(*db, kSchemaVersion, ResultFields()).ok());
  std::vector<FieldDef> broken = FieldsOfNextVersion();
  broken.back().name = "run_id";  // a column that exists: ALTER TABLE fails
  EXPECT_FALSE(Migrate(*db, kNext, broken).ok());
  EXPECT_EQ(*db->QueryInt("PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(RunColumns(*db).size(), ResultFields().size());
  EXPECT_EQ(*db->QueryInt("SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'schema_version'"),
            kSchemaVersion);
}

}  // namespace
}  // namespace compatlab
