// The result store: one SQLite database file holding sweeps, their planned
// tests and one row per test execution. Schema: doc/results-schema.md.
//
// Durability: every mutating call is one transaction, committed (and, with
// synchronous=FULL in WAL mode, on disk) when it returns OK. A sweep killed at
// any point therefore resumes from PendingTests() without losing or
// duplicating a result.
//
// Thread safety: a Store is not thread-safe; use one per thread. Several
// processes may open the same file: readers never block (WAL), writers wait
// for one another up to a busy timeout, then fail with Unavailable.
#ifndef COMPATLAB_STORE_STORE_H_
#define COMPATLAB_STORE_STORE_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/op_records.h"
#include "core/records.h"
#include "core/resolved_test.h"
#include "store/schema.h"

namespace compatlab {

namespace sqlite {
class Database;
class Statement;
}  // namespace sqlite

// What the op coverage tables hold, as far as a change to them shows: op sweeps are
// only created and finished (once), op results only added. Two equal marks: nothing
// was stored or finished in between (a reader's cache of op answers stays valid).
struct OpTablesMark {
  int64_t sweeps = 0;       // op sweeps stored
  int64_t finished = 0;     // of them, those finished
  int64_t last_result = 0;  // the newest op result's rowid; 0 when none
  bool operator==(const OpTablesMark&) const = default;
};

enum class OpenMode {
  kReadWriteCreate,  // create the file and the schema if missing; migrate an older store
  kReadWrite,        // the store must exist; migrate an older store
  kReadOnly,         // the store must exist at the current schema version; never writes
  // kReadOnly for a store that came from elsewhere (import --from-store): the
  // file is opened immutable (SQLite's `mode=ro&immutable=1`), so that no
  // byte of it, and no -wal, -shm or lock file beside it, is read or written
  // but the file itself; a non-empty -wal beside it is refused.
  kReadOnlyImmutable,
};

// One sweep: a planned list of tests run together.
struct SweepInfo {
  std::string sweep_id{};
  std::string created_at{};                  // UTC ISO 8601
  std::optional<std::string> finished_at{};  // unset while the sweep is unfinished
  std::string suite{};                       // suite name, "" when none
  std::string args{};                        // the command line that started it
  std::string host{};
  int64_t jobs = 1;
  int64_t planned = 0;   // number of planned tests; CreateSweep sets it from the plan
  int64_t recorded = 0;  // number of stored results; output only
  // The id of the whole resolved plan this sweep runs (part of), "" for a
  // sweep stored before schema version 21 (sweep/plan_file.h, PlanId).
  std::string plan_id{};
  // The shard of that plan this sweep runs and the plan's shard count; both
  // unset for a sweep of a whole plan.
  std::optional<int64_t> shard{};
  std::optional<int64_t> shards{};
};

// A sweep of another store merged with its runs (`compatlab merge`): its
// record (planned and recorded are ignored) and its planned tests' specs.
struct MergedSweep {
  SweepInfo info{};
  std::vector<TestSpec> plan{};
};

// One key of the order of QueryRuns: a result field (schema.h) and a direction.
struct RunSortKey {
  std::string field{};
  bool descending = false;
};

// Parses "model_id,-wall_s": result field names separated by commas, each
// descending when prefixed with '-'. InvalidArgument for an unknown field or
// an empty item. "" is no keys.
absl::StatusOr<std::vector<RunSortKey>> ParseRunSort(const std::string& text);

// Which runs QueryRuns/CountRuns return. Empty strings match anything; the
// set conditions must all hold. `model` matches a substring of model_id or
// model_type, ignoring ASCII case.
struct RunFilter {
  std::string sweep_id{};              // exact
  std::string model{};                 // substring, see above
  std::optional<TestStatus> status{};  // exact
  std::string kind{};                  // exact
  std::string mode{};                  // exact
  std::string target{};                // exact
  std::string dtype{};                 // exact
  std::string torch_version{};         // exact
  std::string transformers_version{};  // exact
  std::string stack{};                 // exact: the named stack (RunResult::stack)
  std::string test_id{};               // exact
  std::string run_id{};                // exact
  int64_t limit = 0;                   // at most this many rows; 0 = all (QueryRuns only)
  // Order of QueryRuns: by `sort` (NULLs first ascending, last descending),
  // then insertion order, or its reverse when newest_first. Every key must
  // name a result field, else QueryRuns fails with InvalidArgument.
  std::vector<RunSortKey> sort{};
  bool newest_first = false;
};

// What MergeRuns did.
struct MergeStats {
  int64_t inserted = 0;         // runs added
  int64_t already_present = 0;  // runs skipped: their run_id was stored already
  int64_t sweeps_created = 0;   // sweeps created for the added runs
  int64_t tests_planned = 0;    // planned tests appended to a sweep's plan
};

// OK when `path` can name a store: not "" and none of SQLite's in-memory or
// URI names (":memory:", "file:..."), which would keep nothing. Else
// InvalidArgument. Store::Open checks it first.
absl::Status CheckStorePath(const std::filesystem::path& path);

// `compatlab migrate`: opens the store at `path` read-write, which migrates a
// store of an older schema version to kSchemaVersion in one transaction (a
// damaged file is refused and left as it was, as by Store::Open). Returns the
// version the file had: kSchemaVersion when there was nothing to do. Readers
// (query, serve, diff, ...) open read-only and refuse an older store, naming
// this command.
absl::StatusOr<int> MigrateStoreAt(const std::filesystem::path& path);

class Store {
 public:
  // Opens the store at `path`.
  //
  // Nothing is written unless the file is an empty database (created here in
  // kReadWriteCreate) or a compatlab store of an older schema version (then
  // migrated in one transaction). Errors, each one line naming `path`:
  //   NotFound            the file does not exist (kReadWrite, kReadOnly; not created)
  //   InvalidArgument     the file is not a SQLite database
  //   FailedPrecondition  a SQLite database that is not a compatlab store
  //                       (other application_id, no meta table), an empty
  //                       database outside kReadWriteCreate, a store of a newer
  //                       schema version, an older store opened kReadOnly
  //   Unavailable         another process held the write lock too long
  //   InvalidArgument     `path` fails CheckStorePath (nothing opened)
  //   DataLoss            (kReadWrite, kReadWriteCreate) the file fails SQLite's
  //                       PRAGMA integrity_check; it is left byte-identical
  //   FailedPrecondition  its schema objects are not exactly those of its
  //                       schema version (a view or a virtual table where a
  //                       table belongs, a trigger, another column or index):
  //                       checked before any row is read
  //
  // Every store is opened as if it came from anywhere: SQLite's defensive
  // mode, trusted_schema off, no triggers or views run, and a bound on the
  // work of each statement (kMaxStatementWork of core/limits.h: past it the
  // statement stops with ResourceExhausted).
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::filesystem::path& path,
                                                     OpenMode mode);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // The schema version the file had when it was opened: below kSchemaVersion
  // when this Open migrated it (kReadWrite, kReadWriteCreate), 0 for a store
  // this Open created.
  int opened_version() const { return opened_version_; }

  // From now on, reading a run whose stored row is over `max_bytes` fails
  // with OutOfRange before the row is loaded (SQLite's SQLITE_LIMIT_LENGTH on
  // this connection); so does writing one. For readers of stores that came
  // from elsewhere (import --from-store). REQUIRES: max_bytes > 0.
  void LimitRowBytes(int64_t max_bytes);

  // Records a new sweep and its plan (in plan order), in one transaction.
  // `sweep.planned` and `sweep.recorded` are ignored (planned = plan.size()).
  // REQUIRES: sweep.sweep_id is not empty; no test appears twice in `plan`
  // (same TestId) — else InvalidArgument and nothing is written.
  // AlreadyExists when the sweep id is taken.
  absl::Status CreateSweep(const SweepInfo& sweep, const std::vector<TestSpec>& plan);
  // CreateSweep with each test's execution settings stored with it (a test
  // without, like every test of CreateSweep's plan, has none). Same errors.
  absl::Status CreateResolvedSweep(const SweepInfo& sweep, const std::vector<ResolvedTest>& plan);

  // The sweep `sweep_id`; NotFound if none.
  absl::StatusOr<SweepInfo> GetSweep(const std::string& sweep_id);

  // The most recently created sweep without finished_at, or nullopt.
  absl::StatusOr<std::optional<SweepInfo>> LatestUnfinishedSweep();

  // Every sweep, oldest first.
  absl::StatusOr<std::vector<SweepInfo>> ListSweeps();

  // The plan of `sweep_id`, in plan order. NotFound if the sweep does not exist.
  absl::StatusOr<std::vector<TestSpec>> PlannedTests(const std::string& sweep_id);

  // The planned tests of `sweep_id` that have no stored result yet, in plan
  // order. NotFound if the sweep does not exist.
  absl::StatusOr<std::vector<TestSpec>> PendingTests(const std::string& sweep_id);

  // The plan of `sweep_id` with the execution settings stored with it, in
  // plan order; with `pending_only`, only its tests without a result. A test
  // planned by an older compatlab has `execution` unset. NotFound if the
  // sweep does not exist.
  absl::StatusOr<std::vector<ResolvedTest>> Plan(const std::string& sweep_id, bool pending_only);

  // The planned test `test_id` of `sweep_id` with its execution settings
  // (unset for a test an import planned, or an older compatlab); nullopt when
  // the sweep does not plan it.
  absl::StatusOr<std::optional<ResolvedTest>> PlannedTest(const std::string& sweep_id,
                                                          const std::string& test_id);

  // Stores one result in its own transaction; durable when it returns OK.
  // REQUIRES: record.run_id is new, record.test_id == record.spec.TestId().
  // Errors (nothing written):
  //   InvalidArgument     empty run_id, test_id not the spec's TestId()
  //   NotFound            no sweep record.sweep_id
  //   FailedPrecondition  the test is not planned in that sweep
  //   AlreadyExists       the sweep already has a result for this test (the
  //                       stored one is kept), or run_id is taken
  absl::Status InsertRun(const RunRecord& record);

  // Merges runs recorded elsewhere (an import), all in one transaction: all
  // are merged or, on any error, none.
  //
  // Idempotent: a run whose run_id is stored already is skipped and the stored
  // row kept. A run of a sweep this store lacks creates the sweep (suite "",
  // args `args`, created_at the earliest started_at and finished_at the latest
  // finished_at of its merged runs, host and jobs of its first run), so it is
  // never taken for an unfinished one; a run of a test its sweep did not plan
  // appends the test to the plan (sweeps.planned follows). Imported runs never
  // join a sweep this store planned (IsPlannedHere).
  // Errors (nothing written):
  //   InvalidArgument  empty run_id or sweep_id, test_id not the spec's
  //                    TestId(), or a run of a sweep this store planned
  //   AlreadyExists    the sweep already has a result for the test under
  //                    another run_id (stored, or earlier in `runs`)
  absl::StatusOr<MergeStats> MergeRuns(const std::vector<RunRecord>& runs, const std::string& args);

  // The next runs of a merge: fills `batch` (given empty); an empty batch
  // ends the merge. An error stops the merge and is returned as it is.
  using RunBatches = std::function<absl::Status(std::vector<RunRecord>& batch)>;
  // Called for a run whose run_id is stored already (at `stored_rowid`): OK
  // skips it, an error stops the merge and is returned as it is.
  using OnStoredRun = std::function<absl::Status(const RunRecord& run, int64_t stored_rowid)>;
  // MergeRuns over runs read batch by batch, in one transaction, holding one
  // batch at a time: what the merge remembers between batches is in the
  // store's file, so its memory does not grow with the number of runs.
  //
  // `sweeps` are merged first, in the same transaction: a sweep this store
  // lacks is created with its record (finished, at its latest run's end when
  // it was not) and its plan as specs only (no execution settings: never a
  // sweep planned here); one it has gets the planned tests it lacks. Errors
  // (nothing written): InvalidArgument for a sweep this store planned, or
  // one stored with another plan id or shard.
  absl::StatusOr<MergeStats> MergeRunBatches(const RunBatches& next, const std::string& args,
                                             const OnStoredRun& on_stored = nullptr,
                                             const std::vector<MergedSweep>& sweeps = {});

  // True when `sweep_id` is a sweep this store planned itself (`compatlab
  // sweep`: a plan with execution settings, or a sweep not finished), which
  // no import may add runs to; false for a sweep an import created, or none.
  absl::StatusOr<bool> IsPlannedHere(const std::string& sweep_id);

  // The rowid the next stored run will get (runs are never deleted, so
  // rowids grow in insertion order).
  absl::StatusOr<int64_t> NextRunRowid();

  // Sets (or replaces) the finished_at of `sweep_id`. NotFound if none.
  absl::Status FinishSweep(const std::string& sweep_id, const std::string& finished_at);

  // The stored runs that match `filter`, every field as stored (a NULL
  // metric reads as nullopt). DataLoss when a stored row does not parse.
  absl::StatusOr<std::vector<RunRecord>> QueryRuns(const RunFilter& filter);

  // Number of stored runs that match `filter` (its limit is ignored).
  absl::StatusOr<int64_t> CountRuns(const RunFilter& filter);

  // (model id, number of runs) of the stored runs that match `filter`, most
  // runs first, then by model id (its limit and sort are ignored).
  absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> CountRunsByModel(
      const RunFilter& filter);

  // For readers that keep their own index of the runs (src/server): calls
  // `row` for every stored run whose rowid is greater than `after_rowid`, in
  // rowid order (insertion order: runs are never deleted), with the values of
  // `fields` (result field names, schema.h) in that order. InvalidArgument
  // for an unknown field name.
  absl::Status ScanFields(
      const std::vector<std::string>& fields, int64_t after_rowid,
      const std::function<void(int64_t rowid, std::vector<FieldValue>& values)>& row);

  // Calls `row` with the values of `fields` (result field names) of each run
  // of `rowids`, in that order; a rowid with no run is skipped. For output
  // edges that only pass values on (the server's run lists): the values are
  // read in place, and text views are valid only during that call of `row`.
  // All rows come from one statement (one snapshot); the statements of the
  // last kKeptFieldsSelects field lists are kept. InvalidArgument for an
  // unknown field name.
  absl::Status FieldsByRowid(
      const std::vector<std::string>& fields, const std::vector<int64_t>& rowids,
      const std::function<void(int64_t rowid, const std::vector<FieldView>& values)>& row);
  static constexpr size_t kKeptFieldsSelects = 8;

  // The runs with these rowids, in the order given; a rowid with no run is
  // skipped. Without `with_outputs`, the bulky fields (FieldDef::bulky:
  // stdout_tail, stderr_tail, error_traceback, fx_graph_details) read as "" (they are not
  // read at all).
  absl::StatusOr<std::vector<RunRecord>> RunsByRowid(const std::vector<int64_t>& rowids,
                                                     bool with_outputs);

  // --- Op coverage (`compatlab ops`, doc/ops.md; op_store.cc) ---

  // Records a new op sweep (its `recorded` is ignored). InvalidArgument for an
  // empty id; AlreadyExists when the id is taken.
  absl::Status CreateOpSweep(const OpSweepInfo& sweep);
  // Stores `results` in one transaction; durable when it returns OK. Errors
  // (nothing written): NotFound for a result of no stored op sweep,
  // AlreadyExists for a second result of the same (op, variant, dtype) in an
  // op sweep.
  absl::Status InsertOpResults(const std::vector<OpResult>& results);
  // Sets the finished_at of an op sweep. NotFound if none.
  absl::Status FinishOpSweep(const std::string& op_sweep_id, const std::string& finished_at);
  // Every op sweep, oldest first, with its recorded results counted.
  absl::StatusOr<std::vector<OpSweepInfo>> ListOpSweeps();
  // The op tables' mark now (OpTablesMark): the op sweeps counted and the newest op
  // result's rowid (no op result is read).
  absl::StatusOr<OpTablesMark> MarkOpTables();
  // The op sweep `op_sweep_id`; NotFound if none.
  absl::StatusOr<OpSweepInfo> GetOpSweep(const std::string& op_sweep_id);
  // The results of `op_sweep_id` by op, variant and dtype, with the sweep's
  // target, mode and torch version. NotFound if the op sweep does not exist;
  // DataLoss for a stored status this compatlab does not know.
  absl::StatusOr<std::vector<OpResult>> OpResults(const std::string& op_sweep_id);
  // An import's op sweep and results in one transaction: the sweep is created
  // when missing (an existing one must have the same target, mode and torch
  // version, else InvalidArgument); a result whose (op, variant, dtype) the
  // sweep holds already is skipped. Returns the results added.
  absl::StatusOr<int64_t> MergeOpResults(const OpSweepInfo& sweep,
                                         const std::vector<OpResult>& results);

 private:
  Store(std::filesystem::path path, std::unique_ptr<sqlite::Database> db, int opened_version);

  // The INSERT of one op result, inside the caller's transaction; with
  // `skip_present`, a result already stored is left (returns false).
  absl::StatusOr<bool> InsertOpResultRow(const OpResult& result, bool skip_present);

  // The INSERT of InsertRun and MergeRuns, inside the caller's transaction.
  absl::Status InsertRunRow(const RunRecord& record);

  const std::filesystem::path path_;
  int opened_version_ = 0;
  const std::unique_ptr<sqlite::Database> db_;
  // InsertRunRow's INSERT, prepared once.
  std::unique_ptr<sqlite::Statement> insert_run_;
  // RunsByRowid's one-row SELECT, prepared once: [with_outputs].
  std::unique_ptr<sqlite::Statement> rowid_select_[2];
  // FieldsByRowid's SELECTs and the fields each was prepared for, most
  // recently used first.
  struct FieldsSelect {
    std::vector<std::string> fields;
    std::unique_ptr<sqlite::Statement> select;
  };
  std::vector<FieldsSelect> rowid_fields_selects_;
};

}  // namespace compatlab

#endif  // COMPATLAB_STORE_STORE_H_
