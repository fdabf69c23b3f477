#include "store/migrations.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "sqlite3.h"
#include "store/testing.h"

namespace compatlab {
namespace {

// The result fields of a hypothetical schema version 2 that adds a nullable
// metric and a text field with a default.
std::vector<FieldDef> FieldsOfVersion2() {
  std::vector<FieldDef> fields = ResultFields();
  FieldDef metric{"compile_cache_hits", FieldGroup::kResult, FieldType::kInteger, true, "",
                  "Compile cache hits.", 2,
                  [](const RunRecord&) -> FieldValue { return std::monostate{}; },
                  [](const FieldValue&, RunRecord&) { return absl::OkStatus(); }};
  FieldDef text{"device_name", FieldGroup::kContext, FieldType::kText, false, "",
                "Device name.", 2,
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
  EXPECT_TRUE(MigrationStatements(2, ResultFields()).empty());
}

TEST(MigrationsTest, LaterVersionAddsItsFieldsAsColumns) {
  test::ScopedTempDir dir;
  auto db = OpenDb(dir.path() / "m.db");
  std::vector<FieldDef> v2 = FieldsOfVersion2();
  ASSERT_TRUE(Migrate(*db, 1, v2).ok());
  EXPECT_EQ(RunColumns(*db).size(), ResultFields().size());
  EXPECT_EQ(*db->QueryInt("PRAGMA user_version"), 1);

  ASSERT_TRUE(Migrate(*db, 2, v2).ok());
  std::vector<std::string> columns = RunColumns(*db);
  ASSERT_EQ(columns.size(), v2.size());
  EXPECT_EQ(columns[columns.size() - 2], "compile_cache_hits");
  EXPECT_EQ(columns.back(), "device_name");
  EXPECT_EQ(*db->QueryInt("PRAGMA user_version"), 2);
  EXPECT_EQ(*db->QueryInt("SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'schema_version'"),
            2);
  EXPECT_EQ(*db->QueryInt("PRAGMA application_id"), kStoreApplicationId);

  // Going back is refused; staying is a no-op.
  EXPECT_EQ(Migrate(*db, 1, v2).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Migrate(*db, 2, v2).ok());
}

TEST(MigrationsTest, FailedMigrationChangesNothing) {
  test::ScopedTempDir dir;
  auto db = OpenDb(dir.path() / "m.db");
  ASSERT_TRUE(Migrate(*db, 1, ResultFields()).ok());
  std::vector<FieldDef> broken = FieldsOfVersion2();
  broken.back().name = "run_id";  // a column that exists: ALTER TABLE fails
  EXPECT_FALSE(Migrate(*db, 2, broken).ok());
  EXPECT_EQ(*db->QueryInt("PRAGMA user_version"), 1);
  EXPECT_EQ(RunColumns(*db).size(), ResultFields().size());
  EXPECT_EQ(*db->QueryInt("SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'schema_version'"),
            1);
}

}  // namespace
}  // namespace compatlab
