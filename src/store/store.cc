#include "store/store.h"

#include <unistd.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "core/limits.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "sqlite3.h"
#include "store/migrations.h"
#include "store/record_json.h"
#include "store/schema.h"
#include "store/sqlite.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;

constexpr int kBusyTimeoutMs = 10000;

// Every result column, in schema order: "run_id, sweep_id, ...".
const std::string& RunColumns() {
  static const std::string* const columns = [] {
    std::vector<std::string_view> names;
    for (const FieldDef& field : ResultFields()) names.push_back(field.name);
    return new std::string(fmt::format("{}", fmt::join(names, ", ")));
  }();
  return *columns;
}

// Decides, reading only, whether `db` may be used as a store in `mode`. OK for
// a compatlab store this build can open, and for an empty database in
// kReadWriteCreate (Migrate then creates the schema).
absl::Status CheckStore(sqlite::Database& db, OpenMode mode) {
  const std::string& path = db.path();
  // The first read of the file: fails with "file is not a database" for garbage.
  STORE_ASSIGN_OR_RETURN(const int64_t application_id, db.QueryInt("PRAGMA application_id"));
  STORE_ASSIGN_OR_RETURN(const int64_t version, db.QueryInt("PRAGMA user_version"));
  STORE_ASSIGN_OR_RETURN(const int64_t objects, db.QueryInt("SELECT count(*) FROM sqlite_schema"));
  if (application_id == 0 && version == 0 && objects == 0) {
    if (mode == OpenMode::kReadWriteCreate) return absl::OkStatus();
    return absl::FailedPreconditionError(
        fmt::format("{}: an empty database, not a compatlab store", path));
  }
  if (application_id != kStoreApplicationId) {
    return absl::FailedPreconditionError(fmt::format(
        "{}: a SQLite database but not a compatlab store (application_id {:#x}, expected {:#x})",
        path, application_id, kStoreApplicationId));
  }
  STORE_ASSIGN_OR_RETURN(
      const int64_t has_meta,
      db.QueryInt("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'meta'"));
  if (has_meta == 0) {
    return absl::FailedPreconditionError(
        fmt::format("{}: not a compatlab store (no meta table)", path));
  }
  if (version > kSchemaVersion) {
    return absl::FailedPreconditionError(
        fmt::format("{}: store schema version {} is newer than this compatlab's ({}); use a "
                    "newer compatlab",
                    path, version, kSchemaVersion));
  }
  if (version < 1) {
    return absl::DataLossError(fmt::format("{}: damaged store: user_version {}", path, version));
  }
  // Before any row is read: a view, trigger or other object in a store's
  // place could run any query.
  STORE_RETURN_IF_ERROR(CheckSchemaObjects(db, static_cast<int>(version), ResultFields()));
  STORE_ASSIGN_OR_RETURN(const int64_t meta_version,
                         db.QueryInt("SELECT coalesce((SELECT CAST(value AS INTEGER) FROM meta "
                                     "WHERE key = 'schema_version'), -1)"));
  if (meta_version != version) {
    return absl::DataLossError(
        fmt::format("{}: damaged store: user_version {} but meta schema_version {}", path, version,
                    meta_version));
  }
  if (version < kSchemaVersion && mode == OpenMode::kReadOnly) {
    return absl::FailedPreconditionError(
        fmt::format("{}: store schema version {} must be migrated to {}: run `compatlab migrate "
                    "--db {}` once (a sweep or an import into it migrates it too)",
                    path, version, kSchemaVersion, path));
  }
  return absl::OkStatus();
}

// PRAGMA integrity_check (not quick_check, which skips the indexes and UNIQUE
// constraints): DataLoss with its first findings when the file is damaged.
absl::Status CheckStoreIntegrity(sqlite::Database& db) {
  STORE_ASSIGN_OR_RETURN(sqlite::Statement check, db.Prepare("PRAGMA integrity_check(5)"));
  std::vector<std::string> findings;
  while (true) {
    STORE_ASSIGN_OR_RETURN(const bool row, check.Step());
    if (!row) break;
    findings.push_back(check.ColumnText(0));
  }
  if (findings.size() == 1 && findings.front() == "ok") return absl::OkStatus();
  return absl::DataLossError(
      fmt::format("{}: damaged store (SQLite integrity_check: {}); nothing written. Restore it "
                  "from a copy, or export what still reads (compatlab export) into a new store",
                  db.path(), fmt::join(findings, "; ")));
}

// The WHERE clause of a RunFilter, its values as parameters.
struct Where {
  std::string sql;
  std::vector<FieldValue> params;
};

Where BuildWhere(const RunFilter& filter) {
  Where where;
  std::vector<std::string> conditions;
  auto equals = [&](std::string_view column, const std::string& value) {
    if (value.empty()) return;
    conditions.push_back(fmt::format("{} = ?", column));
    where.params.emplace_back(value);
  };
  equals("sweep_id", filter.sweep_id);
  equals("kind", filter.kind);
  equals("mode", filter.mode);
  equals("target", filter.target);
  equals("dtype", filter.dtype);
  equals("torch_version", filter.torch_version);
  equals("transformers_version", filter.transformers_version);
  equals("stack", filter.stack);
  equals("test_id", filter.test_id);
  equals("run_id", filter.run_id);
  if (filter.status.has_value()) equals("status", std::string(TestStatusName(*filter.status)));
  if (!filter.model.empty()) {
    conditions.push_back(
        "(instr(lower(model_id), lower(?)) > 0 OR instr(lower(model_type), lower(?)) > 0 OR "
        "instr(lower(model_path), lower(?)) > 0)");
    for (int i = 0; i < 3; ++i) where.params.emplace_back(filter.model);
  }
  if (!conditions.empty()) where.sql = fmt::format(" WHERE {}", fmt::join(conditions, " AND "));
  return where;
}

absl::Status BindAllValues(sqlite::Statement& statement, const std::vector<FieldValue>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    STORE_RETURN_IF_ERROR(statement.Bind(static_cast<int>(i) + 1, values[i]));
  }
  return absl::OkStatus();
}

// The columns of `fields` (result field names): only schema field names reach
// SQL text, as fixed identifiers. InvalidArgument for any other name.
absl::StatusOr<std::vector<std::string_view>> FieldColumns(const std::vector<std::string>& fields) {
  std::vector<std::string_view> columns;
  for (const std::string& name : fields) {
    const FieldDef* field = FindResultField(name);
    if (field == nullptr) {
      return absl::InvalidArgumentError(fmt::format("'{}' is not a result field", name));
    }
    columns.push_back(field->name);
  }
  return columns;
}

// The result fields of the current row of `select`, every field of schema.h
// in order from column `first`. DataLoss when a stored value does not parse.
absl::StatusOr<RunRecord> ReadRunRow(sqlite::Statement& select, int first,
                                     const std::string& path) {
  const std::vector<FieldDef>& fields = ResultFields();
  RunRecord record;
  for (size_t i = 0; i < fields.size(); ++i) {
    absl::Status status = fields[i].set(select.Column(first + static_cast<int>(i)), record);
    if (!status.ok()) {
      return absl::DataLossError(fmt::format("{}: run {}: {}", path, select.ColumnText(first),
                                             std::string(status.message())));
    }
  }
  return record;
}

// The sweeps selected by `tail` ("WHERE ... ORDER BY ..."), bound to `params`.
absl::StatusOr<std::vector<SweepInfo>> SelectSweeps(sqlite::Database& db, const std::string& tail,
                                                    const std::vector<FieldValue>& params) {
  STORE_ASSIGN_OR_RETURN(
      sqlite::Statement select,
      db.Prepare("SELECT sweep_id, created_at, finished_at, suite, args, host, jobs, planned, "
                 "(SELECT count(*) FROM runs r WHERE r.sweep_id = s.sweep_id), plan_id, shard, "
                 "shards FROM sweeps s " +
                 tail));
  STORE_RETURN_IF_ERROR(BindAllValues(select, params));
  std::vector<SweepInfo> sweeps;
  while (true) {
    STORE_ASSIGN_OR_RETURN(const bool row, select.Step());
    if (!row) break;
    SweepInfo& sweep = sweeps.emplace_back();
    sweep.sweep_id = select.ColumnText(0);
    sweep.created_at = select.ColumnText(1);
    if (!select.ColumnIsNull(2)) sweep.finished_at = select.ColumnText(2);
    sweep.suite = select.ColumnText(3);
    sweep.args = select.ColumnText(4);
    sweep.host = select.ColumnText(5);
    sweep.jobs = select.ColumnInt(6);
    sweep.planned = select.ColumnInt(7);
    sweep.recorded = select.ColumnInt(8);
    sweep.plan_id = select.ColumnText(9);
    if (!select.ColumnIsNull(10)) sweep.shard = select.ColumnInt(10);
    if (!select.ColumnIsNull(11)) sweep.shards = select.ColumnInt(11);
  }
  return sweeps;
}

// The values of a sweeps row for `sweep` with `planned` tests, in the column
// order of CreateResolvedSweep's INSERT.
std::vector<FieldValue> SweepRowValues(const SweepInfo& sweep, size_t planned) {
  auto optional_int = [](const std::optional<int64_t>& v) {
    return v.has_value() ? FieldValue(*v) : FieldValue(std::monostate{});
  };
  return {sweep.sweep_id,
          sweep.created_at,
          sweep.finished_at ? FieldValue(*sweep.finished_at) : FieldValue(std::monostate{}),
          sweep.suite,
          sweep.args,
          sweep.host,
          sweep.jobs,
          static_cast<int64_t>(planned),
          sweep.plan_id,
          optional_int(sweep.shard),
          optional_int(sweep.shards)};
}

}  // namespace

absl::Status CheckStorePath(const fs::path& path) {
  const std::string text = path.string();
  if (text.empty()) return absl::InvalidArgumentError("--db: an empty path; name the store's file");
  if (text == ":memory:" || text.starts_with("file:")) {
    return absl::InvalidArgumentError(fmt::format(
        "--db {}: an in-memory or URI database would keep nothing; name the store's file", text));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<RunSortKey>> ParseRunSort(const std::string& text) {
  std::vector<RunSortKey> keys;
  if (text.empty()) return keys;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    RunSortKey key;
    if (!item.empty() && item[0] == '-') {
      key.descending = true;
      item.erase(0, 1);
    }
    if (item.empty()) {
      return absl::InvalidArgumentError(fmt::format("--sort '{}': an empty field name", text));
    }
    if (FindResultField(item) == nullptr) {
      return absl::InvalidArgumentError(
          fmt::format("--sort: '{}' is not a result field (see doc/results-schema.md)", item));
    }
    key.field = item;
    keys.push_back(std::move(key));
    start = end + 1;
  }
  return keys;
}

Store::Store(fs::path path, std::unique_ptr<sqlite::Database> db, int opened_version)
    : path_(std::move(path)), opened_version_(opened_version), db_(std::move(db)) {}

Store::~Store() = default;

namespace {

// `path` as an SQLite URI of an immutable read-only file: every byte outside
// the unreserved characters and '/' percent-encoded.
std::string ImmutableUri(const fs::path& path) {
  std::string uri = "file:";
  for (unsigned char c : fs::absolute(path).string()) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '/' || c == '-' || c == '.' || c == '_' || c == '~';
    uri += plain ? std::string(1, static_cast<char>(c)) : fmt::format("%{:02X}", c);
  }
  return uri + "?mode=ro&immutable=1";
}

// An immutable reader reads the file alone: a -wal beside it holding commits
// not yet in the file would be ignored, so such a store is refused.
absl::Status CheckNoPendingLog(const fs::path& path) {
  std::error_code error;
  const fs::path wal = path.string() + "-wal";
  const uintmax_t size = fs::file_size(wal, error);
  if (error || size == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(fmt::format(
      "{}: {} bytes of write-ahead log beside it ({}) are not in the store yet (a process still "
      "writes it, or it was copied while open); stop that process, or fold the log in with "
      "`compatlab migrate --db {}`, then import it",
      path.string(), size, wal.string(), path.string()));
}

// The SQLite file of a store at `path` opened for `mode`, with the
// connection settings of a file from anywhere. Nothing is read yet.
absl::StatusOr<std::unique_ptr<sqlite::Database>> OpenDatabase(const fs::path& path,
                                                               OpenMode mode) {
  // A reader of a WAL store opens it read-write where it may (and then sets
  // query_only): a read-only SQLite connection cannot remove the -wal and -shm
  // files it creates, so every `query` would leave them beside the store.
  // Where the file is not writable it falls back to a read-only connection.
  // SQLITE_OPEN_NOMUTEX (SQLite's multi-thread mode): no lock taken on every
  // call, since a Store is used by one thread at a time (its contract); the
  // server's request threads each borrow their own (server/store_pool).
  std::string name = path.string();
  int flags = SQLITE_OPEN_READWRITE;
  if (mode == OpenMode::kReadOnly && access(path.c_str(), W_OK) != 0) flags = SQLITE_OPEN_READONLY;
  if (mode == OpenMode::kReadWriteCreate) flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  if (mode == OpenMode::kReadOnlyImmutable) {
    STORE_RETURN_IF_ERROR(CheckNoPendingLog(path));
    name = ImmutableUri(path);
    flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
  }
  flags |= SQLITE_OPEN_NOMUTEX;
  STORE_ASSIGN_OR_RETURN(std::unique_ptr<sqlite::Database> db, sqlite::Database::Open(name, flags));
  if (mode == OpenMode::kReadOnlyImmutable) db->set_path(path.string());  // messages name the file
  STORE_RETURN_IF_ERROR(db->Harden());
  db->LimitStatementWork(kMaxStatementWork / sqlite::Database::kWorkTick);
  STORE_RETURN_IF_ERROR(db->Exec(fmt::format("PRAGMA busy_timeout = {}", kBusyTimeoutMs)));
  STORE_RETURN_IF_ERROR(db->Exec("PRAGMA foreign_keys = ON"));
  return db;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const fs::path& path, OpenMode mode) {
  if (absl::Status s = CheckStorePath(path); !s.ok()) return s;
  std::error_code error;
  const fs::file_status file = fs::status(path, error);
  if (!fs::exists(file)) {
    if (mode != OpenMode::kReadWriteCreate) {
      return absl::NotFoundError(fmt::format("{}: no such store", path.string()));
    }
  } else if (!fs::is_regular_file(file)) {
    return absl::InvalidArgumentError(fmt::format("{}: not a regular file", path.string()));
  }
  STORE_ASSIGN_OR_RETURN(std::unique_ptr<sqlite::Database> db, OpenDatabase(path, mode));
  // Connection settings only: nothing is written to the file before CheckStore.
  const bool reader = mode == OpenMode::kReadOnly || mode == OpenMode::kReadOnlyImmutable;
  STORE_RETURN_IF_ERROR(CheckStore(*db, reader ? OpenMode::kReadOnly : mode));
  STORE_ASSIGN_OR_RETURN(const int64_t opened_version, db->QueryInt("PRAGMA user_version"));
  // A writer checks the whole file (tables, indexes, UNIQUE constraints) before
  // its first write: a damaged store is refused and left byte-identical.
  if (!reader) STORE_RETURN_IF_ERROR(CheckStoreIntegrity(*db));
  if (mode == OpenMode::kReadOnly) {
    STORE_RETURN_IF_ERROR(db->Exec("PRAGMA query_only = ON"));
  } else if (!reader) {
    STORE_RETURN_IF_ERROR(db->Exec("PRAGMA journal_mode = WAL"));
    // FULL: a commit in WAL mode is on disk when it returns, not only ordered.
    STORE_RETURN_IF_ERROR(db->Exec("PRAGMA synchronous = FULL"));
    STORE_RETURN_IF_ERROR(Migrate(*db, kSchemaVersion, ResultFields()));
  }
  return std::unique_ptr<Store>(new Store(path, std::move(db), static_cast<int>(opened_version)));
}

absl::StatusOr<int> MigrateStoreAt(const fs::path& path) {
  STORE_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, Store::Open(path, OpenMode::kReadWrite));
  return store->opened_version();
}

absl::Status Store::CreateSweep(const SweepInfo& sweep, const std::vector<TestSpec>& plan) {
  std::vector<ResolvedTest> tests;
  tests.reserve(plan.size());
  for (const TestSpec& spec : plan) tests.push_back({spec, std::nullopt});
  return CreateResolvedSweep(sweep, tests);
}

absl::Status Store::CreateResolvedSweep(const SweepInfo& sweep,
                                        const std::vector<ResolvedTest>& plan) {
  if (sweep.sweep_id.empty()) return absl::InvalidArgumentError("sweep without a sweep_id");
  // Everything that can fail on the input fails before the transaction.
  std::vector<std::pair<std::string, std::string>> rows;  // test_id, spec JSON
  std::set<std::string> seen;
  for (const ResolvedTest& test : plan) {
    const TestSpec& spec = test.spec;
    // First: it rejects invalid UTF-8, on which TestId() would throw.
    STORE_ASSIGN_OR_RETURN(std::string json, PlannedTestToJson(test));
    std::string test_id = spec.TestId();
    if (!seen.insert(test_id).second) {
      return absl::InvalidArgumentError(
          fmt::format("sweep {}: the plan lists test {} ({} {} {} {}) twice", sweep.sweep_id,
                      test_id, spec.model_id, spec.target, spec.mode, spec.kind));
    }
    rows.emplace_back(std::move(test_id), std::move(json));
  }

  sqlite::Transaction transaction(db_.get());
  STORE_RETURN_IF_ERROR(transaction.Begin());
  STORE_ASSIGN_OR_RETURN(sqlite::Statement exists,
                         db_->Prepare("SELECT 1 FROM sweeps WHERE sweep_id = ?"));
  STORE_RETURN_IF_ERROR(exists.BindAll(sweep.sweep_id));
  STORE_ASSIGN_OR_RETURN(const bool taken, exists.Step());
  if (taken) {
    return absl::AlreadyExistsError(
        fmt::format("{}: sweep {} already exists", path_.string(), sweep.sweep_id));
  }
  STORE_ASSIGN_OR_RETURN(
      sqlite::Statement insert_sweep,
      db_->Prepare(
          "INSERT INTO sweeps (sweep_id, created_at, finished_at, suite, args, host, "
          "jobs, planned, plan_id, shard, shards) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  STORE_RETURN_IF_ERROR(BindAllValues(insert_sweep, SweepRowValues(sweep, plan.size())));
  STORE_RETURN_IF_ERROR(insert_sweep.Run());
  STORE_ASSIGN_OR_RETURN(
      sqlite::Statement insert_test,
      db_->Prepare(
          "INSERT INTO planned_tests (sweep_id, ordinal, test_id, spec) VALUES (?, ?, ?, ?)"));
  for (size_t i = 0; i < rows.size(); ++i) {
    insert_test.Reset();
    STORE_RETURN_IF_ERROR(insert_test.BindAll(sweep.sweep_id, static_cast<int64_t>(i),
                                              rows[i].first, rows[i].second));
    STORE_RETURN_IF_ERROR(insert_test.Run());
  }
  return transaction.Commit();
}

absl::StatusOr<SweepInfo> Store::GetSweep(const std::string& sweep_id) {
  STORE_ASSIGN_OR_RETURN(std::vector<SweepInfo> sweeps,
                         SelectSweeps(*db_, "WHERE sweep_id = ?", {sweep_id}));
  if (sweeps.empty()) {
    return absl::NotFoundError(fmt::format("{}: no sweep {}", path_.string(), sweep_id));
  }
  return sweeps.front();
}

absl::StatusOr<std::optional<SweepInfo>> Store::LatestUnfinishedSweep() {
  STORE_ASSIGN_OR_RETURN(
      std::vector<SweepInfo> sweeps,
      SelectSweeps(*db_, "WHERE finished_at IS NULL ORDER BY created_at DESC, rowid DESC LIMIT 1",
                   {}));
  if (sweeps.empty()) return std::nullopt;
  return sweeps.front();
}

absl::StatusOr<std::vector<SweepInfo>> Store::ListSweeps() {
  return SelectSweeps(*db_, "ORDER BY created_at, rowid", {});
}

absl::StatusOr<std::vector<ResolvedTest>> Store::Plan(const std::string& sweep_id,
                                                      bool pending_only) {
  // Distinguishes "no such sweep" from "nothing pending".
  STORE_RETURN_IF_ERROR(GetSweep(sweep_id).status());
  std::string sql = "SELECT test_id, spec FROM planned_tests p WHERE p.sweep_id = ?";
  if (pending_only) {
    sql +=
        " AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.sweep_id = p.sweep_id AND "
        "r.test_id = p.test_id)";
  }
  sql += " ORDER BY p.ordinal";
  STORE_ASSIGN_OR_RETURN(sqlite::Statement select, db_->Prepare(sql));
  STORE_RETURN_IF_ERROR(select.BindAll(sweep_id));
  std::vector<ResolvedTest> tests;
  while (true) {
    STORE_ASSIGN_OR_RETURN(const bool row, select.Step());
    if (!row) break;
    absl::StatusOr<ResolvedTest> test = PlannedTestFromJson(select.ColumnText(1));
    if (!test.ok()) {
      return absl::DataLossError(fmt::format("{}: sweep {}: planned test {}: {}", path_.string(),
                                             sweep_id, select.ColumnText(0),
                                             std::string(test.status().message())));
    }
    tests.push_back(*std::move(test));
  }
  return tests;
}

namespace {

std::vector<TestSpec> Specs(std::vector<ResolvedTest> tests) {
  std::vector<TestSpec> specs;
  specs.reserve(tests.size());
  for (ResolvedTest& t : tests) specs.push_back(std::move(t.spec));
  return specs;
}

}  // namespace

absl::StatusOr<std::vector<TestSpec>> Store::PlannedTests(const std::string& sweep_id) {
  STORE_ASSIGN_OR_RETURN(std::vector<ResolvedTest> tests, Plan(sweep_id, false));
  return Specs(std::move(tests));
}

absl::StatusOr<std::vector<TestSpec>> Store::PendingTests(const std::string& sweep_id) {
  STORE_ASSIGN_OR_RETURN(std::vector<ResolvedTest> tests, Plan(sweep_id, true));
  return Specs(std::move(tests));
}

absl::StatusOr<std::optional<ResolvedTest>> Store::PlannedTest(const std::string& sweep_id,
                                                               const std::string& test_id) {
  STORE_ASSIGN_OR_RETURN(
      sqlite::Statement select,
      db_->Prepare("SELECT spec FROM planned_tests WHERE sweep_id = ? AND test_id = ?"));
  STORE_RETURN_IF_ERROR(select.BindAll(sweep_id, test_id));
  STORE_ASSIGN_OR_RETURN(const bool row, select.Step());
  if (!row) return std::nullopt;
  absl::StatusOr<ResolvedTest> test = PlannedTestFromJson(select.ColumnText(0));
  if (!test.ok()) {
    return absl::DataLossError(fmt::format("{}: sweep {}: planned test {}: {}", path_.string(),
                                           sweep_id, test_id,
                                           std::string(test.status().message())));
  }
  return std::optional<ResolvedTest>(*std::move(test));
}

absl::Status Store::InsertRun(const RunRecord& record) {
  if (record.run_id.empty()) return absl::InvalidArgumentError("run without a run_id");
  // Rejects invalid UTF-8 in the spec, on which TestId() would throw.
  STORE_RETURN_IF_ERROR(TestSpecToJson(record.spec).status());
  if (record.test_id != record.spec.TestId()) {
    return absl::InvalidArgumentError(
        fmt::format("run {}: test_id {} is not the TestId() of its spec ({})", record.run_id,
                    record.test_id, record.spec.TestId()));
  }
  sqlite::Transaction transaction(db_.get());
  STORE_RETURN_IF_ERROR(transaction.Begin());
  STORE_RETURN_IF_ERROR(GetSweep(record.sweep_id).status());
  STORE_ASSIGN_OR_RETURN(
      sqlite::Statement planned,
      db_->Prepare("SELECT 1 FROM planned_tests WHERE sweep_id = ? AND test_id = ?"));
  STORE_RETURN_IF_ERROR(planned.BindAll(record.sweep_id, record.test_id));
  STORE_ASSIGN_OR_RETURN(const bool is_planned, planned.Step());
  if (!is_planned) {
    return absl::FailedPreconditionError(fmt::format(
        "{}: test {} is not planned in sweep {}", path_.string(), record.test_id, record.sweep_id));
  }
  STORE_ASSIGN_OR_RETURN(
      sqlite::Statement existing,
      db_->Prepare("SELECT run_id FROM runs WHERE sweep_id = ? AND test_id = ?"));
  STORE_RETURN_IF_ERROR(existing.BindAll(record.sweep_id, record.test_id));
  STORE_ASSIGN_OR_RETURN(const bool has_result, existing.Step());
  if (has_result) {
    return absl::AlreadyExistsError(
        fmt::format("{}: sweep {} already has a result for test {} (run {})", path_.string(),
                    record.sweep_id, record.test_id, existing.ColumnText(0)));
  }
  STORE_RETURN_IF_ERROR(InsertRunRow(record));
  return transaction.Commit();
}

absl::Status Store::InsertRunRow(const RunRecord& record) {
  const std::vector<FieldDef>& fields = ResultFields();
  if (insert_run_ == nullptr) {
    std::vector<std::string_view> placeholders(fields.size(), "?");
    STORE_ASSIGN_OR_RETURN(sqlite::Statement prepared,
                           db_->Prepare(fmt::format("INSERT INTO runs ({}) VALUES ({})",
                                                    RunColumns(), fmt::join(placeholders, ", "))));
    insert_run_ = std::make_unique<sqlite::Statement>(std::move(prepared));
  }
  sqlite::Statement& insert = *insert_run_;
  insert.Reset();
  std::vector<FieldValue> values;
  for (const FieldDef& field : fields) values.push_back(field.get(record));
  STORE_RETURN_IF_ERROR(BindAllValues(insert, values));
  return insert.Run();
}

namespace {

// The input checks of a merge, before any row of `runs` is written: the spec
// JSON of each run (which rejects invalid UTF-8), or InvalidArgument.
absl::StatusOr<std::vector<std::string>> CheckMergedRuns(const std::vector<RunRecord>& runs) {
  std::vector<std::string> spec_json(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunRecord& record = runs[i];
    if (absl::StatusOr<int64_t> size = CheckImportedRun(record); !size.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("run {}: {}", record.run_id, std::string(size.status().message())));
    }
    if (record.run_id.empty() || record.sweep_id.empty()) {
      return absl::InvalidArgumentError(
          fmt::format("run '{}': empty run_id or sweep_id", record.run_id));
    }
    // Ids are names here, never paths, but a store hands them on: they are kept to the
    // characters a stored id may have (doc/limits.md), as a resume checks them.
    if (absl::Status s = CheckStoredId(record.run_id, "run id"); !s.ok()) return s;
    if (absl::Status s = CheckStoredId(record.sweep_id, "sweep id"); !s.ok()) return s;
    STORE_ASSIGN_OR_RETURN(spec_json[i], TestSpecToJson(record.spec));
    if (record.test_id != record.spec.TestId()) {
      return absl::InvalidArgumentError(
          fmt::format("run {}: test_id {} is not the TestId() of its spec ({})", record.run_id,
                      record.test_id, record.spec.TestId()));
    }
  }
  return spec_json;
}

// Whether a sweep was planned by this store's own `compatlab sweep`: it is
// not finished, or its first planned test carries execution settings (an
// import plans none, and appends its tests after a sweep's own).
constexpr std::string_view kPlannedHereSql =
    "SELECT finished_at IS NULL OR coalesce((SELECT json_valid(spec) AND "
    "json_type(spec, '$.execution') IS NOT NULL FROM planned_tests p WHERE p.sweep_id = "
    "s.sweep_id ORDER BY ordinal LIMIT 1), 0) FROM sweeps s WHERE sweep_id = ?";

// One-step runner of a prepared statement: reset, bind `values`, step.
template <typename... Values>
absl::StatusOr<bool> StepWith(sqlite::Statement& statement, const Values&... values) {
  statement.Reset();
  STORE_RETURN_IF_ERROR(statement.BindAll(values...));
  return statement.Step();
}

// InvalidArgument unless `sweep` can be merged: stored ids and a shard in its range.
absl::Status CheckMergedSweep(const SweepInfo& sweep) {
  if (absl::Status s = CheckStoredId(sweep.sweep_id, "sweep id"); !s.ok()) return s;
  if (!sweep.plan_id.empty()) {
    if (absl::Status s = CheckStoredId(sweep.plan_id, "plan id"); !s.ok()) return s;
  }
  const bool sharded = sweep.shard.has_value() && sweep.shards.has_value();
  if (sharded != (sweep.shard.has_value() || sweep.shards.has_value()) ||
      (sharded && !(*sweep.shards >= 1 && *sweep.shard >= 0 && *sweep.shard < *sweep.shards))) {
    return absl::InvalidArgumentError(
        fmt::format("sweep {}: its shard is not one of 0..shards-1", sweep.sweep_id));
  }
  return absl::OkStatus();
}

// "3/8", or "none", the shard of `sweep` as messages show it.
std::string ShardText(const std::optional<int64_t>& shard, const std::optional<int64_t>& shards) {
  if (!shard.has_value() || !shards.has_value()) return "none";
  return fmt::format("{}/{}", *shard, *shards);
}

// MergeRunBatches' first step, inside its transaction: `sweeps` created or
// joined with their plans (Store::MergeRunBatches); the ids of those created
// unfinished are appended to `unfinished`.
absl::Status MergeSweepRecords(sqlite::Database& db, const fs::path& path,
                               const std::vector<MergedSweep>& sweeps,
                               std::vector<std::string>& unfinished, MergeStats& stats) {
  STORE_ASSIGN_OR_RETURN(
      sqlite::Statement stored,
      db.Prepare("SELECT plan_id, shard, shards FROM sweeps WHERE sweep_id = ?"));
  STORE_ASSIGN_OR_RETURN(sqlite::Statement planned_here, db.Prepare(kPlannedHereSql));
  STORE_ASSIGN_OR_RETURN(
      sqlite::Statement insert_sweep,
      db.Prepare(
          "INSERT INTO sweeps (sweep_id, created_at, finished_at, suite, args, host, "
          "jobs, planned, plan_id, shard, shards) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  STORE_ASSIGN_OR_RETURN(
      sqlite::Statement plan_test,
      db.Prepare("INSERT INTO planned_tests (sweep_id, ordinal, test_id, spec) SELECT ?1, "
                 "(SELECT coalesce(max(ordinal) + 1, 0) FROM planned_tests WHERE sweep_id = ?1), "
                 "?2, ?3 WHERE NOT EXISTS (SELECT 1 FROM planned_tests WHERE sweep_id = ?1 AND "
                 "test_id = ?2) RETURNING 1"));
  STORE_ASSIGN_OR_RETURN(
      sqlite::Statement count_planned,
      db.Prepare("UPDATE sweeps SET planned = planned + 1 WHERE sweep_id = ? RETURNING 1"));
  for (const MergedSweep& merged : sweeps) {
    const SweepInfo& info = merged.info;
    STORE_RETURN_IF_ERROR(CheckMergedSweep(info));
    STORE_ASSIGN_OR_RETURN(const bool exists, StepWith(stored, info.sweep_id));
    if (exists) {
      const std::optional<int64_t> shard =
          stored.ColumnIsNull(1) ? std::nullopt : std::optional<int64_t>(stored.ColumnInt(1));
      const std::optional<int64_t> shards =
          stored.ColumnIsNull(2) ? std::nullopt : std::optional<int64_t>(stored.ColumnInt(2));
      if (stored.ColumnText(0) != info.plan_id || shard != info.shard || shards != info.shards) {
        return absl::InvalidArgumentError(fmt::format(
            "{}: sweep {} is stored with plan '{}' shard {}, not plan '{}' shard {}", path.string(),
            info.sweep_id, stored.ColumnText(0), ShardText(shard, shards), info.plan_id,
            ShardText(info.shard, info.shards)));
      }
      STORE_ASSIGN_OR_RETURN(const bool row, StepWith(planned_here, info.sweep_id));
      if (row && planned_here.ColumnInt(0) != 0) {
        return absl::InvalidArgumentError(fmt::format(
            "{}: sweep {} was planned in this store by `compatlab sweep`; a merge never joins "
            "a local sweep (doc/limits.md)",
            path.string(), info.sweep_id));
      }
    } else {
      SweepInfo row = info;
      if (!row.finished_at.has_value()) {
        row.finished_at = row.created_at;  // never read as unfinished; set from its runs later
        unfinished.push_back(row.sweep_id);
      }
      insert_sweep.Reset();
      STORE_RETURN_IF_ERROR(BindAllValues(insert_sweep, SweepRowValues(row, 0)));
      STORE_RETURN_IF_ERROR(insert_sweep.Run());
      ++stats.sweeps_created;
    }
    for (const TestSpec& spec : merged.plan) {
      STORE_ASSIGN_OR_RETURN(const std::string json, TestSpecToJson(spec));
      STORE_ASSIGN_OR_RETURN(const bool added,
                             StepWith(plan_test, info.sweep_id, spec.TestId(), json));
      if (!added) continue;
      STORE_ASSIGN_OR_RETURN(const bool counted, StepWith(count_planned, info.sweep_id));
      (void)counted;
      ++stats.tests_planned;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<bool> Store::IsPlannedHere(const std::string& sweep_id) {
  STORE_ASSIGN_OR_RETURN(sqlite::Statement select, db_->Prepare(kPlannedHereSql));
  STORE_RETURN_IF_ERROR(select.BindAll(sweep_id));
  STORE_ASSIGN_OR_RETURN(const bool row, select.Step());
  return row && select.ColumnInt(0) != 0;
}

absl::StatusOr<int64_t> Store::NextRunRowid() {
  return db_->QueryInt("SELECT coalesce(max(rowid), 0) + 1 FROM runs");
}

absl::StatusOr<MergeStats> Store::MergeRuns(const std::vector<RunRecord>& runs,
                                            const std::string& args) {
  // Input checks first, before the transaction.
  STORE_RETURN_IF_ERROR(CheckMergedRuns(runs).status());
  bool given = false;
  return MergeRunBatches(
      [&runs, &given](std::vector<RunRecord>& batch) {
        if (!std::exchange(given, true)) batch = runs;
        return absl::OkStatus();
      },
      args);
}

absl::StatusOr<MergeStats> Store::MergeRunBatches(const RunBatches& next, const std::string& args,
                                                  const OnStoredRun& on_stored,
                                                  const std::vector<MergedSweep>& sweeps) {
  MergeStats stats;
  sqlite::Transaction transaction(db_.get());
  STORE_RETURN_IF_ERROR(transaction.Begin());
  std::vector<std::string> unfinished;
  STORE_RETURN_IF_ERROR(MergeSweepRecords(*db_, path_, sweeps, unfinished, stats));
  // The sweeps this merge creates, kept in SQLite's temporary database (a
  // file, not memory) until their times are set from their runs at the end.
  STORE_RETURN_IF_ERROR(
      db_->Exec("CREATE TEMP TABLE IF NOT EXISTS merge_created (sweep_id TEXT PRIMARY KEY) STRICT; "
                "DELETE FROM temp.merge_created"));
  STORE_ASSIGN_OR_RETURN(sqlite::Statement has_run,
                         db_->Prepare("SELECT rowid FROM runs WHERE run_id = ?"));
  STORE_ASSIGN_OR_RETURN(sqlite::Statement has_sweep,
                         db_->Prepare("SELECT 1 FROM sweeps WHERE sweep_id = ?"));
  STORE_ASSIGN_OR_RETURN(sqlite::Statement created_here,
                         db_->Prepare("SELECT 1 FROM temp.merge_created WHERE sweep_id = ?"));
  STORE_ASSIGN_OR_RETURN(sqlite::Statement planned_here, db_->Prepare(kPlannedHereSql));
  STORE_ASSIGN_OR_RETURN(
      sqlite::Statement result_of,
      db_->Prepare("SELECT run_id FROM runs WHERE sweep_id = ? AND test_id = ?"));
  STORE_ASSIGN_OR_RETURN(
      sqlite::Statement is_planned,
      db_->Prepare("SELECT 1 FROM planned_tests WHERE sweep_id = ? AND test_id = ?"));
  STORE_ASSIGN_OR_RETURN(
      sqlite::Statement plan_test,
      db_->Prepare("INSERT INTO planned_tests (sweep_id, ordinal, test_id, spec) VALUES (?, "
                   "(SELECT coalesce(max(ordinal) + 1, 0) FROM planned_tests WHERE sweep_id = ?), "
                   "?, ?)"));
  STORE_ASSIGN_OR_RETURN(
      sqlite::Statement count_planned,
      db_->Prepare("UPDATE sweeps SET planned = planned + 1 WHERE sweep_id = ?"));
  STORE_ASSIGN_OR_RETURN(
      sqlite::Statement insert_sweep,
      db_->Prepare("INSERT INTO sweeps (sweep_id, created_at, finished_at, suite, args, host, "
                   "jobs, planned) VALUES (?, ?, ?, '', ?, ?, ?, 0)"));
  STORE_ASSIGN_OR_RETURN(sqlite::Statement note_created,
                         db_->Prepare("INSERT INTO temp.merge_created (sweep_id) VALUES (?)"));
  auto step = [](sqlite::Statement& statement, const auto&... values) -> absl::StatusOr<bool> {
    statement.Reset();
    STORE_RETURN_IF_ERROR(statement.BindAll(values...));
    return statement.Step();
  };
  std::vector<RunRecord> batch;
  while (true) {
    batch.clear();
    STORE_RETURN_IF_ERROR(next(batch));
    if (batch.empty()) break;
    STORE_ASSIGN_OR_RETURN(const std::vector<std::string> spec_json, CheckMergedRuns(batch));
    for (size_t i = 0; i < batch.size(); ++i) {
      const RunRecord& record = batch[i];
      STORE_ASSIGN_OR_RETURN(const bool stored, step(has_run, record.run_id));
      if (stored) {
        if (on_stored != nullptr) STORE_RETURN_IF_ERROR(on_stored(record, has_run.ColumnInt(0)));
        ++stats.already_present;
        continue;
      }
      STORE_ASSIGN_OR_RETURN(const bool sweep_exists, step(has_sweep, record.sweep_id));
      if (!sweep_exists) {
        // finished_at is set now (so the sweep never reads as unfinished), and
        // both times from all its runs at the end.
        STORE_ASSIGN_OR_RETURN(const bool inserted_row,
                               step(insert_sweep, record.sweep_id, record.started_at,
                                    record.finished_at, args, record.host, record.jobs));
        STORE_ASSIGN_OR_RETURN(const bool noted_row, step(note_created, record.sweep_id));
        (void)inserted_row;
        (void)noted_row;
        ++stats.sweeps_created;
      } else {
        STORE_ASSIGN_OR_RETURN(const bool new_here, step(created_here, record.sweep_id));
        STORE_ASSIGN_OR_RETURN(const bool row, step(planned_here, record.sweep_id));
        if (!new_here && row && planned_here.ColumnInt(0) != 0) {
          return absl::InvalidArgumentError(fmt::format(
              "{}: run {}: sweep {} was planned in this store by `compatlab sweep`; imported runs "
              "never join a local sweep (doc/limits.md)",
              path_.string(), record.run_id, record.sweep_id));
        }
      }
      STORE_ASSIGN_OR_RETURN(const bool has_result,
                             step(result_of, record.sweep_id, record.test_id));
      if (has_result) {
        return absl::AlreadyExistsError(fmt::format(
            "{}: run {}: sweep {} already has a result for test {} (run {})", path_.string(),
            record.run_id, record.sweep_id, record.test_id, result_of.ColumnText(0)));
      }
      STORE_ASSIGN_OR_RETURN(const bool planned, step(is_planned, record.sweep_id, record.test_id));
      if (!planned) {
        STORE_ASSIGN_OR_RETURN(
            const bool planned_row,
            step(plan_test, record.sweep_id, record.sweep_id, record.test_id, spec_json[i]));
        STORE_ASSIGN_OR_RETURN(const bool counted_row, step(count_planned, record.sweep_id));
        (void)planned_row;
        (void)counted_row;
        ++stats.tests_planned;
      }
      STORE_RETURN_IF_ERROR(InsertRunRow(record));
      ++stats.inserted;
    }
  }
  STORE_RETURN_IF_ERROR(db_->Exec(
      "UPDATE sweeps SET "
      "created_at = (SELECT min(started_at) FROM runs r WHERE r.sweep_id = sweeps.sweep_id), "
      "finished_at = (SELECT max(finished_at) FROM runs r WHERE r.sweep_id = sweeps.sweep_id) "
      "WHERE sweep_id IN (SELECT sweep_id FROM temp.merge_created); "
      "DELETE FROM temp.merge_created"));
  STORE_ASSIGN_OR_RETURN(
      sqlite::Statement finish,
      db_->Prepare("UPDATE sweeps SET finished_at = coalesce((SELECT max(finished_at) FROM runs r "
                   "WHERE r.sweep_id = sweeps.sweep_id), finished_at) WHERE sweep_id = ?"));
  for (const std::string& sweep_id : unfinished) {
    finish.Reset();
    STORE_RETURN_IF_ERROR(finish.BindAll(sweep_id));
    STORE_RETURN_IF_ERROR(finish.Run());
  }
  STORE_RETURN_IF_ERROR(transaction.Commit());
  return stats;
}

absl::Status Store::FinishSweep(const std::string& sweep_id, const std::string& finished_at) {
  STORE_ASSIGN_OR_RETURN(
      sqlite::Statement update,
      db_->Prepare("UPDATE sweeps SET finished_at = ? WHERE sweep_id = ? RETURNING sweep_id"));
  STORE_RETURN_IF_ERROR(update.BindAll(finished_at, sweep_id));
  STORE_ASSIGN_OR_RETURN(const bool updated, update.Step());
  if (!updated) {
    return absl::NotFoundError(fmt::format("{}: no sweep {}", path_.string(), sweep_id));
  }
  // Finish the statement so that its implicit transaction commits now.
  STORE_ASSIGN_OR_RETURN(const bool more, update.Step());
  (void)more;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<RunRecord>> Store::QueryRuns(const RunFilter& filter) {
  Where where = BuildWhere(filter);
  std::vector<std::string> order;
  for (const RunSortKey& key : filter.sort) {
    // Only schema field names reach the SQL text: they are fixed identifiers.
    const FieldDef* field = FindResultField(key.field);
    if (field == nullptr) {
      return absl::InvalidArgumentError(
          fmt::format("cannot sort by '{}': not a result field", key.field));
    }
    order.push_back(fmt::format("{} {}", field->name, key.descending ? "DESC" : "ASC"));
  }
  order.push_back(fmt::format("rowid {}", filter.newest_first ? "DESC" : "ASC"));
  std::string sql = fmt::format("SELECT {} FROM runs{} ORDER BY {}", RunColumns(), where.sql,
                                fmt::join(order, ", "));
  if (filter.limit > 0) {
    sql += " LIMIT ?";
    where.params.emplace_back(filter.limit);
  }
  STORE_ASSIGN_OR_RETURN(sqlite::Statement select, db_->Prepare(sql));
  STORE_RETURN_IF_ERROR(BindAllValues(select, where.params));
  std::vector<RunRecord> runs;
  while (true) {
    STORE_ASSIGN_OR_RETURN(const bool row, select.Step());
    if (!row) break;
    STORE_ASSIGN_OR_RETURN(RunRecord record, ReadRunRow(select, 0, path_.string()));
    runs.push_back(std::move(record));
  }
  return runs;
}

absl::StatusOr<int64_t> Store::CountRuns(const RunFilter& filter) {
  const Where where = BuildWhere(filter);
  STORE_ASSIGN_OR_RETURN(sqlite::Statement count,
                         db_->Prepare("SELECT count(*) FROM runs" + where.sql));
  STORE_RETURN_IF_ERROR(BindAllValues(count, where.params));
  STORE_RETURN_IF_ERROR(count.Step().status());
  return count.ColumnInt(0);
}

absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> Store::CountRunsByModel(
    const RunFilter& filter) {
  const Where where = BuildWhere(filter);
  STORE_ASSIGN_OR_RETURN(sqlite::Statement count,
                         db_->Prepare("SELECT model_id, count(*) AS n FROM runs" + where.sql +
                                      " GROUP BY model_id ORDER BY n DESC, model_id"));
  STORE_RETURN_IF_ERROR(BindAllValues(count, where.params));
  std::vector<std::pair<std::string, int64_t>> counts;
  while (true) {
    STORE_ASSIGN_OR_RETURN(const bool more, count.Step());
    if (!more) break;
    counts.emplace_back(count.ColumnText(0), count.ColumnInt(1));
  }
  return counts;
}

absl::Status Store::ScanFields(
    const std::vector<std::string>& fields, int64_t after_rowid,
    const std::function<void(int64_t rowid, std::vector<FieldValue>& values)>& row) {
  STORE_ASSIGN_OR_RETURN(std::vector<std::string_view> columns, FieldColumns(fields));
  columns.insert(columns.begin(), "rowid");
  STORE_ASSIGN_OR_RETURN(
      sqlite::Statement select,
      db_->Prepare(fmt::format("SELECT {} FROM runs WHERE rowid > ? ORDER BY rowid",
                               fmt::join(columns, ", "))));
  STORE_RETURN_IF_ERROR(select.BindAll(after_rowid));
  std::vector<FieldValue> values(fields.size());
  while (true) {
    STORE_ASSIGN_OR_RETURN(const bool more, select.Step());
    if (!more) break;
    for (size_t i = 0; i < fields.size(); ++i) values[i] = select.Column(static_cast<int>(i) + 1);
    row(select.ColumnInt(0), values);
  }
  return absl::OkStatus();
}

namespace {

// The FROM clause of the by-rowid reads: the runs of the JSON array of rowids
// bound to ?1, in the array's order (CROSS JOIN keeps json_each the outer
// loop; a rowid with no run matches nothing). One statement for all the rows:
// its registers keep their buffers from row to row, where a reset per row
// would free and grow them again for every text column.
constexpr std::string_view kByRowidFrom =
    "FROM json_each(?1) AS picked CROSS JOIN runs ON runs.rowid = picked.value";

std::string RowidArray(const std::vector<int64_t>& rowids) {
  return fmt::format("[{}]", fmt::join(rowids, ","));
}

}  // namespace

absl::Status Store::FieldsByRowid(
    const std::vector<std::string>& fields, const std::vector<int64_t>& rowids,
    const std::function<void(int64_t rowid, const std::vector<FieldView>& values)>& row) {
  // The statement for these fields: kept, most recently used first (a page
  // reads the fields its runs fill, so a few field lists recur).
  auto kept = std::find_if(rowid_fields_selects_.begin(), rowid_fields_selects_.end(),
                           [&fields](const FieldsSelect& s) { return s.fields == fields; });
  if (kept == rowid_fields_selects_.end()) {
    STORE_ASSIGN_OR_RETURN(const std::vector<std::string_view> columns, FieldColumns(fields));
    std::string select_list = "runs.rowid";  // with no field, the rowids alone
    for (std::string_view column : columns) select_list += fmt::format(", runs.{}", column);
    STORE_ASSIGN_OR_RETURN(sqlite::Statement prepared,
                           db_->Prepare(fmt::format("SELECT {} {}", select_list, kByRowidFrom)));
    if (rowid_fields_selects_.size() == kKeptFieldsSelects) rowid_fields_selects_.pop_back();
    rowid_fields_selects_.insert(
        rowid_fields_selects_.begin(),
        FieldsSelect{fields, std::make_unique<sqlite::Statement>(std::move(prepared))});
  } else if (kept != rowid_fields_selects_.begin()) {
    std::rotate(rowid_fields_selects_.begin(), kept, kept + 1);
  }
  sqlite::Statement& select = *rowid_fields_selects_.front().select;
  select.Reset();
  STORE_RETURN_IF_ERROR(select.BindAll(RowidArray(rowids)));
  absl::Status status = [&]() -> absl::Status {
    std::vector<FieldView> values(fields.size());
    while (true) {
      STORE_ASSIGN_OR_RETURN(const bool more, select.Step());
      if (!more) break;
      for (size_t i = 0; i < fields.size(); ++i) {
        values[i] = select.ColumnView(static_cast<int>(i) + 1);
      }
      row(select.ColumnInt(0), values);
    }
    return absl::OkStatus();
  }();
  select.Reset();  // ends the statement's read transaction
  return status;
}

void Store::LimitRowBytes(int64_t max_bytes) {
  sqlite3_limit(db_->handle(), SQLITE_LIMIT_LENGTH,
                static_cast<int>(std::min<int64_t>(max_bytes, std::numeric_limits<int>::max())));
}

absl::StatusOr<std::vector<RunRecord>> Store::RunsByRowid(const std::vector<int64_t>& rowids,
                                                          bool with_outputs) {
  std::unique_ptr<sqlite::Statement>& select = rowid_select_[with_outputs ? 1 : 0];
  if (select == nullptr) {
    std::vector<std::string> columns;
    for (const FieldDef& field : ResultFields()) {
      columns.push_back(!with_outputs && field.bulky ? fmt::format("'' AS {}", field.name)
                                                     : fmt::format("runs.{}", field.name));
    }
    STORE_ASSIGN_OR_RETURN(
        sqlite::Statement prepared,
        db_->Prepare(fmt::format("SELECT {} {}", fmt::join(columns, ", "), kByRowidFrom)));
    select = std::make_unique<sqlite::Statement>(std::move(prepared));
  }
  select->Reset();
  STORE_RETURN_IF_ERROR(select->BindAll(RowidArray(rowids)));
  absl::StatusOr<std::vector<RunRecord>> runs = [&]() -> absl::StatusOr<std::vector<RunRecord>> {
    std::vector<RunRecord> read;
    read.reserve(rowids.size());
    while (true) {
      STORE_ASSIGN_OR_RETURN(const bool more, select->Step());
      if (!more) break;
      STORE_ASSIGN_OR_RETURN(RunRecord record, ReadRunRow(*select, 0, path_.string()));
      read.push_back(std::move(record));
    }
    return read;
  }();
  select->Reset();  // ends the statement's read transaction
  return runs;
}

}  // namespace compatlab
