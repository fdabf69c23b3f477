#include "store/sqlite.h"

#include <sqlite3.h>

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include "fmt/format.h"

namespace compatlab::sqlite {

absl::Status Error(sqlite3* db, int rc, std::string_view context) {
  const int extended = db != nullptr ? sqlite3_extended_errcode(db) : rc;
  std::string message =
      fmt::format("{}: {}", context, db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  switch (rc & 0xff) {
    case SQLITE_CONSTRAINT:
      if (extended == SQLITE_CONSTRAINT_UNIQUE || extended == SQLITE_CONSTRAINT_PRIMARYKEY) {
        return absl::AlreadyExistsError(message);
      }
      if (extended == SQLITE_CONSTRAINT_FOREIGNKEY) return absl::FailedPreconditionError(message);
      return absl::InvalidArgumentError(message);
    case SQLITE_NOTADB:
      return absl::InvalidArgumentError(message);
    case SQLITE_CORRUPT:
      return absl::DataLossError(message);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(message);
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
      return absl::FailedPreconditionError(message);
    case SQLITE_FULL:
      return absl::ResourceExhaustedError(message);
    case SQLITE_TOOBIG:  // a value or row over the connection's SQLITE_LIMIT_LENGTH
      return absl::OutOfRangeError(message);
    default:
      return absl::InternalError(message);
  }
}

Statement::Statement(Database* owner, sqlite3_stmt* stmt)
    : owner_(owner), db_(owner->handle()), stmt_(stmt) {}

Statement::Statement(Statement&& other) noexcept
    : owner_(other.owner_),
      db_(other.db_),
      stmt_(std::exchange(other.stmt_, nullptr)),
      work_(other.work_) {}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    owner_ = other.owner_;
    db_ = other.db_;
    stmt_ = std::exchange(other.stmt_, nullptr);
    work_ = other.work_;
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

absl::Status Statement::Bind(int index, const FieldValue& value) {
  int rc = SQLITE_OK;
  if (const auto* i = std::get_if<int64_t>(&value)) {
    rc = sqlite3_bind_int64(stmt_, index, *i);
  } else if (const auto* d = std::get_if<double>(&value)) {
    rc = sqlite3_bind_double(stmt_, index, *d);
  } else if (const auto* s = std::get_if<std::string>(&value)) {
    rc = sqlite3_bind_text64(stmt_, index, s->data(), s->size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  } else {
    rc = sqlite3_bind_null(stmt_, index);
  }
  if (rc != SQLITE_OK) return Error(db_, rc, fmt::format("binding parameter {}", index));
  return absl::OkStatus();
}

absl::StatusOr<bool> Statement::Step() {
  if (sqlite3_stmt_busy(stmt_) == 0) work_ = 0;  // a new run of the statement
  owner_->running_ = &work_;
  const int rc = sqlite3_step(stmt_);
  owner_->running_ = nullptr;
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return owner_->StepError(rc, sqlite3_db_filename(db_, "main"));
}

absl::Status Statement::Run() {
  absl::StatusOr<bool> row = Step();
  if (!row.ok()) return row.status();
  return absl::OkStatus();
}

void Statement::Reset() { sqlite3_reset(stmt_); }

FieldValue Statement::Column(int index) {
  return std::visit(
      [](auto value) -> FieldValue {
        if constexpr (std::is_same_v<decltype(value), std::string_view>) {
          return std::string(value);
        } else {
          return value;
        }
      },
      ColumnView(index));
}

FieldView Statement::ColumnView(int index) {
  switch (sqlite3_column_type(stmt_, index)) {
    case SQLITE_NULL:
      return std::monostate{};
    case SQLITE_INTEGER:
      return static_cast<int64_t>(sqlite3_column_int64(stmt_, index));
    case SQLITE_FLOAT:
      return sqlite3_column_double(stmt_, index);
    default: {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, index));
      if (text == nullptr) return std::string_view();
      return std::string_view(text, static_cast<size_t>(sqlite3_column_bytes(stmt_, index)));
    }
  }
}

std::string Statement::ColumnText(int index) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, index));
  if (text == nullptr) return "";
  return std::string(text, static_cast<size_t>(sqlite3_column_bytes(stmt_, index)));
}

int64_t Statement::ColumnInt(int index) { return sqlite3_column_int64(stmt_, index); }

bool Statement::ColumnIsNull(int index) { return sqlite3_column_type(stmt_, index) == SQLITE_NULL; }

absl::StatusOr<std::unique_ptr<Database>> Database::Open(const std::string& path, int flags) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status status = Error(db, rc, path);
    sqlite3_close_v2(db);
    return status;
  }
  sqlite3_extended_result_codes(db, 1);
  return std::unique_ptr<Database>(new Database(db, path));
}

absl::Status Database::Harden() {
  const std::pair<int, int> settings[] = {
      {SQLITE_DBCONFIG_DEFENSIVE, 1},
      {SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0},
      {SQLITE_DBCONFIG_ENABLE_TRIGGER, 0},
      {SQLITE_DBCONFIG_ENABLE_VIEW, 0},
  };
  for (const auto& [option, value] : settings) {
    int now = -1;
    const int rc = sqlite3_db_config(db_, option, value, &now);
    if (rc != SQLITE_OK) return Error(db_, rc, path_);
    if (now != value) {
      return absl::InternalError(
          fmt::format("{}: SQLite refused a defensive setting ({})", path_, option));
    }
  }
  return absl::OkStatus();
}

void Database::LimitStatementWork(int64_t max_ticks) {
  max_ticks_ = max_ticks;
  sqlite3_progress_handler(db_, kWorkTick, &Database::OnProgress, this);
}

int Database::OnProgress(void* database) {
  auto* self = static_cast<Database*>(database);
  if (self->running_ == nullptr || ++*self->running_ <= self->max_ticks_) return 0;
  self->stopped_ = true;
  return 1;
}

absl::Status Database::StepError(int rc, std::string_view context) {
  if (std::exchange(stopped_, false) && (rc & 0xff) == SQLITE_INTERRUPT) {
    return absl::ResourceExhaustedError(fmt::format(
        "{}: a statement ran past the bound of {} SQLite instructions and was stopped (a store "
        "far larger than any real one, or built to never end; doc/limits.md)",
        context, max_ticks_ * kWorkTick));
  }
  return Error(db_, rc, context);
}

Database::~Database() { sqlite3_close_v2(db_); }

absl::StatusOr<Statement> Database::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) return Error(db_, rc, path_);
  return Statement(this, stmt);
}

absl::Status Database::Exec(const std::string& sql) {
  int64_t work = 0;
  running_ = &work;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
  running_ = nullptr;
  if (rc != SQLITE_OK) return StepError(rc, path_);
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Database::QueryInt(std::string_view sql) {
  absl::StatusOr<Statement> stmt = Prepare(sql);
  if (!stmt.ok()) return stmt.status();
  absl::StatusOr<bool> row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return absl::InternalError(fmt::format("{}: no row from '{}'", path_, sql));
  return stmt->ColumnInt(0);
}

Transaction::~Transaction() {
  if (open_) (void)db_->Exec("ROLLBACK");
}

absl::Status Transaction::Begin() {
  absl::Status status = db_->Exec("BEGIN IMMEDIATE");
  open_ = status.ok();
  return status;
}

absl::Status Transaction::Commit() {
  absl::Status status = db_->Exec("COMMIT");
  if (status.ok()) open_ = false;
  return status;
}

}  // namespace compatlab::sqlite
