#include "store/schema.h"

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_split.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "sqlite3.h"
#include "store/sqlite.h"
#include "store/store.h"
#include "store/testing.h"

namespace compatlab {
namespace {

TEST(SchemaTest, NamesAreUniqueAndFollowUnitConventions) {
  std::set<std::string_view> names;
  int previous_version = 1;
  for (const FieldDef& f : ResultFields()) {
    SCOPED_TRACE(f.name);
    EXPECT_TRUE(names.insert(f.name).second) << "duplicate field";
    // Later fields come last: ALTER TABLE appends columns, so a migrated
    // store keeps the field table's column order.
    EXPECT_GE(f.since_version, previous_version);
    EXPECT_LE(f.since_version, kSchemaVersion);
    previous_version = f.since_version;
    EXPECT_EQ(FindResultField(f.name), &f);
    EXPECT_EQ(f.description.find('|'), std::string_view::npos);
    if (f.name.ends_with("_s") && !f.name.ends_with("_per_s")) {
      EXPECT_EQ(f.type, FieldType::kReal);
      EXPECT_EQ(f.unit, "s");
    }
    if (f.name.ends_with("_bytes")) {
      EXPECT_EQ(f.type, FieldType::kInteger);
      EXPECT_EQ(f.unit, "bytes");
    }
    if (f.name.ends_with("_at")) {
      EXPECT_EQ(f.unit, "UTC ISO 8601");
    }
  }
  EXPECT_EQ(FindResultField("no_such_field"), nullptr);
}

TEST(SchemaTest, FillRulesNameModelKindsModesAndConditions) {
  const std::set<std::string_view> kinds = {"forward", "generate", "train", "load"};
  const std::set<std::string_view> modes = {"eager", "compile", "export"};
  std::set<std::string_view> conditions;
  for (FillWhen when : AllFillWhens()) EXPECT_TRUE(conditions.insert(FillWhenName(when)).second);
  for (const FieldDef& f : ResultFields()) {
    SCOPED_TRACE(f.name);
    for (const FillRule& rule : f.fill) {
      EXPECT_FALSE(rule.kinds.empty() || rule.modes.empty());
      for (std::string_view kind : rule.kinds) EXPECT_TRUE(kinds.contains(kind)) << kind;
      for (std::string_view mode : rule.modes) EXPECT_TRUE(modes.contains(mode)) << mode;
      for (FillWhen when : rule.when) EXPECT_FALSE(FillWhenName(when).empty());
    }
    if (f.bulky) {
      EXPECT_EQ(f.type, FieldType::kText);
    }
    EXPECT_EQ(f.child == ChildSection::kNone, f.child_key.empty());
  }
  EXPECT_TRUE(FindResultField("stdout_tail")->bulky);
  EXPECT_FALSE(FindResultField("steady_median_s")->fill.empty());
}

TEST(SchemaTest, GetThenSetCopiesEveryField) {
  const RunRecord full = test::FullRun("s1");
  const RunRecord empty;
  RunRecord copy;
  for (const FieldDef& f : ResultFields()) {
    SCOPED_TRACE(f.name);
    // FullRun sets every field to a non-default value, so this test and the
    // store's round trip cover a field as soon as it is added.
    EXPECT_NE(f.get(full), f.get(empty)) << "test::FullRun leaves the field at its default";
    ASSERT_TRUE(f.set(f.get(full), copy).ok());
    EXPECT_EQ(f.get(copy), f.get(full));
  }
  EXPECT_EQ(copy.spec.kind_params, full.spec.kind_params);
  EXPECT_EQ(copy.result.status, TestStatus::kCrash);
}

TEST(SchemaTest, SetRejectsWrongValuesAndLeavesRecordUnchanged) {
  RunRecord record = test::FullRun("s1");
  const RunRecord before = record;
  EXPECT_FALSE(FindResultField("run_id")->set(std::monostate{}, record).ok());
  EXPECT_FALSE(FindResultField("run_id")->set(int64_t{1}, record).ok());
  EXPECT_FALSE(FindResultField("batch_size")->set(1.5, record).ok());
  EXPECT_FALSE(FindResultField("wall_s")->set(std::string("1"), record).ok());
  EXPECT_FALSE(FindResultField("status")->set(std::string("passed"), record).ok());
  EXPECT_FALSE(FindResultField("kind_params")->set(std::string("[1]"), record).ok());
  EXPECT_FALSE(FindResultField("kind_params")->set(std::string("{\"a\":1}"), record).ok());
  for (const FieldDef& f : ResultFields()) EXPECT_EQ(f.get(record), f.get(before)) << f.name;

  ASSERT_TRUE(FindResultField("build_s")->set(std::monostate{}, record).ok());
  EXPECT_FALSE(record.result.build_s.has_value());
}

TEST(SchemaTest, KindParamsJsonIsCanonical) {
  EXPECT_EQ(KindParamsToJson({}), "{}");
  EXPECT_EQ(KindParamsToJson({{"z", "1"}, {"a", "x y"}}), R"({"a":"x y","z":"1"})");
  auto parsed = KindParamsFromJson(R"( { "z" : "1", "a": "x y" } )");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(KindParamsToJson(*parsed), R"({"a":"x y","z":"1"})");
  EXPECT_FALSE(KindParamsFromJson("not json").ok());
  EXPECT_FALSE(KindParamsFromJson(R"({"a":null})").ok());
}

// One row of the field table of doc/results-schema.md.
struct DocRow {
  std::string name, type, unit, description;
};

std::string Trim(std::string_view s) {
  const size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return "";
  return std::string(s.substr(begin, s.find_last_not_of(" \t") - begin + 1));
}

// `name` without the backticks around it.
std::string Unquote(const std::string& s) {
  if (s.size() >= 2 && s.front() == '`' && s.back() == '`') return s.substr(1, s.size() - 2);
  return s;
}

// The rows of the table whose header is `| name | type | unit | description |`.
std::vector<DocRow> ReadDocFieldTable(const std::string& markdown, std::string* error) {
  std::vector<DocRow> rows;
  std::istringstream in(markdown);
  std::string line;
  int tables = 0;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (Trim(line) == "| name | type | unit | description |") {
      ++tables;
      in_table = true;
      std::getline(in, line);  // | --- | --- | ...
      continue;
    }
    if (!in_table) continue;
    if (!Trim(line).starts_with("|")) {
      in_table = false;
      continue;
    }
    std::vector<std::string> cells = absl::StrSplit(Trim(line), '|');
    // "| a | b | c | d |" splits into "", a, b, c, d, "".
    if (cells.size() != 6) {
      *error = "malformed row: " + line;
      return {};
    }
    rows.push_back({Unquote(Trim(cells[1])), Trim(cells[2]), Trim(cells[3]), Trim(cells[4])});
  }
  if (tables != 1) *error = fmt::format("expected one field table, found {}", tables);
  return rows;
}

std::string ExpectedDocRow(const FieldDef& f) {
  return fmt::format("| `{}` | {} | {} | {} |", f.name, DocTypeName(f), f.unit, f.description);
}

TEST(SchemaDocTest, DocMatchesCode) {
  const char* source_dir = std::getenv("COMPATLAB_SOURCE_DIR");
  ASSERT_NE(source_dir, nullptr) << "COMPATLAB_SOURCE_DIR is not set";
  const std::filesystem::path doc = std::filesystem::path(source_dir) / "doc/results-schema.md";
  std::ifstream file(doc);
  ASSERT_TRUE(file) << "cannot read " << doc;
  std::stringstream markdown;
  markdown << file.rdbuf();
  EXPECT_NE(markdown.str().find(fmt::format("Schema version: **{}**", kSchemaVersion)),
            std::string::npos)
      << doc << " does not state the schema version " << kSchemaVersion;

  std::string error;
  const std::vector<DocRow> rows = ReadDocFieldTable(markdown.str(), &error);
  ASSERT_TRUE(error.empty()) << doc << ": " << error;
  const std::vector<FieldDef>& fields = ResultFields();
  for (size_t i = 0; i < std::max(rows.size(), fields.size()); ++i) {
    if (i >= rows.size()) {
      ADD_FAILURE() << "missing from " << doc << ":\n" << ExpectedDocRow(fields[i]);
      continue;
    }
    if (i >= fields.size()) {
      ADD_FAILURE() << "not in schema.h: " << rows[i].name;
      continue;
    }
    const FieldDef& f = fields[i];
    const DocRow& row = rows[i];
    EXPECT_TRUE(row.name == f.name && row.type == DocTypeName(f) && row.unit == f.unit &&
                row.description == f.description)
        << "row " << i + 1 << " of the field table in " << doc << " should be\n"
        << ExpectedDocRow(f);
  }

  // A freshly created store has exactly these columns, in this order.
  test::ScopedTempDir temp;
  const std::filesystem::path& dir = temp.path();
  ASSERT_TRUE(Store::Open(dir / "fresh.db", OpenMode::kReadWriteCreate).ok());
  auto db = sqlite::Database::Open((dir / "fresh.db").string(), SQLITE_OPEN_READONLY);
  ASSERT_TRUE(db.ok()) << db.status();
  auto columns = (*db)->Prepare("SELECT name, type, \"notnull\" FROM pragma_table_info('runs')");
  ASSERT_TRUE(columns.ok()) << columns.status();
  size_t i = 0;
  while (true) {
    auto row = columns->Step();
    ASSERT_TRUE(row.ok()) << row.status();
    if (!*row) break;
    ASSERT_LT(i, fields.size()) << "extra column " << columns->ColumnText(0);
    EXPECT_EQ(columns->ColumnText(0), fields[i].name);
    EXPECT_EQ(columns->ColumnText(1), SqlTypeName(fields[i].type)) << fields[i].name;
    EXPECT_EQ(columns->ColumnInt(2) == 0, fields[i].nullable) << fields[i].name;
    ++i;
  }
  EXPECT_EQ(i, fields.size());
}

}  // namespace
}  // namespace compatlab
