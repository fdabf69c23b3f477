// `compatlab matrix` and /api/matrix: models x (target, mode), one current
// verdict per cell within one stack selection (doc/matrix.md).
//
// A row is a model and one test of it apart from where it ran: model_id, kind,
// dtype, batch_size, seq_len and kind_params (a model tested in one way has one
// row; a dynamic test's shapes are its shape). A column is a (target, mode, dynamic): a
// dynamic test (--dynamic) is a column of its own. A cell holds the current run
// (query/current.h: the latest by finish time) of the row's test on the
// column's target and mode, or nothing ("not measured"). Harness tests (noop,
// faults) build no model and are left out.
#ifndef COMPATLAB_QUERY_MATRIX_H_
#define COMPATLAB_QUERY_MATRIX_H_

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/records.h"
#include "nlohmann/json.hpp"
#include "query/diff.h"
#include "query/list_runs.h"
#include "query/runs_format.h"
#include "store/store.h"

namespace compatlab {

// "2.13.0" of "2.13.0+cpu": torch's release without its local build tag (the
// tag names the build for a target, +cpu or +cu128, not another release).
std::string_view TorchRelease(std::string_view torch_version);

// Orders version strings piece by piece: runs of digits compare as numbers,
// other runs as text ("2.10.0" > "2.9.1"). <0, 0 or >0.
int CompareVersions(std::string_view a, std::string_view b);

// A software stack as the matrix groups it: torch's release and the
// transformers version.
struct StackPair {
  std::string torch_release;
  std::string transformers_version;
  bool operator==(const StackPair&) const = default;
};

StackPair StackOf(const RunRecord& run);

// The index of the newest of `stacks`: the greatest torch release, then the
// greatest transformers version (CompareVersions). REQUIRES: not empty.
size_t NewestStack(const std::vector<StackPair>& stacks);

// Which runs a matrix is made of.
struct StackSelection {
  enum class Choice {
    kNewest,  // the runs of the newest stack pair among the selected runs
    kAll,     // every stack: a cell's current run may come from any of them
    kGiven,   // `given`'s runs
    kNamed,   // the runs of the named stacks (RunResult::stack), side by side: a column each
  };
  Choice choice = Choice::kNewest;
  // kNamed: the stack names in the order given; the first is the base of the comparison.
  std::vector<std::string> named;
  // kGiven: a sweep and/or a stack. torch matches the release (TorchRelease)
  // of a run's torch_version, or the whole version when it holds '+';
  // sweep and transformers match exactly.
  DiffSide given;

  // True when `run` belongs to the selection (always for kNewest and kAll).
  bool Matches(const RunRecord& run) const;
  // "newest", "all", the given side ("torch=2.12.0,transformers=5.22.0"), or the named
  // stacks ("stacks default,t5").
  std::string Describe() const;
};

// "newest", "all", or a side as `diff` takes it (ParseDiffSide: a sweep id,
// or sweep=, torch=, transformers= pairs). InvalidArgument otherwise.
absl::StatusOr<StackSelection> ParseStackSelection(std::string_view text);

// `--stacks default,NAME`: comma-separated stack names (doc/stacks.md), each once, at most
// kMaxNamedStacks. InvalidArgument otherwise.
absl::StatusOr<StackSelection> ParseNamedStacks(std::string_view text);
inline constexpr size_t kMaxNamedStacks = 8;

// What a cell says.
enum class Verdict {
  kPass,
  kFail,          // fail_accuracy, fail_to_load, fail_to_compile, fail_to_run, timeout, crash, oom
  kCouldNotTest,  // skipped, harness_error, or a failure blamed on compatlab (core/blame.h)
  kNotMeasured,   // no run
};
Verdict VerdictOf(TestStatus status);
// A run's verdict: could_not_test when it is not blamed on the model (its reduction,
// reference or harness failed: compatlab could not test it), else VerdictOf(status).
Verdict VerdictOf(const RunResult& result);
// "pass", "fail", "could_not_test", "not_measured".
std::string_view VerdictName(Verdict verdict);

// "forward 1x32 float32", plus the kind parameters' canonical JSON text when
// there are any: a row's test. `kind_params_json` as KindParamsToJson writes it. A dynamic
// test's `shapes` (TestSpec::shapes) stand for its shape: "forward 1x16,1x32 float32".
std::string MatrixTestLabel(std::string_view kind, std::string_view dtype, int64_t batch_size,
                            int64_t seq_len, std::string_view kind_params_json,
                            std::string_view shapes = {});
std::string MatrixTestLabel(const TestSpec& spec);

struct MatrixColumn {
  std::string target;
  std::string mode;
  // The members after target and mode have defaults: a column names only those it sets.
  std::string stack = {};    // a named stack's columns (StackSelection::kNamed); "" otherwise
  int64_t ranks = 1;         // a test over 2 ranks is its own column (doc/ranks.md)
  std::string dynamic = {};  // "" static, else TestSpec::dynamic (true, mark): its own column
  bool operator==(const MatrixColumn&) const = default;
};

// Columns in order: by target, then eager before the other modes (by name), then ranks.
bool MatrixColumnBefore(const MatrixColumn& a, const MatrixColumn& b);

// A cell's change from the base stack's cell of its (target, mode), by diff's rule
// (query/diff.h, DiffRuns): its kind, figures and the rule that decided it.
struct StackChange {
  std::string kind;  // ChangeKindName: "newly failing", "slower steady", ...
  std::string detail;
  std::string rule;
};

struct MatrixRow {
  std::string model_id;
  std::string model_type;
  // What people call the model: the checkpoint directory's name for ckpt:
  // ids (else "ckpt:" and 12 hex digits), the model_id otherwise.
  std::string name;
  // "reduced" for hf: ids (compatlab's reduced configuration), "checkpoint"
  // for ckpt: ids (the checkpoint's own size), "" when not known.
  std::string size;
  std::optional<int64_t> param_count;  // of the newest of the row's cells that has one
  std::string test;                    // MatrixTestLabel
  std::vector<int> cells;              // by column: an index into Matrix::runs, -1 = not measured
  // kNamed: by column, how the cell changed from the first stack's cell of its (target,
  // mode) (empty: unchanged, not measured on either, or a base column); empty otherwise.
  std::vector<std::vector<StackChange>> changes;
};

struct Matrix {
  StackSelection selection;
  // kNewest: the stack chosen (unset when there were no runs).
  std::optional<StackPair> newest;
  int64_t stacks = 0;  // distinct stack pairs among the runs before the selection
  std::vector<MatrixColumn> columns;
  std::vector<MatrixRow> rows;  // by model_id, then test
  std::vector<RunRecord> runs;  // the current run of each cell
  int64_t current = 0;          // cells with a run (runs.size(), or the whole matrix's for a page)
  int64_t superseded = 0;       // runs of the selection that are not the current run of their cell

  // "torch 2.13.0, transformers 5.23.0 (newest of 2 stacks)", "all stacks (2)", ...
  std::string DescribeStack() const;
};

// The matrix of `runs` (in any order): harness tests dropped, then the stack
// selection, then the current run of each cell. `columns` are shown even
// when no run has them (a page of a larger matrix keeps its columns).
Matrix BuildMatrix(std::vector<RunRecord> runs, const StackSelection& selection,
                   const std::vector<MatrixColumn>& columns = {});

// The matrix for people: a line naming the stack and the counts, a table with
// one line per row (model, params, size, test) and one column per (target,
// mode), each cell "pass 1.23s/4.56ms" (prepare_s / steady_median_s), "+N fb"
// when N ops fell back, the status of a failure, "-" when not measured; then
// one line per failing cell with its error's first line, cut. Text is
// sanitized for the terminal. Ends in '\n'.
std::string FormatMatrixTable(const Matrix& matrix);
// The matrix as JSON (doc/matrix.md), for `--format json` and /api/matrix:
// {"stack", "columns", "rows": [{..., "cells": [{verdict, status, run_id,
// ...}]}], "superseded"}.
// Error messages longer than `max_error_chars` (0 = no limit) are cut, on one
// line, and the cell says "error_truncated": true.
nlohmann::ordered_json MatrixJson(const Matrix& matrix, size_t max_error_chars = 0);
// MatrixJson with two-space indentation, ending in '\n'.
std::string FormatMatrixJson(const Matrix& matrix);
// RFC 4180 CSV, one record per cell (not measured ones included), CRLF lines.
std::string FormatMatrixCsv(const Matrix& matrix);

struct MatrixOptions {
  std::filesystem::path db;
  RunFilter filter;  // as `query` takes it (sort and limit are not used)
  StackSelection selection;
  RunsFormat format = RunsFormat::kTable;
};

// `compatlab matrix`: the text to print. Errors: FailedPrecondition when the
// store cannot be opened, InvalidArgument for an unknown sweep, Internal when
// it cannot be read.
absl::StatusOr<std::string> ShowMatrix(const MatrixOptions& options);

}  // namespace compatlab

#endif  // COMPATLAB_QUERY_MATRIX_H_
