#include "query/matrix.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "core/blame.h"
#include "core/fields.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "query/current.h"
#include "query/noise_mark.h"
#include "query/text_table.h"
#include "util/status.h"
#include "util/utf8.h"

namespace compatlab {
namespace {

using nlohmann::ordered_json;

constexpr size_t kMatrixErrorWidth = 100;  // error lines under the table

// The identity of a run's cell: its row's test and its column. References
// into the run, so that sorting compares without copying.
auto MatrixCellKey(const RunRecord& run) {
  const TestSpec& s = run.spec;
  return std::tie(s.model_id, s.kind, s.dtype, s.batch_size, s.seq_len, s.shapes, s.kind_params,
                  s.target, s.mode, s.ranks, s.dynamic);
}

// The next piece of `text` from `pos`: a run of digits or a run of other bytes.
std::string_view VersionPiece(std::string_view text, size_t& pos) {
  const size_t start = pos;
  const bool digits = std::isdigit(static_cast<unsigned char>(text[pos])) != 0;
  while (pos < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[pos])) != 0) == digits) {
    ++pos;
  }
  return text.substr(start, pos - start);
}

std::string MatrixModelName(const TestSpec& spec) {
  if (spec.model_id.starts_with("ckpt:")) {
    const std::filesystem::path path(spec.model_path);
    std::string name = path.filename().string();
    if (name.empty()) name = path.parent_path().filename().string();
    return name.empty() ? spec.model_id.substr(0, 5 + 12) : name;
  }
  return spec.model_id;
}

std::string MatrixModelSize(const TestSpec& spec) {
  if (spec.model_id.starts_with("hf:")) return "reduced";
  if (spec.model_id.starts_with("ckpt:")) return "checkpoint";
  return "";
}

std::string StatusWithDetail(const RunResult& result) {
  std::string status(TestStatusName(result.status));
  if (!result.status_detail.empty()) status += "(" + result.status_detail + ")";
  return status;
}

std::string ShortSeconds(std::optional<double> s) {
  if (!s) return "-";
  if (*s < 1.0) return fmt::format("{:.2f}ms", *s * 1000.0);
  return fmt::format("{:.2f}s", *s);
}

std::string MatrixCellText(const RunRecord& run) {
  const RunResult& r = run.result;
  if (r.status != TestStatus::kPass) return StatusWithDetail(r);
  std::string text =
      fmt::format("pass {}/{}", MarkedFigure(ShortSeconds(r.prepare_s), PrepareNoisy(r)),
                  MarkedFigure(ShortSeconds(r.steady_median_s), SteadyNoisy(r)));
  if (const std::optional<int64_t> fallbacks = FallbackOpCount(r); fallbacks && *fallbacks > 0) {
    text += fmt::format(" +{} fb", *fallbacks);
  }
  return text;
}

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

std::string ColumnName(const MatrixColumn& column) {
  std::string name = column.target + "/" + column.mode;
  if (column.ranks != 1) name += fmt::format("/{} ranks", column.ranks);
  if (!column.dynamic.empty()) name += " dynamic=" + column.dynamic;
  return column.stack.empty() ? name : column.stack + ":" + name;
}

// The identity of a run's cell among named stacks: MatrixCellKey and the run's stack.
auto NamedCellKey(const RunRecord& run) {
  return std::tuple_cat(MatrixCellKey(run), std::tie(run.result.stack));
}

// The position of `stack` in the named stacks (their order is the columns').
size_t StackIndex(const StackSelection& selection, const std::string& stack) {
  return std::find(selection.named.begin(), selection.named.end(), stack) - selection.named.begin();
}

// Kinds of DiffRuns' changes that say nothing about the model between two stacks.
bool IsStackComparable(ChangeKind kind) {
  return kind != ChangeKind::kDifferentCpu && kind != ChangeKind::kDifferentStack &&
         kind != ChangeKind::kOnlyInBase && kind != ChangeKind::kOnlyInHead;
}

// How `head` changed from `base` by diff's rule (DiffRuns on the two runs).
std::vector<StackChange> CellChanges(const RunRecord& base, const RunRecord& head) {
  DiffReport report = DiffRuns({base}, {head});
  std::vector<StackChange> out;
  for (const Change& change : report.changes) {
    if (!IsStackComparable(change.kind)) continue;
    out.push_back({std::string(ChangeKindName(change.kind)), change.detail, change.rule});
  }
  return out;
}

// kNamed: each cell of a stack after the first marked with its changes from the first
// stack's cell of the same (target, mode).
void MarkStackChanges(Matrix& matrix) {
  const std::string& base_stack = matrix.selection.named.front();
  for (MatrixRow& row : matrix.rows) {
    row.changes.assign(matrix.columns.size(), {});
    for (size_t c = 0; c < matrix.columns.size(); ++c) {
      const MatrixColumn& head = matrix.columns[c];
      if (head.stack == base_stack || row.cells[c] < 0) continue;
      const MatrixColumn base_column{head.target, head.mode, base_stack, head.ranks, head.dynamic};
      auto b = std::find(matrix.columns.begin(), matrix.columns.end(), base_column);
      if (b == matrix.columns.end()) continue;
      const int base_cell = row.cells[static_cast<size_t>(b - matrix.columns.begin())];
      if (base_cell < 0) continue;
      row.changes[c] = CellChanges(matrix.runs[static_cast<size_t>(base_cell)],
                                   matrix.runs[static_cast<size_t>(row.cells[c])]);
    }
  }
}

// The kinds of `changes`, joined: "slower steady, newly failing".
std::string ChangeKinds(const std::vector<StackChange>& changes) {
  std::string out;
  for (const StackChange& change : changes) out += (out.empty() ? "" : ", ") + change.kind;
  return out;
}

ordered_json OptionalJson(const std::optional<double>& v) {
  return v ? ordered_json(*v) : ordered_json(nullptr);
}
ordered_json OptionalJson(const std::optional<int64_t>& v) {
  return v ? ordered_json(*v) : ordered_json(nullptr);
}

ordered_json StackJson(const Matrix& matrix) {
  ordered_json stack = {{"selection", matrix.selection.Describe()},
                        {"description", matrix.DescribeStack()},
                        {"stacks", matrix.stacks}};
  if (matrix.newest) {
    stack["torch_release"] = matrix.newest->torch_release;
    stack["transformers_version"] = matrix.newest->transformers_version;
  }
  return stack;
}

ordered_json ChangesJson(const std::vector<StackChange>& changes) {
  ordered_json out = ordered_json::array();
  for (const StackChange& change : changes) {
    out.push_back({{"kind", change.kind}, {"detail", change.detail}, {"rule", change.rule}});
  }
  return out;
}

ordered_json MatrixCellJson(const Matrix& matrix, int cell, size_t max_error_chars) {
  if (cell < 0) return {{"verdict", std::string(VerdictName(Verdict::kNotMeasured))}};
  const RunRecord& run = matrix.runs[static_cast<size_t>(cell)];
  const RunResult& r = run.result;
  const bool cut =
      max_error_chars >= 3 && DisplayWidth(ToValidUtf8(r.error_message)) > max_error_chars;
  return {{"verdict", std::string(VerdictName(VerdictOf(r)))},
          {"status", std::string(TestStatusName(r.status))},
          {"status_detail", r.status_detail},
          {"run_id", run.run_id},
          {"sweep_id", run.sweep_id},
          {"test_id", run.test_id},
          {"finished_at", run.finished_at},
          {"torch_version", r.torch_version},
          {"transformers_version", r.transformers_version},
          {"stack", r.stack},
          {"stack_versions", r.stack_versions},
          {"backend", run.spec.backend},
          {"prepare_s", OptionalJson(r.prepare_s)},
          {"steady_median_s", OptionalJson(r.steady_median_s)},
          {"noisy", SteadyNoisy(r)},
          {"noisy_reason", r.noisy_reason},
          {"prepare_noisy", PrepareNoisy(r)},
          {"prepare_noisy_reason", r.prepare_noisy_reason},
          {"fallback_audit", r.fallback_audit},
          {"fallback_ops", OptionalJson(FallbackOpCount(r))},
          {"stage", r.stage},
          {"error_type", r.error_type},
          {"error_message", cut ? Truncate(r.error_message, max_error_chars) : r.error_message},
          {"error_truncated", cut},
          {"error_signature", r.error_signature}};
}

}  // namespace

std::string_view TorchRelease(std::string_view torch_version) {
  return torch_version.substr(0, torch_version.find('+'));
}

int CompareVersions(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const std::string_view pa = VersionPiece(a, i);
    const std::string_view pb = VersionPiece(b, j);
    const bool na = std::isdigit(static_cast<unsigned char>(pa[0])) != 0;
    const bool nb = std::isdigit(static_cast<unsigned char>(pb[0])) != 0;
    if (na && nb) {
      // As numbers: leading zeros dropped, then the longer is greater.
      const std::string_view ta = pa.substr(std::min(pa.find_first_not_of('0'), pa.size()));
      const std::string_view tb = pb.substr(std::min(pb.find_first_not_of('0'), pb.size()));
      if (ta.size() != tb.size()) return ta.size() < tb.size() ? -1 : 1;
      if (const int c = ta.compare(tb); c != 0) return c < 0 ? -1 : 1;
    } else if (const int c = pa.compare(pb); c != 0) {
      return c < 0 ? -1 : 1;
    }
  }
  if (i < a.size()) return 1;
  if (j < b.size()) return -1;
  return 0;
}

StackPair StackOf(const RunRecord& run) {
  return {std::string(TorchRelease(run.result.torch_version)), run.result.transformers_version};
}

size_t NewestStack(const std::vector<StackPair>& stacks) {
  size_t best = 0;
  for (size_t i = 1; i < stacks.size(); ++i) {
    int c = CompareVersions(stacks[i].torch_release, stacks[best].torch_release);
    if (c == 0) {
      c = CompareVersions(stacks[i].transformers_version, stacks[best].transformers_version);
    }
    if (c > 0) best = i;
  }
  return best;
}

bool StackSelection::Matches(const RunRecord& run) const {
  if (choice == Choice::kNamed) {
    return std::find(named.begin(), named.end(), run.result.stack) != named.end();
  }
  if (choice != Choice::kGiven) return true;
  if (!given.sweep_id.empty() && run.sweep_id != given.sweep_id) return false;
  if (!given.torch_version.empty()) {
    const std::string_view torch = given.torch_version.find('+') == std::string::npos
                                       ? TorchRelease(run.result.torch_version)
                                       : std::string_view(run.result.torch_version);
    if (torch != given.torch_version) return false;
  }
  return given.transformers_version.empty() ||
         run.result.transformers_version == given.transformers_version;
}

std::string StackSelection::Describe() const {
  switch (choice) {
    case Choice::kNewest:
      return "newest";
    case Choice::kAll:
      return "all";
    case Choice::kNamed:
      return fmt::format("stacks {}", fmt::join(named, ","));
    case Choice::kGiven:
      break;
  }
  return given.Describe();
}

absl::StatusOr<StackSelection> ParseStackSelection(std::string_view text) {
  StackSelection selection;
  if (text == "newest") return selection;
  if (text == "all") {
    selection.choice = StackSelection::Choice::kAll;
    return selection;
  }
  absl::StatusOr<DiffSide> side = ParseDiffSide(text);
  if (!side.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("stack {}; or newest, all", std::string(side.status().message())));
  }
  selection.choice = StackSelection::Choice::kGiven;
  selection.given = *std::move(side);
  return selection;
}

Verdict VerdictOf(TestStatus status) {
  switch (status) {
    case TestStatus::kPass:
      return Verdict::kPass;
    case TestStatus::kSkipped:
    case TestStatus::kHarnessError:
      return Verdict::kCouldNotTest;
    default:
      return Verdict::kFail;
  }
}

Verdict VerdictOf(const RunResult& result) {
  return BlamedOnModel(result) ? VerdictOf(result.status) : Verdict::kCouldNotTest;
}

std::string_view VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kPass:
      return "pass";
    case Verdict::kFail:
      return "fail";
    case Verdict::kCouldNotTest:
      return "could_not_test";
    case Verdict::kNotMeasured:
      break;
  }
  return "not_measured";
}

std::string MatrixTestLabel(std::string_view kind, std::string_view dtype, int64_t batch_size,
                            int64_t seq_len, std::string_view kind_params_json,
                            std::string_view shapes) {
  std::string label = shapes.empty() ? fmt::format("{} {}x{} {}", kind, batch_size, seq_len, dtype)
                                     : fmt::format("{} {} {}", kind, shapes, dtype);
  if (!kind_params_json.empty() && kind_params_json != "{}") {
    label += " ";
    label += kind_params_json;
  }
  return label;
}

std::string MatrixTestLabel(const TestSpec& spec) {
  return MatrixTestLabel(spec.kind, spec.dtype, spec.batch_size, spec.seq_len,
                         KindParamsToJson(spec.kind_params), spec.shapes);
}

absl::StatusOr<StackSelection> ParseNamedStacks(std::string_view text) {
  StackSelection selection;
  selection.choice = StackSelection::Choice::kNamed;
  for (size_t start = 0; start <= text.size();) {
    size_t end = std::min(text.find(',', start), text.size());
    const std::string name(text.substr(start, end - start));
    const bool ok =
        !name.empty() && name.size() <= 40 && std::all_of(name.begin(), name.end(), [](char ch) {
          return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
                 ch == '-';
        });
    if (!ok) {
      return absl::InvalidArgumentError(
          fmt::format("--stacks: '{}' is not a stack name (default, or a name stack ls lists)",
                      SanitizeForTerminal(name.substr(0, 60))));
    }
    if (std::find(selection.named.begin(), selection.named.end(), name) != selection.named.end()) {
      return absl::InvalidArgumentError(fmt::format("--stacks: {} given twice", name));
    }
    selection.named.push_back(name);
    start = end + 1;
  }
  if (selection.named.size() > kMaxNamedStacks) {
    return absl::InvalidArgumentError(
        fmt::format("--stacks: at most {} stacks side by side", kMaxNamedStacks));
  }
  return selection;
}

bool MatrixColumnBefore(const MatrixColumn& a, const MatrixColumn& b) {
  const bool a_eager = a.mode == kModeEager;
  const bool b_eager = b.mode == kModeEager;
  return std::tie(a.target, b_eager, a.mode, a.ranks, a.dynamic) <
         std::tie(b.target, a_eager, b.mode, b.ranks, b.dynamic);
}

std::string Matrix::DescribeStack() const {
  switch (selection.choice) {
    case StackSelection::Choice::kNewest:
      if (!newest) return "no stack";
      return fmt::format("torch {}, transformers {} (newest of {} stack{})", newest->torch_release,
                         newest->transformers_version, stacks, stacks == 1 ? "" : "s");
    case StackSelection::Choice::kAll:
      return fmt::format("all stacks ({})", stacks);
    case StackSelection::Choice::kNamed:
      return fmt::format("stacks {} side by side (changes from {} by diff's rule)",
                         fmt::join(selection.named, ", "), selection.named.front());
    case StackSelection::Choice::kGiven:
      break;
  }
  return selection.given.Describe();
}

Matrix BuildMatrix(std::vector<RunRecord> runs, const StackSelection& selection,
                   const std::vector<MatrixColumn>& columns) {
  Matrix matrix;
  matrix.selection = selection;
  std::erase_if(runs, [&selection](const RunRecord& run) {
    return run.spec.IsHarness() || !selection.Matches(run);
  });
  std::vector<StackPair> stacks;
  for (const RunRecord& run : runs) {
    StackPair stack = StackOf(run);
    if (std::find(stacks.begin(), stacks.end(), stack) == stacks.end()) {
      stacks.push_back(std::move(stack));
    }
  }
  matrix.stacks = static_cast<int64_t>(stacks.size());
  if (selection.choice == StackSelection::Choice::kNewest && !stacks.empty()) {
    const StackPair newest = stacks[NewestStack(stacks)];
    std::erase_if(runs, [&newest](const RunRecord& run) { return !(StackOf(run) == newest); });
    matrix.newest = newest;
  }
  const size_t selected = runs.size();
  const bool named = selection.choice == StackSelection::Choice::kNamed;
  matrix.runs =
      named
          ? CurrentPerKey(std::move(runs), [](const RunRecord& run) { return NamedCellKey(run); })
          : CurrentPerKey(std::move(runs), [](const RunRecord& run) { return MatrixCellKey(run); });
  matrix.current = static_cast<int64_t>(matrix.runs.size());
  matrix.superseded = static_cast<int64_t>(selected) - matrix.current;

  matrix.columns = columns;
  for (const RunRecord& run : matrix.runs) {
    MatrixColumn column{run.spec.target, run.spec.mode, named ? run.result.stack : "",
                        run.spec.ranks, run.spec.dynamic};
    if (std::find(matrix.columns.begin(), matrix.columns.end(), column) == matrix.columns.end()) {
      matrix.columns.push_back(std::move(column));
    }
  }
  std::sort(matrix.columns.begin(), matrix.columns.end(),
            [&selection](const MatrixColumn& a, const MatrixColumn& b) {
              if (MatrixColumnBefore(a, b)) return true;
              if (MatrixColumnBefore(b, a)) return false;
              return StackIndex(selection, a.stack) < StackIndex(selection, b.stack);
            });
  // Runs come sorted by cell key: a row's runs are adjacent, rows by model_id.
  std::map<std::pair<std::string, std::string>, size_t> row_of;  // (model_id, test) -> row
  std::vector<const RunRecord*> param_source;  // the newest run with param_count, by row
  for (size_t i = 0; i < matrix.runs.size(); ++i) {
    const RunRecord& run = matrix.runs[i];
    const std::string test = MatrixTestLabel(run.spec);
    auto [it, added] = row_of.try_emplace({run.spec.model_id, test}, matrix.rows.size());
    if (added) {
      MatrixRow& row = matrix.rows.emplace_back();
      row.model_id = run.spec.model_id;
      row.model_type = run.spec.model_type;
      row.name = MatrixModelName(run.spec);
      row.size = MatrixModelSize(run.spec);
      row.test = test;
      row.cells.assign(matrix.columns.size(), -1);
      param_source.push_back(nullptr);
    }
    MatrixRow& row = matrix.rows[it->second];
    const MatrixColumn column{run.spec.target, run.spec.mode, named ? run.result.stack : "",
                              run.spec.ranks, run.spec.dynamic};
    const size_t c =
        std::find(matrix.columns.begin(), matrix.columns.end(), column) - matrix.columns.begin();
    row.cells[c] = static_cast<int>(i);
    const RunRecord*& source = param_source[it->second];
    if (run.result.param_count && (source == nullptr || IsNewerRun(run, *source))) {
      source = &run;
      row.param_count = run.result.param_count;
    }
  }
  std::sort(matrix.rows.begin(), matrix.rows.end(), [](const MatrixRow& a, const MatrixRow& b) {
    return std::tie(a.model_id, a.test) < std::tie(b.model_id, b.test);
  });
  if (named) MarkStackChanges(matrix);
  return matrix;
}

std::string FormatMatrixTable(const Matrix& matrix) {
  std::string text = fmt::format("stack: {}; {} rows, {} current runs, {} superseded\n",
                                 SanitizeForTerminal(matrix.DescribeStack()), matrix.rows.size(),
                                 matrix.current, matrix.superseded);
  if (matrix.rows.empty()) return text + "no runs\n";
  using C = TextTable::Column;
  std::vector<C> header = {C{"model", TextTable::kLeft}, C{"params", TextTable::kRight},
                           C{"size", TextTable::kLeft}, C{"test", TextTable::kLeft}};
  for (const MatrixColumn& column : matrix.columns) {
    header.push_back(C{ColumnName(column), TextTable::kLeft});
  }
  TextTable table(std::move(header));
  std::vector<std::string> errors;
  std::vector<std::string> changed;
  std::vector<const RunRecord*> shown;
  for (const MatrixRow& row : matrix.rows) {
    std::vector<std::string> cells = {Truncate(row.name, 40),
                                      row.param_count ? fmt::format("{}", *row.param_count) : "-",
                                      row.size.empty() ? "-" : row.size, Truncate(row.test, 40)};
    for (size_t c = 0; c < matrix.columns.size(); ++c) {
      if (row.cells[c] < 0) {
        cells.push_back("-");
        continue;
      }
      const RunRecord& run = matrix.runs[static_cast<size_t>(row.cells[c])];
      const bool moved = !row.changes.empty() && !row.changes[c].empty();
      cells.push_back((moved ? "* " : "") + MatrixCellText(run));
      if (moved) {
        for (const StackChange& change : row.changes[c]) {
          changed.push_back(fmt::format("  {} {}: {}: {} [{}]", Truncate(row.name, 40),
                                        ColumnName(matrix.columns[c]), change.kind, change.detail,
                                        change.rule));
        }
      }
      if (run.result.status == TestStatus::kPass) shown.push_back(&run);
      if (run.result.status != TestStatus::kPass && !run.result.error_message.empty()) {
        errors.push_back(
            fmt::format("  {} {} {}: {}", Truncate(row.name, 40), ColumnName(matrix.columns[c]),
                        StatusWithDetail(run.result),
                        Truncate(FirstLine(run.result.error_message), kMatrixErrorWidth)));
      }
    }
    table.AddRow(std::move(cells));
  }
  text += table.Render();
  if (const std::string note = NoisyFootnote(shown, &NoisyRunLabel); !note.empty()) {
    text += "\n" + note;
  }
  if (!changed.empty()) {
    text += fmt::format(
        "\n* changed from {} (diff's rule; doc/matrix.md, \"Stacks side by "
        "side\"):\n",
        matrix.selection.named.front());
    for (const std::string& line : changed) text += SanitizeForTerminal(line) + "\n";
  }
  if (!errors.empty()) {
    text += "\nerrors (the full text: compatlab query --format json, by run_id):\n";
    for (const std::string& line : errors) text += SanitizeForTerminal(line) + "\n";
  }
  return text;
}

ordered_json MatrixJson(const Matrix& matrix, size_t max_error_chars) {
  ordered_json columns = ordered_json::array();
  for (const MatrixColumn& column : matrix.columns) {
    ordered_json one = {{"target", column.target},
                        {"mode", column.mode},
                        {"ranks", column.ranks},
                        {"dynamic", column.dynamic}};
    if (!column.stack.empty()) one["stack"] = column.stack;
    columns.push_back(std::move(one));
  }
  ordered_json rows = ordered_json::array();
  for (const MatrixRow& row : matrix.rows) {
    ordered_json cells = ordered_json::array();
    for (size_t c = 0; c < row.cells.size(); ++c) {
      ordered_json cell = MatrixCellJson(matrix, row.cells[c], max_error_chars);
      if (!row.changes.empty()) cell["changes"] = ChangesJson(row.changes[c]);
      cells.push_back(std::move(cell));
    }
    rows.push_back({{"model_id", row.model_id},
                    {"model_type", row.model_type},
                    {"name", row.name},
                    {"size", row.size},
                    {"param_count", OptionalJson(row.param_count)},
                    {"test", row.test},
                    {"cells", std::move(cells)}});
  }
  return {{"stack", StackJson(matrix)},
          {"columns", std::move(columns)},
          {"rows", std::move(rows)},
          {"current", matrix.current},
          {"superseded", matrix.superseded}};
}

std::string FormatMatrixJson(const Matrix& matrix) {
  return MatrixJson(matrix).dump(2, ' ', false, ordered_json::error_handler_t::replace) + "\n";
}

std::string FormatMatrixCsv(const Matrix& matrix) {
  const char* const kHeader[] = {"model_id",     "name",          "size",
                                 "param_count",  "test",          "target",
                                 "mode",         "ranks",         "dynamic",
                                 "verdict",      "status",        "run_id",
                                 "finished_at",  "torch_version", "transformers_version",
                                 "stack",        "prepare_s",     "steady_median_s",
                                 "noisy",        "fallback_ops",  "changed",
                                 "error_message"};
  const size_t kStackField =
      std::find_if(std::begin(kHeader), std::end(kHeader),
                   [](const char* name) { return std::string_view(name) == "stack"; }) -
      std::begin(kHeader);
  auto line = [](const std::vector<std::string>& fields) {
    std::string out;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (i > 0) out += ",";
      out += CsvField(ToValidUtf8(fields[i]));
    }
    return out + "\r\n";
  };
  auto number = [](const auto& v) { return v ? fmt::format("{}", *v) : std::string(); };
  std::string text = line(std::vector<std::string>(std::begin(kHeader), std::end(kHeader)));
  for (const MatrixRow& row : matrix.rows) {
    for (size_t c = 0; c < matrix.columns.size(); ++c) {
      std::vector<std::string> fields = {row.model_id,
                                         row.name,
                                         row.size,
                                         number(row.param_count),
                                         row.test,
                                         matrix.columns[c].target,
                                         matrix.columns[c].mode,
                                         std::to_string(matrix.columns[c].ranks),
                                         matrix.columns[c].dynamic};
      if (row.cells[c] < 0) {
        fields.push_back(std::string(VerdictName(Verdict::kNotMeasured)));
        fields.resize(std::size(kHeader));
        fields[kStackField] = matrix.columns[c].stack;  // a named stack's empty cell says whose
      } else {
        const RunRecord& run = matrix.runs[static_cast<size_t>(row.cells[c])];
        const RunResult& r = run.result;
        fields.insert(
            fields.end(),
            {std::string(VerdictName(VerdictOf(r))), std::string(TestStatusName(r.status)),
             run.run_id, run.finished_at, r.torch_version, r.transformers_version, r.stack,
             number(r.prepare_s), number(r.steady_median_s), AnyNoisy(r) ? "1" : "0",
             number(FallbackOpCount(r)), row.changes.empty() ? "" : ChangeKinds(row.changes[c]),
             r.error_message});
      }
      text += line(fields);
    }
  }
  return text;
}

absl::StatusOr<std::string> ShowMatrix(const MatrixOptions& options) {
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options.db, OpenMode::kReadOnly);
  if (!store.ok()) return Recode(store.status(), absl::StatusCode::kFailedPrecondition);
  RunFilter filter = options.filter;
  filter.sort.clear();
  filter.limit = 0;
  const DiffSide& given = options.selection.given;
  for (const std::string* sweep :
       {static_cast<const std::string*>(&filter.sweep_id), &given.sweep_id}) {
    if (sweep->empty()) continue;
    if (absl::Status s = (*store)->GetSweep(*sweep).status(); !s.ok()) {
      return Recode(s, absl::StatusCode::kInvalidArgument);
    }
  }
  absl::StatusOr<std::vector<RunRecord>> runs = (*store)->QueryRuns(filter);
  if (!runs.ok()) return Recode(runs.status(), absl::StatusCode::kInternal);
  const Matrix matrix = BuildMatrix(*std::move(runs), options.selection);
  switch (options.format) {
    case RunsFormat::kJson:
      return FormatMatrixJson(matrix);
    case RunsFormat::kCsv:
      return FormatMatrixCsv(matrix);
    case RunsFormat::kTable:
      break;
  }
  return FormatMatrixTable(matrix);
}

}  // namespace compatlab
