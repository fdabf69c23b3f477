// Thin RAII wrappers over the SQLite C API. Internal to the store module: the
// rest of compatlab talks to store.h.
//
// Not thread-safe: a Database and its Statements belong to one thread at a time.
#ifndef COMPATLAB_STORE_SQLITE_H_
#define COMPATLAB_STORE_SQLITE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "store/schema.h"

struct sqlite3;
struct sqlite3_stmt;

// Early returns for the store's code (absl of this vintage exports none).
#define STORE_RETURN_IF_ERROR(expr)                                   \
  do {                                                                \
    if (absl::Status _status = (expr); !_status.ok()) return _status; \
  } while (0)
#define STORE_CONCAT_INNER(a, b) a##b
#define STORE_CONCAT(a, b) STORE_CONCAT_INNER(a, b)
// Declares or assigns `lhs` from the StatusOr `expr`, or returns its error.
#define STORE_ASSIGN_OR_RETURN(lhs, expr) \
  STORE_ASSIGN_OR_RETURN_IMPL(STORE_CONCAT(_statusor_, __LINE__), lhs, expr)
#define STORE_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = *std::move(tmp)

namespace compatlab::sqlite {

// Maps a SQLite result code to a Status with a one-line message
// "<context>: <SQLite's message>". `db` may be null (then the message comes
// from the code alone). Constraint violations become AlreadyExists (UNIQUE,
// PRIMARY KEY) or FailedPrecondition (FOREIGN KEY); "not a database" becomes
// InvalidArgument; corruption DataLoss; busy/locked Unavailable; a
// statement stopped by its work bound (Database::LimitStatementWork)
// ResourceExhausted.
absl::Status Error(sqlite3* db, int rc, std::string_view context);

class Database;

// A prepared statement. Move-only; finalized on destruction.
class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  // Binds `value` to the 1-based parameter `index`; monostate binds NULL.
  absl::Status Bind(int index, const FieldValue& value);
  // Binds `values` to parameters 1, 2, ... in order.
  template <typename... Values>
  absl::Status BindAll(const Values&... values) {
    int index = 0;
    absl::Status status;
    ((status.ok() ? status = Bind(++index, FieldValue(values)) : status), ...);
    return status;
  }

  // Runs the statement one step. True when a row is available (read it with
  // Column*), false when the statement is done.
  absl::StatusOr<bool> Step();
  // Step() for a statement that returns no row.
  absl::Status Run();
  // Makes the statement ready to run again; bindings are kept until rebound.
  void Reset();

  // Columns of the current row, 0-based. REQUIRES: the last Step() returned true.
  // Column() returns the value as stored: monostate for NULL, int64_t for
  // INTEGER, double for REAL, std::string for TEXT and BLOB.
  FieldValue Column(int index);
  // Column() without the copy: text and blobs are views into SQLite's buffer,
  // valid until the next Step() or Reset().
  FieldView ColumnView(int index);
  std::string ColumnText(int index);  // "" for NULL
  int64_t ColumnInt(int index);       // 0 for NULL
  bool ColumnIsNull(int index);

 private:
  friend class Database;
  Statement(Database* owner, sqlite3_stmt* stmt);
  Database* owner_;
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  int64_t work_ = 0;  // progress ticks of this statement's current run
};

// An open connection. Move-only; closed on destruction.
class Database {
 public:
  // Opens `path` with sqlite3_open_v2 `flags` (SQLITE_OPEN_*). Opening reads
  // nothing yet: a file that is not a database fails at the first statement.
  static absl::StatusOr<std::unique_ptr<Database>> Open(const std::string& path, int flags);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Compiles one statement. Every value must be bound as a parameter.
  absl::StatusOr<Statement> Prepare(std::string_view sql);
  // Runs `sql` (one or more statements without parameters: DDL, PRAGMA, BEGIN).
  absl::Status Exec(const std::string& sql);
  // Runs a query expected to return one integer in its first row
  // (PRAGMA user_version, SELECT count(*)).
  absl::StatusOr<int64_t> QueryInt(std::string_view sql);

  // Settings for a file that may come from anywhere: SQLite's defensive mode
  // (no writable schema, no shadow-table writes), trusted_schema off (no
  // function with side effects from the schema), and neither triggers nor
  // views run. Call before the first statement.
  absl::Status Harden();
  // From now on, every run of a statement (Statement::Step from its first
  // step to its end or Reset, or one Exec) that executes more than
  // `max_ticks` x kWorkTick SQLite virtual-machine instructions is stopped
  // and fails with ResourceExhausted. REQUIRES: max_ticks > 0.
  void LimitStatementWork(int64_t max_ticks);
  // The instructions between two checks of the work bound (one tick).
  static constexpr int kWorkTick = 1000;

  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }
  // The name messages give the file (Open's `path` until then).
  void set_path(std::string path) { path_ = std::move(path); }

 private:
  friend class Statement;
  Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  // SQLite's progress handler: counts a tick of the running statement, and
  // stops it (non-zero) past the bound.
  static int OnProgress(void* database);
  // The error of a statement that stopped: ResourceExhausted when the work
  // bound stopped it, else Error(db_, rc, context).
  absl::Status StepError(int rc, std::string_view context);
  sqlite3* db_;
  std::string path_;
  int64_t max_ticks_ = 0;       // 0: no bound
  int64_t* running_ = nullptr;  // the work counter of the statement being run
  bool stopped_ = false;        // the bound stopped the last statement
};

// A write transaction (BEGIN IMMEDIATE, so a writer waits for the lock up
// front instead of failing halfway). Rolled back on destruction unless
// Commit() succeeded.
class Transaction {
 public:
  explicit Transaction(Database* db) : db_(db) {}
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

  absl::Status Begin();
  // REQUIRES: Begin() succeeded.
  absl::Status Commit();

 private:
  Database* db_;
  bool open_ = false;
};

}  // namespace compatlab::sqlite

#endif  // COMPATLAB_STORE_SQLITE_H_
