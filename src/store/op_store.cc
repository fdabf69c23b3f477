// The op coverage tables of the store (doc/ops.md, "Store tables"): the Store
// methods of `compatlab ops`, kept apart from the runs' own.
#include <string>
#include <vector>

#include "fmt/format.h"
#include "store/sqlite.h"
#include "store/store.h"

namespace compatlab {
namespace {

// NULL for an unset figure.
FieldValue Optional(const std::optional<double>& v) {
  return v.has_value() ? FieldValue(*v) : FieldValue(std::monostate{});
}

// The figure of column `i`, unset for NULL.
std::optional<double> OptionalColumn(sqlite::Statement& s, int i) {
  if (s.ColumnIsNull(i)) return std::nullopt;
  FieldValue v = s.Column(i);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* n = std::get_if<int64_t>(&v)) return static_cast<double>(*n);
  return std::nullopt;
}

constexpr const char* kOpSweepColumns =
    "op_sweep_id, created_at, finished_at, target, mode, backend, dtypes, max_samples, "
    "check_skips, torch_version, python_version, host, args, planned, "
    "(SELECT count(*) FROM op_results r WHERE r.op_sweep_id = s.op_sweep_id)";

absl::StatusOr<std::vector<OpSweepInfo>> SelectOpSweeps(sqlite::Database& db,
                                                        const std::string& tail,
                                                        const std::vector<std::string>& params) {
  STORE_ASSIGN_OR_RETURN(
      sqlite::Statement select,
      db.Prepare(fmt::format("SELECT {} FROM op_sweeps s {}", kOpSweepColumns, tail)));
  for (size_t i = 0; i < params.size(); ++i) {
    STORE_RETURN_IF_ERROR(select.Bind(static_cast<int>(i) + 1, params[i]));
  }
  std::vector<OpSweepInfo> sweeps;
  while (true) {
    STORE_ASSIGN_OR_RETURN(const bool row, select.Step());
    if (!row) break;
    OpSweepInfo& s = sweeps.emplace_back();
    s.op_sweep_id = select.ColumnText(0);
    s.created_at = select.ColumnText(1);
    s.finished_at = select.ColumnText(2);
    s.target = select.ColumnText(3);
    s.mode = select.ColumnText(4);
    s.backend = select.ColumnText(5);
    s.dtypes = select.ColumnText(6);
    s.max_samples = select.ColumnInt(7);
    s.check_skips = select.ColumnInt(8) != 0;
    s.torch_version = select.ColumnText(9);
    s.python_version = select.ColumnText(10);
    s.host = select.ColumnText(11);
    s.args = select.ColumnText(12);
    s.planned = select.ColumnInt(13);
    s.recorded = select.ColumnInt(14);
  }
  return sweeps;
}

absl::Status InsertOpSweepRow(sqlite::Database& db, const OpSweepInfo& s) {
  STORE_ASSIGN_OR_RETURN(
      sqlite::Statement insert,
      db.Prepare("INSERT INTO op_sweeps (op_sweep_id, created_at, finished_at, target, mode, "
                 "backend, dtypes, max_samples, check_skips, torch_version, python_version, host, "
                 "args, planned) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  const FieldValue finished =
      s.finished_at.empty() ? FieldValue(std::monostate{}) : FieldValue(s.finished_at);
  STORE_RETURN_IF_ERROR(insert.BindAll(s.op_sweep_id, s.created_at, finished, s.target, s.mode,
                                       s.backend, s.dtypes, s.max_samples,
                                       int64_t{s.check_skips ? 1 : 0}, s.torch_version,
                                       s.python_version, s.host, s.args, s.planned));
  return insert.Run();
}

}  // namespace

absl::Status Store::CreateOpSweep(const OpSweepInfo& sweep) {
  if (sweep.op_sweep_id.empty()) return absl::InvalidArgumentError("empty op sweep id");
  STORE_ASSIGN_OR_RETURN(std::vector<OpSweepInfo> existing,
                         SelectOpSweeps(*db_, "WHERE op_sweep_id = ?", {sweep.op_sweep_id}));
  if (!existing.empty()) {
    return absl::AlreadyExistsError(
        fmt::format("{}: op sweep {} exists already", path_.string(), sweep.op_sweep_id));
  }
  return InsertOpSweepRow(*db_, sweep);
}

absl::StatusOr<bool> Store::InsertOpResultRow(const OpResult& r, bool skip_present) {
  STORE_ASSIGN_OR_RETURN(
      sqlite::Statement insert,
      db_->Prepare(fmt::format(
          "INSERT {} INTO op_results (op_sweep_id, op, variant, dtype, status, detail, samples, "
          "passed, failed, errored, timed_out, first_failure, error_type, signature, "
          "max_abs_err, max_rel_err, atol, rtol, tol_source, ref_dtype, fallback_audit, "
          "aten_ops, fallback_ops, skip_source, skip_kind, skip_reason, wall_s) VALUES (?, ?, ?, "
          "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
          "RETURNING op",
          skip_present ? "OR IGNORE" : "")));
  STORE_RETURN_IF_ERROR(insert.BindAll(
      r.op_sweep_id, r.op, r.variant, r.dtype, std::string(TestStatusName(r.status)), r.detail,
      r.samples, r.passed, r.failed, r.errored, r.timed_out, r.first_failure, r.error_type,
      r.signature, Optional(r.max_abs_err), Optional(r.max_rel_err), Optional(r.atol),
      Optional(r.rtol), r.tol_source, r.ref_dtype, r.fallback_audit,
      r.aten_ops.empty() ? std::string("[]") : r.aten_ops,
      r.fallback_ops.empty() ? std::string("{}") : r.fallback_ops, r.skip_source, r.skip_kind,
      r.skip_reason, r.wall_s));
  absl::StatusOr<bool> inserted = insert.Step();
  if (!inserted.ok()) {
    if (absl::IsAlreadyExists(inserted.status())) {
      return absl::AlreadyExistsError(
          fmt::format("{}: op sweep {} has a result of {} at {} already", path_.string(),
                      r.op_sweep_id, r.Key(), r.dtype));
    }
    return inserted.status();
  }
  STORE_ASSIGN_OR_RETURN(const bool more, insert.Step());
  (void)more;
  return *inserted;
}

absl::Status Store::InsertOpResults(const std::vector<OpResult>& results) {
  sqlite::Transaction transaction(db_.get());
  STORE_RETURN_IF_ERROR(transaction.Begin());
  for (const OpResult& r : results) {
    STORE_ASSIGN_OR_RETURN(std::vector<OpSweepInfo> sweeps,
                           SelectOpSweeps(*db_, "WHERE op_sweep_id = ?", {r.op_sweep_id}));
    if (sweeps.empty()) {
      return absl::NotFoundError(fmt::format("{}: no op sweep {}", path_.string(), r.op_sweep_id));
    }
    STORE_RETURN_IF_ERROR(InsertOpResultRow(r, false).status());
  }
  return transaction.Commit();
}

absl::Status Store::FinishOpSweep(const std::string& op_sweep_id, const std::string& finished_at) {
  STORE_ASSIGN_OR_RETURN(sqlite::Statement update,
                         db_->Prepare("UPDATE op_sweeps SET finished_at = ? WHERE op_sweep_id = ? "
                                      "RETURNING op_sweep_id"));
  STORE_RETURN_IF_ERROR(update.BindAll(finished_at, op_sweep_id));
  STORE_ASSIGN_OR_RETURN(const bool updated, update.Step());
  if (!updated) {
    return absl::NotFoundError(fmt::format("{}: no op sweep {}", path_.string(), op_sweep_id));
  }
  STORE_ASSIGN_OR_RETURN(const bool more, update.Step());
  (void)more;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<OpSweepInfo>> Store::ListOpSweeps() {
  return SelectOpSweeps(*db_, "ORDER BY created_at, rowid", {});
}

absl::StatusOr<OpTablesMark> Store::MarkOpTables() {
  STORE_ASSIGN_OR_RETURN(sqlite::Statement select,
                         db_->Prepare("SELECT (SELECT count(*) FROM op_sweeps), "
                                      "(SELECT count(nullif(finished_at, '')) FROM op_sweeps), "
                                      "(SELECT coalesce(max(rowid), 0) FROM op_results)"));
  STORE_ASSIGN_OR_RETURN(const bool row, select.Step());
  if (!row) return absl::InternalError(fmt::format("{}: no op tables' mark", path_.string()));
  return OpTablesMark{select.ColumnInt(0), select.ColumnInt(1), select.ColumnInt(2)};
}

absl::StatusOr<OpSweepInfo> Store::GetOpSweep(const std::string& op_sweep_id) {
  STORE_ASSIGN_OR_RETURN(std::vector<OpSweepInfo> sweeps,
                         SelectOpSweeps(*db_, "WHERE op_sweep_id = ?", {op_sweep_id}));
  if (sweeps.empty()) {
    return absl::NotFoundError(fmt::format("{}: no op sweep {}", path_.string(), op_sweep_id));
  }
  return sweeps.front();
}

absl::StatusOr<std::vector<OpResult>> Store::OpResults(const std::string& op_sweep_id) {
  STORE_ASSIGN_OR_RETURN(const OpSweepInfo sweep, GetOpSweep(op_sweep_id));
  STORE_ASSIGN_OR_RETURN(
      sqlite::Statement select,
      db_->Prepare("SELECT op, variant, dtype, status, detail, samples, passed, failed, errored, "
                   "timed_out, first_failure, error_type, signature, max_abs_err, max_rel_err, "
                   "atol, rtol, tol_source, ref_dtype, fallback_audit, aten_ops, fallback_ops, "
                   "skip_source, skip_kind, skip_reason, wall_s FROM op_results "
                   "WHERE op_sweep_id = ? ORDER BY op, variant, dtype"));
  STORE_RETURN_IF_ERROR(select.BindAll(op_sweep_id));
  std::vector<OpResult> results;
  while (true) {
    STORE_ASSIGN_OR_RETURN(const bool row, select.Step());
    if (!row) break;
    OpResult& r = results.emplace_back();
    r.op_sweep_id = op_sweep_id;
    r.target = sweep.target;
    r.mode = sweep.mode;
    r.torch_version = sweep.torch_version;
    r.op = select.ColumnText(0);
    r.variant = select.ColumnText(1);
    r.dtype = select.ColumnText(2);
    absl::StatusOr<TestStatus> status = ParseTestStatus(select.ColumnText(3));
    if (!status.ok()) {
      return absl::DataLossError(fmt::format("{}: op sweep {}: {}: {}", path_.string(), op_sweep_id,
                                             r.Key(), std::string(status.status().message())));
    }
    r.status = *status;
    r.detail = select.ColumnText(4);
    r.samples = select.ColumnInt(5);
    r.passed = select.ColumnInt(6);
    r.failed = select.ColumnInt(7);
    r.errored = select.ColumnInt(8);
    r.timed_out = select.ColumnInt(9);
    r.first_failure = select.ColumnText(10);
    r.error_type = select.ColumnText(11);
    r.signature = select.ColumnText(12);
    r.max_abs_err = OptionalColumn(select, 13);
    r.max_rel_err = OptionalColumn(select, 14);
    r.atol = OptionalColumn(select, 15);
    r.rtol = OptionalColumn(select, 16);
    r.tol_source = select.ColumnText(17);
    r.ref_dtype = select.ColumnText(18);
    r.fallback_audit = select.ColumnText(19);
    r.aten_ops = select.ColumnText(20);
    r.fallback_ops = select.ColumnText(21);
    r.skip_source = select.ColumnText(22);
    r.skip_kind = select.ColumnText(23);
    r.skip_reason = select.ColumnText(24);
    r.wall_s = OptionalColumn(select, 25).value_or(0);
  }
  return results;
}

absl::StatusOr<int64_t> Store::MergeOpResults(const OpSweepInfo& sweep,
                                              const std::vector<OpResult>& results) {
  if (sweep.op_sweep_id.empty()) return absl::InvalidArgumentError("empty op sweep id");
  sqlite::Transaction transaction(db_.get());
  STORE_RETURN_IF_ERROR(transaction.Begin());
  STORE_ASSIGN_OR_RETURN(std::vector<OpSweepInfo> existing,
                         SelectOpSweeps(*db_, "WHERE op_sweep_id = ?", {sweep.op_sweep_id}));
  if (existing.empty()) {
    STORE_RETURN_IF_ERROR(InsertOpSweepRow(*db_, sweep));
  } else if (existing.front().target != sweep.target || existing.front().mode != sweep.mode ||
             existing.front().torch_version != sweep.torch_version) {
    return absl::InvalidArgumentError(
        fmt::format("op sweep {}: stored with target {}, mode {}, torch {}; the import has {}, "
                    "{}, {}",
                    sweep.op_sweep_id, existing.front().target, existing.front().mode,
                    existing.front().torch_version, sweep.target, sweep.mode, sweep.torch_version));
  }
  int64_t added = 0;
  for (OpResult r : results) {
    r.op_sweep_id = sweep.op_sweep_id;
    STORE_ASSIGN_OR_RETURN(const bool inserted, InsertOpResultRow(r, true));
    added += inserted ? 1 : 0;
  }
  STORE_RETURN_IF_ERROR(transaction.Commit());
  return added;
}

}  // namespace compatlab
