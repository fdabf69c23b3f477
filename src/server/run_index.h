// An in-memory index of a store's runs for `compatlab serve`: the fields a
// search filters on, interned, plus a few metrics, one small row per run in
// rowid (insertion) order. A search walks it newest first and returns rowids;
// the full records are then read from the store by rowid (Store::RunsByRowid).
//
// The store is only read: the index is kept current by Refresh(), which reads
// the runs stored since the last call (runs are never deleted or rewritten,
// so rowids only grow).
//
// Thread safety: every method may be called from any thread; searches share
// a lock, Refresh() takes it exclusively only to append.
#ifndef COMPATLAB_SERVER_RUN_INDEX_H_
#define COMPATLAB_SERVER_RUN_INDEX_H_

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/blame.h"
#include "query/matrix.h"
#include "store/store.h"

namespace compatlab {

// Which runs a search selects, newest first.
struct IndexQuery {
  // Uses sweep_id, model (substring of model_id, model_type or a checkpoint's directory
  // name, any case),
  // status, kind, mode, target, dtype, torch_version, transformers_version.
  // test_id, run_id, limit and sort are not used.
  RunFilter filter;
  std::string model_id;        // exact model_id; "" = any
  bool failures_only = false;  // every status but pass and skipped
  int64_t before_rowid = 0;    // keyset cursor: only runs older than this rowid; 0 = none
  size_t limit = 50;           // rows returned
  size_t count_cap = 1000;     // the total is counted up to this many
};

// How a walk found the matching runs (for tests and benchmarks): every row
// newest first, the matching models' rows merged newest first, or the
// positions of the rarest wanted column value.
enum class WalkKind { kNone, kScan, kModels, kPostings };

struct IndexPage {
  std::vector<int64_t> rowids;  // at most `limit`, newest first
  bool has_more = false;        // more rows after these
  int64_t total = 0;            // matching rows from the cursor on, at most count_cap
  bool total_capped = false;    // there are more than count_cap
  WalkKind walk = WalkKind::kNone;
};

// A distribution of one metric over a group of runs (NULLs left out).
struct MetricStats {
  int64_t count = 0;
  double p50 = 0, p90 = 0, max = 0;
  double geomean = 0;  // of the positive values, for speedup only; 0 otherwise
};

// One group of a summary: runs sharing the group's key.
struct SummaryGroup {
  std::map<std::string, std::string> key;  // e.g. {torch_version: ..., transformers_version: ...}
  int64_t runs = 0;
  // Runs blamed on compatlab (core/blame.h: its reduction, reference or harness), not the
  // model's, and the model's skipped runs (never run); a pass rate is passes over
  // runs - not_model - skipped (core/blame.h, PassRateRoleOf).
  int64_t not_model = 0;
  int64_t skipped = 0;
  std::map<std::string, int64_t> statuses;     // status name -> runs
  std::map<std::string, MetricStats> passing;  // metric -> stats over passing runs
};

// One passing run as a point of the dashboard's scatter plots.
struct SummaryPoint {
  int64_t rowid = 0;
  std::string model_id;
  std::map<std::string, double> metrics;  // metric -> value (NULLs left out)
};

struct Summary {
  int64_t runs = 0;
  std::vector<SummaryGroup> by_stack;    // key: torch_version, transformers_version
  std::vector<SummaryGroup> by_target;   // key: target, mode, torch_version
  std::vector<SummaryGroup> by_seq_len;  // key: target, mode, kind, seq_len
  std::vector<SummaryPoint> points;      // an even sample of the passing runs, newest first
};

// The distinct values of the filterable fields, for the page's filter lists.
struct Facets {
  std::map<std::string, std::vector<std::string>> values;  // field -> sorted values
  int64_t runs = 0;
  int64_t models = 0;
};

// Which cells of the matrix (query/matrix.h) a page shows.
struct MatrixIndexQuery {
  IndexQuery query;  // the filters (failures_only, before_rowid, limit, count_cap unused)
  StackSelection selection;
  size_t offset = 0;  // matrix rows skipped (rows by model_id, then test)
  size_t limit = 50;  // matrix rows returned
};

struct MatrixIndexPage {
  // The runs that may be current in the page's cells: for each cell, every
  // run with its latest finish time (BuildMatrix decides among equal ones).
  std::vector<int64_t> rowids;
  std::vector<MatrixColumn> columns;  // of the whole selection, in order
  int64_t rows = 0;                   // matrix rows of the whole selection
  int64_t cells = 0;                  // cells with a run, whole selection
  int64_t selected = 0;               // runs of the selection (cells + superseded)
  int64_t stacks = 0;                 // stack pairs before the selection
  std::optional<StackPair> newest;    // kNewest: the stack chosen
  // For tests and benchmarks, not part of the answer: made from the cell summaries
  // (RunIndex::MatrixPage) rather than by walking the matching runs.
  bool from_summaries = false;
};

class RunIndex {
 public:
  // The metrics kept per run: every one of these that is a result field of
  // this build (so fields added later, like speedup, are used when present).
  static const std::vector<std::string>& WantedMetrics();

  RunIndex();

  // Reads the runs stored since the last call from `store`.
  absl::Status Refresh(Store& store);

  IndexPage Search(const IndexQuery& query) const;
  // Every run of one model, newest first, at most `limit`; `truncated` when more. A hub id
  // without @COMMIT (hub:ORG/NAME) is the runs of every commit of that repo.
  std::vector<int64_t> ModelRuns(const std::string& model_id, size_t limit, bool* truncated) const;
  // (model_id, runs) of every model whose id, type or checkpoint directory name holds
  // `substring` (any case); empty for an empty substring.
  std::vector<std::pair<std::string, int64_t>> ModelCounts(const std::string& substring) const;
  // model_type of `model_id`, or "" when unknown.
  std::string ModelType(const std::string& model_id) const;
  Summary Summarize(const IndexQuery& query, size_t max_points) const;
  Facets GetFacets() const;
  // GetFacets' runs and models, its values left empty (they cost a copy and a
  // sort of every distinct value).
  Facets Counts() const;
  // The matrix page of `query`: the same selection as BuildMatrix over the
  // same runs, with only the page's candidate runs to read. A query whose
  // filters are all properties of a matrix cell or of a stack (model, model_id,
  // target, mode, kind, dtype, torch and transformers versions; a selection
  // without a sweep) is made from the per-(cell, stack) summaries without
  // walking runs; any other (sweep_id, status, failures_only) walks the
  // matching runs (MatrixPageByWalk). Both give the same page.
  MatrixIndexPage MatrixPage(const MatrixIndexQuery& query) const;
  // The page of `query` by walking every matching run, whatever the filters:
  // what MatrixPage does for filters that are not cell properties. For tests
  // (the summaries' page must equal it) and benchmarks.
  MatrixIndexPage MatrixPageByWalk(const MatrixIndexQuery& query) const;
  // For each of `rowids`: false when a newer run (by finish time) of the same
  // matrix cell on the same stack pair is indexed (the run is superseded).
  std::vector<bool> Current(const std::vector<int64_t>& rowids) const;
  int64_t size() const;
  // The metrics actually kept (WantedMetrics() that exist in this build).
  const std::vector<std::string>& metrics() const { return metric_names_; }

 private:
  // One interned column: values and their ids.
  struct Dict {
    std::vector<std::string> values;
    std::unordered_map<std::string, uint32_t> ids;
    uint32_t Intern(const std::string& value);
    // The id of `value`, or kNone when it never occurs.
    uint32_t Find(const std::string& value) const;
  };
  static constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  enum Column { kSweep, kTarget, kMode, kKind, kStatus, kDtype, kTorch, kTransformers, kColumns };
  // One indexed run. Its model and column ids, which every walk reads, are
  // kept apart by column (row_models_, row_columns_): a walk that filters on
  // two columns reads 12 bytes of each row, not the whole row.
  struct Row {
    int64_t rowid;
    int64_t finished;  // the digits of finished_at as a number: orders like the text
    uint32_t seq_len;
    uint32_t label;        // MatrixTestLabel, interned in labels_
    uint32_t matrix_row;   // dense id of (model, label): matrix_rows_
    uint32_t matrix_cell;  // dense id of (matrix row, target, mode): matrix_cell_column_
  };
  // A query with its strings resolved to ids; `empty` when it cannot match.
  struct Resolved {
    bool empty = false;
    uint32_t want[kColumns];
    int columns[kColumns];                               // the columns with a wanted value
    int active = 0;                                      // how many
    std::shared_ptr<const std::vector<uint8_t>> models;  // null = any model
    std::vector<uint8_t> failure_status;                 // by status id
    bool failures_only = false;
  };
  // A resolved query's checks over the by-column arrays, set up once per
  // walk: matcher(p) tells whether the run at position p matches.
  struct Matcher {
    const uint32_t* columns[kColumns];  // the filtered columns' data
    uint32_t want[kColumns];            // the value each must have
    int active = 0;
    const uint8_t* models = nullptr;  // by model id; null = any model
    const uint32_t* model_of = nullptr;
    const uint8_t* failure = nullptr;  // by status id; null = any status
    const uint32_t* status_of = nullptr;
    bool operator()(size_t p) const {
      for (int i = 0; i < active; ++i) {
        if (columns[i][p] != want[i]) return false;
      }
      return (models == nullptr || models[model_of[p]]) &&
             (failure == nullptr || failure[status_of[p]]);
    }
  };
  // REQUIRES: mu_ held (shared); valid while it is held and `resolved` lives.
  Matcher MatcherFor(const Resolved& resolved) const;
  uint32_t ModelAt(size_t p) const { return row_models_[p]; }
  uint32_t ColumnAt(Column c, size_t p) const { return row_columns_[c][p]; }
  Resolved Resolve(const IndexQuery& query) const;  // REQUIRES: mu_ held (shared)
  std::shared_ptr<const std::vector<uint8_t>> MatchModels(const std::string& substring) const;
  // Positions of matching rows, newest first, walked until `visit` returns
  // false, by the cheapest of three routes (WalkKind; each visits the same
  // positions in the same order).
  template <typename Visit>
  WalkKind Walk(const Resolved& resolved, int64_t before_rowid, Visit visit) const;

  mutable std::shared_mutex mu_;
  std::vector<Row> rows_;
  std::vector<uint32_t> row_models_;             // model id, by position
  std::vector<PassRateRole> row_roles_;          // core/blame.h: where a row counts, by position
  std::vector<uint32_t> row_columns_[kColumns];  // column value ids, by column, by position
  // Posting lists: the positions holding each value id of a column, ascending
  // (a filter on a rare value walks its list, not every row).
  std::vector<std::vector<uint32_t>> postings_[kColumns];
  std::vector<float> metric_values_;  // rows_.size() x metric_names_.size(), NaN = NULL
  std::vector<std::string> metric_names_;
  Dict dicts_[kColumns];
  // The rows of the matrix selection `query` (resolved), newest first.
  template <typename Visit>
  void WalkMatrix(const MatrixIndexQuery& query, MatrixIndexPage& page, Visit visit) const;
  // Position of `rowid` in rows_, or rows_.size() when it is not indexed.
  size_t PositionOf(int64_t rowid) const;
  // Whether the runs at positions a and b ran on the same stack pair.
  bool SameStack(size_t a, size_t b) const;
  // A matrix cell's state while a page is made: the latest finish time among
  // the page's runs of the cell, the newest position having it (+1; 0 = no
  // run) and how many more runs have that same time.
  struct MatrixCellState {
    int64_t finished;
    uint32_t position;
    uint32_t ties;
  };
  // Whether MatrixPage can make `query`'s page from the summaries (every
  // filter a property of a cell or a stack).
  static bool SummariesAnswer(const MatrixIndexQuery& query);
  // REQUIRES: mu_ held (shared). The page; `summaries` chooses the route.
  MatrixIndexPage MakeMatrixPage(const MatrixIndexQuery& query, bool summaries) const;
  // REQUIRES: mu_ held (shared); SummariesAnswer(query). From the summaries,
  // as the walk would: the page's counts and stacks, `column_used` (by column
  // id), `touched` (the matrix rows with a run, any order), the torch and
  // transformers ids taken (by id) and `stack_ok` (by stack_ids_ index: the
  // pairs the selection and the filters take).
  void SummarizeMatrix(const MatrixIndexQuery& query, const Resolved& resolved,
                       MatrixIndexPage& page, std::vector<uint8_t>& column_used,
                       std::vector<uint32_t>& touched, std::vector<uint8_t>& torch_ok,
                       std::vector<uint8_t>& transformers_ok, std::vector<uint8_t>& stack_ok) const;
  // REQUIRES: mu_ held (shared). One cell's state over its summaries that
  // `resolved` and `stack_ok` take.
  MatrixCellState CombinedCell(uint32_t cell_id, const Resolved& resolved,
                               const std::vector<uint8_t>& stack_ok) const;
  // REQUIRES: mu_ held (shared). The stack pairs of the runs `resolved`, the
  // ids taken and not the harness model select, in the order a newest-first
  // walk meets them (it stops once it has seen every pair the index holds).
  std::vector<StackPair> MatrixStacks(const Resolved& resolved,
                                      const std::vector<uint8_t>& torch_ok,
                                      const std::vector<uint8_t>& transformers_ok) const;
  // Whether `resolved` takes value `id` of `column` (or any value).
  static bool Wants(const Resolved& resolved, int column, uint32_t id) {
    return resolved.want[column] == kNone || resolved.want[column] == id;
  }

  Dict models_;                                           // model_id
  Dict labels_;                                           // MatrixTestLabel
  std::vector<std::pair<uint32_t, uint32_t>> stack_ids_;  // (torch, transformers) ids present
  std::vector<std::string> model_types_;                  // by model id
  std::vector<std::string> model_search_;          // lower-case "model_id\nmodel_type" by model id
  std::vector<std::vector<uint32_t>> model_rows_;  // positions in rows_, by model id
  // The matrix rows (model, label), columns (target, mode) and cells (a row
  // and a column) the index holds, by dense id (Row::matrix_row,
  // Row::matrix_cell): a matrix page needs memory for the cells, never for
  // rows x columns.
  std::unordered_map<uint64_t, uint32_t> matrix_row_ids_;
  std::vector<std::pair<uint32_t, uint32_t>> matrix_rows_;  // (model, label)
  std::vector<std::vector<uint32_t>> matrix_row_cells_;     // cell ids, by matrix row
  // A matrix column as the CLI's (query/matrix.h MatrixColumn, stack aside): target and
  // mode (interned), ranks, and dynamic ("" static; interned in labels_).
  struct IndexColumn {
    uint32_t target;
    uint32_t mode;
    int64_t ranks;
    uint32_t dynamic;
    bool operator==(const IndexColumn&) const = default;
  };
  std::vector<IndexColumn> matrix_columns_;
  std::vector<uint32_t> matrix_cell_column_;              // column id, by cell id
  std::vector<std::vector<uint32_t>> model_matrix_rows_;  // matrix row ids, by model id
  // The runs of one cell on one stack pair (stack_ids_) with one kind and dtype
  // (constant within a cell unless a label is ambiguous), kept as runs are
  // appended: a matrix page whose filters are cell properties combines these
  // instead of walking runs.
  struct CellSummary {
    int64_t latest;            // the latest finish time (Row::finished)
    uint32_t latest_position;  // the newest position finishing at `latest`
    uint32_t ties;             // further runs finishing at `latest`
    uint32_t runs;
    uint32_t stack;        // index into stack_ids_
    uint32_t kind, dtype;  // value ids
    uint32_t next;         // the cell's next summary, or kNone
  };
  std::vector<CellSummary> cell_summaries_;
  std::vector<uint32_t> cell_first_summary_;  // by cell id: its first summary
  // The summaries laid out by model, matrix row and cell, so that a page's
  // counting pass reads them in order; made when first needed for this many
  // runs (after a refresh, once).
  struct MatrixDigest {
    struct Entry {
      uint32_t column, stack, kind, dtype, runs;
      uint32_t first_of_cell;  // 1 on a cell's first summary
    };
    std::vector<Entry> entries;
    std::vector<uint32_t> rows;         // matrix row ids, grouped by model
    std::vector<uint32_t> row_begin;    // rows[k]'s entries: [row_begin[k], row_begin[k + 1])
    std::vector<uint32_t> model_begin;  // model m's rows: [model_begin[m], model_begin[m + 1])
    size_t runs = 0;                    // rows_.size() it was made for
  };
  // REQUIRES: mu_ held (shared).
  std::shared_ptr<const MatrixDigest> Digest() const;
  mutable std::mutex digest_mu_;
  mutable std::shared_ptr<const MatrixDigest> digest_;
  // matrix_rows_ ids in the matrix's order (model_id, then label), and each
  // id's place in it; made when first needed for this many matrix rows.
  struct MatrixOrder {
    std::vector<uint32_t> order;
    std::vector<uint32_t> rank;
  };
  // REQUIRES: mu_ held (shared).
  std::shared_ptr<const MatrixOrder> SortedMatrixRows() const;
  mutable std::mutex matrix_order_mu_;
  mutable std::shared_ptr<const MatrixOrder> matrix_order_;
  int64_t last_rowid_ = 0;
  std::mutex refresh_mu_;

  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::shared_ptr<const std::vector<uint8_t>>> model_cache_;
  mutable size_t model_cache_models_ = 0;  // models_ size the cache was built for
};

}  // namespace compatlab

#endif  // COMPATLAB_SERVER_RUN_INDEX_H_
