#include "server/run_index.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <new>
#include <tuple>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/blame.h"
#include "plan/hub.h"
#include "query/errors_report.h"
#include "store/schema.h"

namespace compatlab {
namespace {

constexpr float kNull = std::numeric_limits<float>::quiet_NaN();

// The columns the index reads, after model_id, model_type and seq_len.
const char* const kColumnFields[] = {"sweep_id", "target", "mode",          "kind",
                                     "status",   "dtype",  "torch_version", "transformers_version"};

std::string Text(const FieldValue& value) {
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  return "";
}

float Number(const FieldValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) return static_cast<float>(*i);
  if (const auto* d = std::get_if<double>(&value)) return static_cast<float>(*d);
  return kNull;
}

// The digits of a stored timestamp ("2026-12-01T11:07:51.350Z") as one
// number, 17 digits (padded with zeros): ordered as the text of that format.
int64_t TimestampDigits(const std::string& text) {
  int64_t value = 0;
  int digits = 0;
  for (char c : text) {
    if (c < '0' || c > '9') continue;
    if (digits == 17) break;
    value = value * 10 + (c - '0');
    ++digits;
  }
  for (; digits < 17; ++digits) value *= 10;
  return value;
}

int64_t IntOr(const FieldValue& value, int64_t fallback) {
  if (const auto* i = std::get_if<int64_t>(&value)) return *i;
  return fallback;
}

// The matrix row label of a run read by Refresh (`v`: seq_len at 2, then from `first_matrix`
// batch_size, kind_params, finished_at, dtype, kind, model_path, blame, shapes, dynamic,
// ranks): the CLI's (query/matrix.h, MatrixTestLabel); a dynamic test's shapes name its row
// and its setting its column, as in `compatlab matrix` (doc/matrix.md).
std::string IndexRowLabel(const std::vector<FieldValue>& v, size_t first_matrix) {
  return MatrixTestLabel(Text(v[first_matrix + 4]), Text(v[first_matrix + 3]),
                         IntOr(v[first_matrix], 0), IntOr(v[2], 0), Text(v[first_matrix + 1]),
                         Text(v[first_matrix + 7]));
}

// Nearest-rank percentile of `values` (reordered), in linear time.
double Percentile(std::vector<double>& values, double p) {
  if (values.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(values.size())));
  auto nth = values.begin() + (std::clamp<size_t>(rank, 1, values.size()) - 1);
  std::nth_element(values.begin(), nth, values.end());
  return *nth;
}

// The distribution of `values`; the geometric mean only when `geomean`
// (it costs a logarithm a value, and only ratios like speedup need it).
MetricStats Stats(std::vector<double> values, bool geomean) {
  MetricStats stats;
  stats.count = static_cast<int64_t>(values.size());
  if (values.empty()) return stats;
  stats.max = *std::max_element(values.begin(), values.end());
  stats.p50 = Percentile(values, 0.5);
  stats.p90 = Percentile(values, 0.9);
  if (!geomean) return stats;
  double log_sum = 0;
  int64_t positive = 0;
  for (double v : values) {
    if (v > 0) {
      log_sum += std::log(v);
      ++positive;
    }
  }
  if (positive > 0) stats.geomean = std::exp(log_sum / static_cast<double>(positive));
  return stats;
}

// Which torch and transformers ids (by id: 1 = taken) a stack selection of
// `release` (a torch release, or a whole version when it holds '+') and
// `version` (transformers) takes; an empty one takes every id.
void TakeStacks(const std::vector<std::string>& torch, const std::vector<std::string>& transformers,
                const std::string& release, const std::string& version,
                std::vector<uint8_t>& torch_ok, std::vector<uint8_t>& transformers_ok) {
  const bool exact = release.find('+') != std::string::npos;
  for (size_t t = 0; t < torch.size(); ++t) {
    torch_ok[t] =
        release.empty() || (exact ? torch[t] == release : TorchRelease(torch[t]) == release);
  }
  for (size_t t = 0; t < transformers.size(); ++t) {
    transformers_ok[t] = version.empty() || transformers[t] == version;
  }
}

}  // namespace

const std::vector<std::string>& RunIndex::WantedMetrics() {
  static const std::vector<std::string> kMetrics = {
      "prepare_s",         "steady_median_s", "wall_s",         "host_peak_rss_bytes",
      "device_peak_bytes", "speedup",         "warm_prepare_s", "tokens_per_s"};
  return kMetrics;
}

uint32_t RunIndex::Dict::Intern(const std::string& value) {
  auto [it, added] = ids.emplace(value, static_cast<uint32_t>(values.size()));
  if (added) values.push_back(value);
  return it->second;
}

uint32_t RunIndex::Dict::Find(const std::string& value) const {
  auto it = ids.find(value);
  return it == ids.end() ? kNone : it->second;
}

RunIndex::RunIndex() {
  for (const std::string& name : WantedMetrics()) {
    if (FindResultField(name) != nullptr) metric_names_.push_back(name);
  }
}

absl::Status RunIndex::Refresh(Store& store) {
  std::lock_guard refresh_lock(refresh_mu_);  // one refresher at a time
  std::vector<std::string> fields = {"model_id", "model_type", "seq_len"};
  for (const char* f : kColumnFields) fields.push_back(f);
  for (const std::string& m : metric_names_) fields.push_back(m);
  const size_t first_metric = 3 + kColumns;
  const size_t first_matrix = first_metric + metric_names_.size();
  for (const char* f : {"batch_size", "kind_params", "finished_at", "dtype", "kind", "model_path",
                        "blame", "shapes", "dynamic", "ranks"}) {
    fields.push_back(f);
  }
  // New rows are collected apart, then appended under the exclusive lock.
  struct NewRow {
    int64_t rowid;
    std::vector<FieldValue> values;
  };
  std::vector<NewRow> fresh;
  absl::Status status =
      store.ScanFields(fields, last_rowid_, [&](int64_t rowid, std::vector<FieldValue>& values) {
        fresh.push_back({rowid, values});
      });
  if (!status.ok()) return status;
  if (fresh.empty()) return absl::OkStatus();
  std::unique_lock lock(mu_);
  rows_.reserve(rows_.size() + fresh.size());
  row_models_.reserve(rows_.size() + fresh.size());
  row_roles_.reserve(rows_.size() + fresh.size());
  for (std::vector<uint32_t>& column : row_columns_) column.reserve(rows_.size() + fresh.size());
  metric_values_.reserve((rows_.size() + fresh.size()) * metric_names_.size());
  for (const NewRow& n : fresh) {
    Row row{};
    row.rowid = n.rowid;
    const std::string model_id = Text(n.values[0]);
    const uint32_t model = models_.Intern(model_id);
    if (model == model_types_.size()) {
      const std::string model_type = Text(n.values[1]);
      model_types_.push_back(model_type);
      // A checkpoint is found by its directory's name too (ckpt: ids are content hashes).
      const std::string path = Text(n.values[first_matrix + 5]);
      const std::string dir_name =
          path.empty() ? "" : std::filesystem::path(path).filename().string();
      model_search_.push_back(
          absl::AsciiStrToLower(absl::StrCat(model_id, "\n", model_type, "\n", dir_name)));
      model_rows_.emplace_back();
    }
    const auto* seq = std::get_if<int64_t>(&n.values[2]);
    row.seq_len =
        seq == nullptr ? 0 : static_cast<uint32_t>(std::clamp<int64_t>(*seq, 0, UINT32_MAX));
    uint32_t col[kColumns];
    for (int c = 0; c < kColumns; ++c) col[c] = dicts_[c].Intern(Text(n.values[3 + c]));
    const std::vector<FieldValue>& v = n.values;
    row.label = labels_.Intern(IndexRowLabel(v, first_matrix));
    row.finished = TimestampDigits(Text(v[first_matrix + 2]));
    const uint64_t matrix_key = (uint64_t{model} << 32) | row.label;
    auto [matrix_row, added] =
        matrix_row_ids_.try_emplace(matrix_key, static_cast<uint32_t>(matrix_rows_.size()));
    if (added) {
      matrix_rows_.emplace_back(model, row.label);
      matrix_row_cells_.emplace_back();
      model_matrix_rows_.resize(models_.values.size());
      model_matrix_rows_[model].push_back(matrix_row->second);
    }
    row.matrix_row = matrix_row->second;
    const IndexColumn column_key{col[kTarget], col[kMode], IntOr(v[first_matrix + 9], 1),
                                 labels_.Intern(Text(v[first_matrix + 8]))};
    auto known = std::find(matrix_columns_.begin(), matrix_columns_.end(), column_key);
    const auto column = static_cast<uint32_t>(known - matrix_columns_.begin());
    if (known == matrix_columns_.end()) matrix_columns_.push_back(column_key);
    std::vector<uint32_t>& row_cells = matrix_row_cells_[row.matrix_row];
    auto cell = std::find_if(row_cells.begin(), row_cells.end(),
                             [&](uint32_t id) { return matrix_cell_column_[id] == column; });
    if (cell == row_cells.end()) {
      row.matrix_cell = static_cast<uint32_t>(matrix_cell_column_.size());
      matrix_cell_column_.push_back(column);
      cell_first_summary_.push_back(kNone);
      row_cells.push_back(row.matrix_cell);
    } else {
      row.matrix_cell = *cell;
    }
    model_rows_[model].push_back(static_cast<uint32_t>(rows_.size()));
    const std::pair<uint32_t, uint32_t> stack{col[kTorch], col[kTransformers]};
    const auto stack_index = static_cast<uint32_t>(
        std::find(stack_ids_.begin(), stack_ids_.end(), stack) - stack_ids_.begin());
    if (stack_index == stack_ids_.size()) stack_ids_.push_back(stack);
    // The run joins its cell's summary for its stack, kind and dtype.
    const auto position = static_cast<uint32_t>(rows_.size());
    uint32_t s = cell_first_summary_[row.matrix_cell];
    while (s != kNone &&
           (cell_summaries_[s].stack != stack_index || cell_summaries_[s].kind != col[kKind] ||
            cell_summaries_[s].dtype != col[kDtype])) {
      s = cell_summaries_[s].next;
    }
    if (s == kNone) {
      s = static_cast<uint32_t>(cell_summaries_.size());
      cell_summaries_.push_back({row.finished, position, 0, 0, stack_index, col[kKind], col[kDtype],
                                 cell_first_summary_[row.matrix_cell]});
      cell_first_summary_[row.matrix_cell] = s;
    } else if (CellSummary& summary = cell_summaries_[s]; row.finished > summary.latest) {
      summary.latest = row.finished;
      summary.latest_position = position;
      summary.ties = 0;
    } else if (row.finished == summary.latest) {
      summary.latest_position = position;
      ++summary.ties;
    }
    ++cell_summaries_[s].runs;
    rows_.push_back(row);
    row_models_.push_back(model);
    const std::string blame = Text(n.values[first_matrix + 6]);
    absl::StatusOr<TestStatus> status = ParseTestStatus(dicts_[kStatus].values[col[kStatus]]);
    // A status this build does not know is the model's run: it is not a skip.
    row_roles_.push_back(PassRateRoleOf(status.ok() ? *status : TestStatus::kHarnessError, blame));
    for (int c = 0; c < kColumns; ++c) {
      row_columns_[c].push_back(col[c]);
      if (postings_[c].size() <= col[c]) postings_[c].resize(col[c] + 1);
      postings_[c][col[c]].push_back(static_cast<uint32_t>(rows_.size() - 1));
    }
    for (size_t m = 0; m < metric_names_.size(); ++m) {
      metric_values_.push_back(Number(n.values[first_metric + m]));
    }
  }
  last_rowid_ = fresh.back().rowid;
  return absl::OkStatus();
}

std::shared_ptr<const std::vector<uint8_t>> RunIndex::MatchModels(
    const std::string& substring) const {
  const std::string needle = absl::AsciiStrToLower(substring);
  {
    std::lock_guard lock(cache_mu_);
    if (model_cache_models_ != model_search_.size()) {
      model_cache_.clear();
      model_cache_models_ = model_search_.size();
    }
    if (auto it = model_cache_.find(needle); it != model_cache_.end()) return it->second;
  }
  auto match = std::make_shared<std::vector<uint8_t>>(model_search_.size(), 0);
  // "model_id\nmodel_type": a needle without '\n' is found in one of them.
  const bool searchable = needle.find('\n') == std::string::npos;
  for (size_t m = 0; m < model_search_.size(); ++m) {
    (*match)[m] = searchable && model_search_[m].find(needle) != std::string::npos;
  }
  std::lock_guard lock(cache_mu_);
  constexpr size_t kMaxCached = 4096;
  if (model_cache_.size() >= kMaxCached) model_cache_.clear();
  model_cache_.emplace(needle, match);
  return match;
}

RunIndex::Resolved RunIndex::Resolve(const IndexQuery& query) const {
  Resolved r;
  const RunFilter& f = query.filter;
  const std::string status = f.status ? std::string(TestStatusName(*f.status)) : "";
  const std::string* wanted[kColumns] = {
      &f.sweep_id, &f.target, &f.mode,          &f.kind,
      &status,     &f.dtype,  &f.torch_version, &f.transformers_version};
  for (int c = 0; c < kColumns; ++c) {
    r.want[c] = kNone;
    if (wanted[c]->empty()) continue;
    r.want[c] = dicts_[c].Find(*wanted[c]);
    if (r.want[c] == kNone) r.empty = true;
    r.columns[r.active++] = c;
  }
  if (!query.model_id.empty()) {
    const uint32_t id = models_.Find(query.model_id);
    if (id == kNone) {
      r.empty = true;
    } else {
      auto only = std::make_shared<std::vector<uint8_t>>(models_.values.size(), 0);
      (*only)[id] = 1;
      r.models = only;
    }
  }
  if (!f.model.empty() && !r.empty) {
    auto sub = MatchModels(f.model);
    if (r.models) {
      auto both = std::make_shared<std::vector<uint8_t>>(*r.models);
      for (size_t m = 0; m < both->size(); ++m) (*both)[m] &= (*sub)[m];
      r.models = both;
    } else {
      r.models = sub;
    }
  }
  r.failures_only = query.failures_only;
  if (r.failures_only) {
    const Dict& statuses = dicts_[kStatus];
    r.failure_status.assign(statuses.values.size(), 0);
    for (size_t s = 0; s < statuses.values.size(); ++s) {
      absl::StatusOr<TestStatus> parsed = ParseTestStatus(statuses.values[s]);
      r.failure_status[s] = parsed.ok() && IsFailureStatus(*parsed);
    }
  }
  return r;
}

RunIndex::Matcher RunIndex::MatcherFor(const Resolved& resolved) const {
  Matcher m;
  m.active = resolved.active;
  for (int i = 0; i < resolved.active; ++i) {
    m.columns[i] = row_columns_[resolved.columns[i]].data();
    m.want[i] = resolved.want[resolved.columns[i]];
  }
  m.models = resolved.models ? resolved.models->data() : nullptr;
  m.model_of = row_models_.data();
  m.failure = resolved.failures_only ? resolved.failure_status.data() : nullptr;
  m.status_of = row_columns_[kStatus].data();
  return m;
}

template <typename Visit>
WalkKind RunIndex::Walk(const Resolved& resolved, int64_t before_rowid, Visit visit) const {
  if (resolved.empty || rows_.empty()) return WalkKind::kNone;
  const Matcher matches = MatcherFor(resolved);
  // The first position to look at: the newest row older than the cursor.
  size_t end = rows_.size();
  if (before_rowid > 0) {
    end = std::lower_bound(rows_.begin(), rows_.end(), before_rowid,
                           [](const Row& row, int64_t id) { return row.rowid < id; }) -
          rows_.begin();
  }
  // What each route costs, in row visits weighted by what a visit costs: a
  // plain scan reads the filtered columns of every row in order (1); a
  // posting list reads its positions in order and the other columns at those
  // positions (2); the model merge keeps a heap of one cursor per matching
  // model (about 2 log2 of their count, plus finding each model's cursor).
  const double scan_cost = static_cast<double>(end);
  const std::vector<uint32_t>* posting = nullptr;
  size_t posting_below = 0;
  double posting_cost = scan_cost + 1;
  for (int i = 0; i < resolved.active; ++i) {
    const int c = resolved.columns[i];
    const std::vector<uint32_t>& list = postings_[c][resolved.want[c]];
    const size_t below = std::lower_bound(list.begin(), list.end(), end) - list.begin();
    if (2.0 * static_cast<double>(below) < posting_cost) {
      posting = &list;
      posting_below = below;
      posting_cost = 2.0 * static_cast<double>(below);
    }
  }
  size_t model_rows = 0, model_count = 0;
  if (resolved.models) {
    for (size_t m = 0; m < resolved.models->size(); ++m) {
      if ((*resolved.models)[m]) {
        model_rows += model_rows_[m].size();
        ++model_count;
      }
    }
  }
  const double log_models = std::log2(static_cast<double>(model_count) + 2);
  const double models_cost = resolved.models ? 2 * log_models * static_cast<double>(model_rows) +
                                                   log_models * static_cast<double>(model_count)
                                             : scan_cost + 1;
  if (posting != nullptr && posting_cost <= models_cost && posting_cost < scan_cost) {
    for (size_t i = posting_below; i-- > 0;) {
      const size_t p = (*posting)[i];
      if (matches(p) && !visit(p)) break;
    }
    return WalkKind::kPostings;
  }
  // Matching models that hold a small share of the rows: merge their rows
  // newest first with a heap of one cursor per model (each model's positions
  // ascend), so that a walk that stops early costs what it visits.
  if (models_cost < scan_cost) {
    struct Cursor {
      uint32_t position;
      uint32_t model;
      uint32_t index;  // of `position` in model_rows_[model]
      bool operator<(const Cursor& other) const { return position < other.position; }
    };
    std::vector<Cursor> heap;
    heap.reserve(model_count);
    for (size_t m = 0; m < resolved.models->size(); ++m) {
      if (!(*resolved.models)[m]) continue;
      const std::vector<uint32_t>& rows = model_rows_[m];
      const size_t below = std::lower_bound(rows.begin(), rows.end(), end) - rows.begin();
      if (below > 0) {
        heap.push_back(
            {rows[below - 1], static_cast<uint32_t>(m), static_cast<uint32_t>(below - 1)});
      }
    }
    std::make_heap(heap.begin(), heap.end());
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end());
      Cursor& c = heap.back();
      if (matches(c.position) && !visit(c.position)) break;
      if (c.index == 0) {
        heap.pop_back();
      } else {
        --c.index;
        c.position = model_rows_[c.model][c.index];
        std::push_heap(heap.begin(), heap.end());
      }
    }
    return WalkKind::kModels;
  }
  for (size_t p = end; p-- > 0;) {
    if (matches(p) && !visit(p)) break;
  }
  return WalkKind::kScan;
}

IndexPage RunIndex::Search(const IndexQuery& query) const {
  std::shared_lock lock(mu_);
  IndexPage page;
  const Resolved resolved = Resolve(query);
  const size_t cap = std::max(query.count_cap, query.limit);
  size_t seen = 0;
  page.walk = Walk(resolved, query.before_rowid, [&](size_t p) {
    ++seen;
    if (page.rowids.size() < query.limit) {
      page.rowids.push_back(rows_[p].rowid);
    } else {
      page.has_more = true;
    }
    return seen <= cap;
  });
  page.total_capped = seen > cap;
  page.total = static_cast<int64_t>(std::min(seen, cap));
  return page;
}

std::vector<int64_t> RunIndex::ModelRuns(const std::string& model_id, size_t limit,
                                         bool* truncated) const {
  std::shared_lock lock(mu_);
  std::vector<int64_t> rowids;
  *truncated = false;
  std::vector<uint32_t> positions;
  if (IsHubId(model_id) && model_id.find('@') == std::string::npos) {
    // hub:ORG/NAME: the runs of every commit, one group.
    for (size_t m = 0; m < models_.values.size(); ++m) {
      if (HubIdMatches(model_id, models_.values[m])) {
        positions.insert(positions.end(), model_rows_[m].begin(), model_rows_[m].end());
      }
    }
    std::sort(positions.begin(), positions.end());
  } else if (const uint32_t id = models_.Find(model_id); id != kNone) {
    positions = model_rows_[id];
  }
  for (auto it = positions.rbegin(); it != positions.rend(); ++it) {
    if (rowids.size() == limit) {
      *truncated = true;
      break;
    }
    rowids.push_back(rows_[*it].rowid);
  }
  return rowids;
}

std::vector<std::pair<std::string, int64_t>> RunIndex::ModelCounts(
    const std::string& substring) const {
  std::vector<std::pair<std::string, int64_t>> out;
  if (substring.empty()) return out;
  std::shared_lock lock(mu_);
  std::shared_ptr<const std::vector<uint8_t>> match = MatchModels(substring);
  for (size_t m = 0; m < match->size(); ++m) {
    if ((*match)[m]) {
      out.emplace_back(models_.values[m], static_cast<int64_t>(model_rows_[m].size()));
    }
  }
  return out;
}

std::string RunIndex::ModelType(const std::string& model_id) const {
  std::shared_lock lock(mu_);
  const uint32_t id = models_.Find(model_id);
  return id == kNone ? "" : model_types_[id];
}

Summary RunIndex::Summarize(const IndexQuery& query, size_t max_points) const {
  std::shared_lock lock(mu_);
  Summary summary;
  const Resolved resolved = Resolve(query);
  const size_t n_metrics = metric_names_.size();
  const uint32_t pass = dicts_[kStatus].Find("pass");
  // Per group: counts and the passing runs' metric values. Groups are found
  // by their ids packed in a hashed key (a summary walks every matching row).
  struct Acc {
    int64_t runs = 0;
    int64_t not_model = 0;
    int64_t skipped = 0;
    std::vector<int64_t> statuses;  // by status id
    std::vector<std::vector<double>> values;
  };
  using Key = std::array<uint32_t, 4>;
  struct KeyHash {
    size_t operator()(const Key& k) const {
      uint64_t h = 1469598103934665603ull;
      for (uint32_t v : k) h = (h ^ v) * 1099511628211ull;
      return static_cast<size_t>(h);
    }
  };
  using Groups = std::unordered_map<Key, Acc, KeyHash>;
  Groups by_stack, by_target, by_seq;
  std::vector<size_t> passing;
  const size_t n_statuses = dicts_[kStatus].values.size();
  auto add = [&](Acc& acc, size_t p) {
    ++acc.runs;
    acc.statuses.resize(n_statuses);
    ++acc.statuses[ColumnAt(kStatus, p)];
    acc.not_model += row_roles_[p] == PassRateRole::kNotModel ? 1 : 0;
    acc.skipped += row_roles_[p] == PassRateRole::kSkipped ? 1 : 0;
    if (ColumnAt(kStatus, p) != pass) return;
    acc.values.resize(n_metrics);
    for (size_t m = 0; m < n_metrics; ++m) {
      const float v = metric_values_[p * n_metrics + m];
      if (!std::isnan(v)) acc.values[m].push_back(v);
    }
  };
  Walk(resolved, 0, [&](size_t p) {
    ++summary.runs;
    const uint32_t target = ColumnAt(kTarget, p), mode = ColumnAt(kMode, p);
    const uint32_t torch = ColumnAt(kTorch, p);
    add(by_stack[{torch, ColumnAt(kTransformers, p), 0, 0}], p);
    add(by_target[{target, mode, torch, 0}], p);
    add(by_seq[{target, mode, ColumnAt(kKind, p), rows_[p].seq_len}], p);
    if (ColumnAt(kStatus, p) == pass) passing.push_back(p);
    return true;
  });
  auto finish = [&](const Acc& acc, std::map<std::string, std::string> key) {
    SummaryGroup group;
    group.key = std::move(key);
    group.runs = acc.runs;
    group.not_model = acc.not_model;
    group.skipped = acc.skipped;
    for (size_t status = 0; status < acc.statuses.size(); ++status) {
      if (acc.statuses[status] > 0)
        group.statuses[dicts_[kStatus].values[status]] = acc.statuses[status];
    }
    for (size_t m = 0; m < acc.values.size(); ++m) {
      group.passing[metric_names_[m]] = Stats(acc.values[m], metric_names_[m] == "speedup");
    }
    return group;
  };
  // Groups in the order of their key values (names, then numbers).
  auto sorted = [](std::vector<SummaryGroup> groups) {
    std::sort(groups.begin(), groups.end(),
              [](const SummaryGroup& a, const SummaryGroup& b) { return a.key < b.key; });
    return groups;
  };
  auto name = [&](int column, uint32_t id) { return dicts_[column].values[id]; };
  std::vector<SummaryGroup> groups;
  for (const auto& [k, acc] : by_stack) {
    groups.push_back(finish(acc, {{"torch_version", name(kTorch, k[0])},
                                  {"transformers_version", name(kTransformers, k[1])}}));
  }
  summary.by_stack = sorted(std::move(groups));
  groups.clear();
  for (const auto& [k, acc] : by_target) {
    groups.push_back(finish(acc, {{"target", name(kTarget, k[0])},
                                  {"mode", name(kMode, k[1])},
                                  {"torch_version", name(kTorch, k[2])}}));
  }
  summary.by_target = sorted(std::move(groups));
  groups.clear();
  for (const auto& [k, acc] : by_seq) {
    groups.push_back(finish(acc, {{"target", name(kTarget, k[0])},
                                  {"mode", name(kMode, k[1])},
                                  {"kind", name(kKind, k[2])},
                                  {"seq_len", std::to_string(k[3])}}));
  }
  summary.by_seq_len = sorted(std::move(groups));
  const size_t step = passing.size() <= max_points || max_points == 0
                          ? 1
                          : (passing.size() + max_points - 1) / max_points;
  for (size_t i = 0; i < passing.size() && max_points > 0; i += step) {
    const size_t p = passing[i];
    SummaryPoint& point = summary.points.emplace_back();
    point.rowid = rows_[p].rowid;
    point.model_id = models_.values[ModelAt(p)];
    for (size_t m = 0; m < n_metrics; ++m) {
      const float v = metric_values_[p * n_metrics + m];
      if (!std::isnan(v)) point.metrics[metric_names_[m]] = v;
    }
  }
  return summary;
}

Facets RunIndex::GetFacets() const {
  std::shared_lock lock(mu_);
  Facets facets;
  for (int c = 0; c < kColumns; ++c) {
    std::vector<std::string> values = dicts_[c].values;
    std::sort(values.begin(), values.end());
    facets.values[kColumnFields[c]] = std::move(values);
  }
  facets.runs = static_cast<int64_t>(rows_.size());
  facets.models = static_cast<int64_t>(models_.values.size());
  return facets;
}

size_t RunIndex::PositionOf(int64_t rowid) const {
  // Rowids are mostly dense from 1 (runs are never deleted): try the run's
  // place in that case first, then search.
  if (rowid >= 1 && static_cast<uint64_t>(rowid) <= rows_.size() &&
      rows_[static_cast<size_t>(rowid) - 1].rowid == rowid) {
    return static_cast<size_t>(rowid) - 1;
  }
  auto it = std::lower_bound(rows_.begin(), rows_.end(), rowid,
                             [](const Row& row, int64_t id) { return row.rowid < id; });
  return it != rows_.end() && it->rowid == rowid ? static_cast<size_t>(it - rows_.begin())
                                                 : rows_.size();
}

bool RunIndex::SameStack(size_t a, size_t b) const {
  if (ColumnAt(kTransformers, a) != ColumnAt(kTransformers, b)) return false;
  if (ColumnAt(kTorch, a) == ColumnAt(kTorch, b)) return true;
  const std::vector<std::string>& torch = dicts_[kTorch].values;
  return TorchRelease(torch[ColumnAt(kTorch, a)]) == TorchRelease(torch[ColumnAt(kTorch, b)]);
}

std::vector<bool> RunIndex::Current(const std::vector<int64_t>& rowids) const {
  std::shared_lock lock(mu_);
  std::vector<bool> current;
  current.reserve(rowids.size());
  for (int64_t rowid : rowids) {
    const size_t p = PositionOf(rowid);
    bool newest = true;
    if (p < rows_.size()) {
      const Row& row = rows_[p];
      for (uint32_t q : model_rows_[ModelAt(p)]) {
        const Row& other = rows_[q];
        // The same cell: the same model (its rows), label, target and mode.
        if (other.finished > row.finished && other.matrix_cell == row.matrix_cell &&
            SameStack(q, p)) {
          newest = false;
          break;
        }
      }
    }
    current.push_back(newest);
  }
  return current;
}

std::vector<StackPair> RunIndex::MatrixStacks(const Resolved& resolved,
                                              const std::vector<uint8_t>& torch_ok,
                                              const std::vector<uint8_t>& transformers_ok) const {
  const uint32_t harness = models_.Find(std::string(kHarnessModelId));
  const std::vector<std::string>& torch = dicts_[kTorch].values;
  const std::vector<std::string>& transformers = dicts_[kTransformers].values;
  std::vector<StackPair> stacks;
  std::vector<std::pair<uint32_t, uint32_t>> seen_ids;
  // The walk stops once it has seen every pair the index holds that the
  // selection takes (there are few: usually after a few rows).
  size_t possible = 0;
  for (const auto& [t, v] : stack_ids_) possible += torch_ok[t] && transformers_ok[v];
  Walk(resolved, 0, [&](size_t p) {
    if (ModelAt(p) == harness || !torch_ok[ColumnAt(kTorch, p)] ||
        !transformers_ok[ColumnAt(kTransformers, p)]) {
      return true;
    }
    const std::pair<uint32_t, uint32_t> ids{ColumnAt(kTorch, p), ColumnAt(kTransformers, p)};
    if (std::find(seen_ids.begin(), seen_ids.end(), ids) != seen_ids.end()) return true;
    seen_ids.push_back(ids);
    StackPair stack{std::string(TorchRelease(torch[ids.first])), transformers[ids.second]};
    if (std::find(stacks.begin(), stacks.end(), stack) == stacks.end()) {
      stacks.push_back(std::move(stack));
    }
    return seen_ids.size() < possible;
  });
  return stacks;
}

template <typename Visit>
void RunIndex::WalkMatrix(const MatrixIndexQuery& query, MatrixIndexPage& page, Visit visit) const {
  IndexQuery index_query = query.query;
  const StackSelection& selection = query.selection;
  const DiffSide& given = selection.given;
  if (selection.choice == StackSelection::Choice::kGiven && !given.sweep_id.empty()) {
    if (!index_query.filter.sweep_id.empty() && index_query.filter.sweep_id != given.sweep_id) {
      return;
    }
    index_query.filter.sweep_id = given.sweep_id;
  }
  const Resolved resolved = Resolve(index_query);
  const uint32_t harness = models_.Find(std::string(kHarnessModelId));
  // Which torch and transformers ids the selection takes (by id: 1 = taken).
  const std::vector<std::string>& torch = dicts_[kTorch].values;
  const std::vector<std::string>& transformers = dicts_[kTransformers].values;
  std::vector<uint8_t> torch_ok(torch.size(), 1), transformers_ok(transformers.size(), 1);
  auto keep_stack = [&](const std::string& release, const std::string& version) {
    TakeStacks(torch, transformers, release, version, torch_ok, transformers_ok);
  };
  if (selection.choice == StackSelection::Choice::kGiven) {
    keep_stack(given.torch_version, given.transformers_version);
  }
  auto in_selection = [&](size_t p) {
    return ModelAt(p) != harness && torch_ok[ColumnAt(kTorch, p)] &&
           transformers_ok[ColumnAt(kTransformers, p)];
  };
  // The stack pairs present (BuildMatrix counts them before choosing).
  const std::vector<StackPair> stacks = MatrixStacks(resolved, torch_ok, transformers_ok);
  page.stacks = static_cast<int64_t>(stacks.size());
  if (selection.choice == StackSelection::Choice::kNewest) {
    if (stacks.empty()) return;
    page.newest = stacks[NewestStack(stacks)];
    keep_stack(page.newest->torch_release, page.newest->transformers_version);
  }
  Walk(resolved, 0, [&](size_t p) {
    if (in_selection(p)) visit(p);
    return true;
  });
}

std::shared_ptr<const RunIndex::MatrixOrder> RunIndex::SortedMatrixRows() const {
  std::lock_guard lock(matrix_order_mu_);
  if (matrix_order_ != nullptr && matrix_order_->order.size() == matrix_rows_.size()) {
    return matrix_order_;
  }
  // Ranks of the model ids and labels by their text, then one integer sort.
  auto ranks = [](const std::vector<std::string>& values) {
    std::vector<uint32_t> by_text(values.size());
    for (uint32_t i = 0; i < by_text.size(); ++i) by_text[i] = i;
    std::sort(by_text.begin(), by_text.end(),
              [&values](uint32_t a, uint32_t b) { return values[a] < values[b]; });
    std::vector<uint32_t> rank(values.size());
    for (uint32_t r = 0; r < by_text.size(); ++r) rank[by_text[r]] = r;
    return rank;
  };
  const std::vector<uint32_t> model_rank = ranks(models_.values);
  const std::vector<uint32_t> label_rank = ranks(labels_.values);
  std::vector<std::pair<uint64_t, uint32_t>> keyed(matrix_rows_.size());
  for (uint32_t r = 0; r < keyed.size(); ++r) {
    const auto& [model, label] = matrix_rows_[r];
    keyed[r] = {(uint64_t{model_rank[model]} << 32) | label_rank[label], r};
  }
  std::sort(keyed.begin(), keyed.end());
  auto sorted = std::make_shared<MatrixOrder>();
  sorted->order.resize(keyed.size());
  sorted->rank.resize(keyed.size());
  for (uint32_t i = 0; i < keyed.size(); ++i) {
    sorted->order[i] = keyed[i].second;
    sorted->rank[keyed[i].second] = i;
  }
  matrix_order_ = std::move(sorted);
  return matrix_order_;
}

bool RunIndex::SummariesAnswer(const MatrixIndexQuery& query) {
  const RunFilter& f = query.query.filter;
  const bool given_sweep = query.selection.choice == StackSelection::Choice::kGiven &&
                           !query.selection.given.sweep_id.empty();
  return f.sweep_id.empty() && !f.status.has_value() && !query.query.failures_only && !given_sweep;
}

MatrixIndexPage RunIndex::MatrixPage(const MatrixIndexQuery& query) const {
  std::shared_lock lock(mu_);
  return MakeMatrixPage(query, SummariesAnswer(query));
}

MatrixIndexPage RunIndex::MatrixPageByWalk(const MatrixIndexQuery& query) const {
  std::shared_lock lock(mu_);
  return MakeMatrixPage(query, false);
}

void RunIndex::SummarizeMatrix(const MatrixIndexQuery& query, const Resolved& resolved,
                               MatrixIndexPage& page, std::vector<uint8_t>& column_used,
                               std::vector<uint32_t>& touched, std::vector<uint8_t>& torch_ok,
                               std::vector<uint8_t>& transformers_ok,
                               std::vector<uint8_t>& stack_ok) const {
  if (resolved.empty) return;
  const StackSelection& selection = query.selection;
  const std::vector<std::string>& torch = dicts_[kTorch].values;
  const std::vector<std::string>& transformers = dicts_[kTransformers].values;
  if (selection.choice == StackSelection::Choice::kGiven) {
    TakeStacks(torch, transformers, selection.given.torch_version,
               selection.given.transformers_version, torch_ok, transformers_ok);
  }
  const bool newest = selection.choice == StackSelection::Choice::kNewest;
  if (newest) {
    // The pairs in the order the walk meets them (NewestStack keeps the first
    // of equals): the walk's own first phase, which stops once it has seen
    // every pair.
    const std::vector<StackPair> stacks = MatrixStacks(resolved, torch_ok, transformers_ok);
    page.stacks = static_cast<int64_t>(stacks.size());
    if (stacks.empty()) return;
    page.newest = stacks[NewestStack(stacks)];
    TakeStacks(torch, transformers, page.newest->torch_release, page.newest->transformers_version,
               torch_ok, transformers_ok);
  }
  // The stack pairs (stack_ids_) that the selection and the filters take.
  stack_ok.assign(stack_ids_.size(), 0);
  for (size_t i = 0; i < stack_ids_.size(); ++i) {
    const auto& [t, v] = stack_ids_[i];
    stack_ok[i] = torch_ok[t] && transformers_ok[v] && Wants(resolved, kTorch, t) &&
                  Wants(resolved, kTransformers, v);
  }
  std::vector<uint8_t> column_ok(matrix_columns_.size());
  for (size_t c = 0; c < matrix_columns_.size(); ++c) {
    column_ok[c] = Wants(resolved, kTarget, matrix_columns_[c].target) &&
                   Wants(resolved, kMode, matrix_columns_[c].mode);
  }
  const uint32_t harness = models_.Find(std::string(kHarnessModelId));
  std::vector<uint8_t> stack_seen(stack_ids_.size(), 0);
  // Only counts here: a cell counts once whatever its summaries; the page's
  // own cells are combined later (CombinedCell).
  const std::shared_ptr<const MatrixDigest> digest = Digest();
  const MatrixDigest& d = *digest;
  auto visit_model = [&](size_t m) {
    for (uint32_t k = d.model_begin[m]; k < d.model_begin[m + 1]; ++k) {
      int64_t row_cells = 0;
      bool any = false;  // the current cell has a summary taken
      uint32_t column = 0;
      for (uint32_t e = d.row_begin[k]; e < d.row_begin[k + 1]; ++e) {
        const MatrixDigest::Entry& entry = d.entries[e];
        if (entry.first_of_cell) {
          if (any) {
            ++row_cells;
            column_used[column] = 1;
          }
          any = false;
          column = entry.column;
        }
        if (!column_ok[entry.column] || !stack_ok[entry.stack] ||
            !Wants(resolved, kKind, entry.kind) || !Wants(resolved, kDtype, entry.dtype)) {
          continue;
        }
        any = true;
        page.selected += entry.runs;
        stack_seen[entry.stack] = 1;
      }
      if (any) {
        ++row_cells;
        column_used[column] = 1;
      }
      if (row_cells > 0) {
        touched.push_back(d.rows[k]);
        page.cells += row_cells;
      }
    }
  };
  const size_t models = d.model_begin.size() - 1;
  for (size_t m = 0; m < models; ++m) {
    if (m != harness &&
        (!resolved.models || (m < resolved.models->size() && (*resolved.models)[m]))) {
      visit_model(m);
    }
  }
  if (newest) return;
  std::vector<StackPair> stacks;
  for (size_t i = 0; i < stack_ids_.size(); ++i) {
    if (!stack_seen[i]) continue;
    StackPair stack{std::string(TorchRelease(torch[stack_ids_[i].first])),
                    transformers[stack_ids_[i].second]};
    if (std::find(stacks.begin(), stacks.end(), stack) == stacks.end()) {
      stacks.push_back(std::move(stack));
    }
  }
  page.stacks = static_cast<int64_t>(stacks.size());
}

std::shared_ptr<const RunIndex::MatrixDigest> RunIndex::Digest() const {
  std::lock_guard lock(digest_mu_);
  if (digest_ != nullptr && digest_->runs == rows_.size()) return digest_;
  auto digest = std::make_shared<MatrixDigest>();
  digest->entries.reserve(cell_summaries_.size());
  digest->rows.reserve(matrix_rows_.size());
  digest->row_begin.reserve(matrix_rows_.size() + 1);
  digest->model_begin.reserve(model_matrix_rows_.size() + 1);
  for (const std::vector<uint32_t>& model_rows : model_matrix_rows_) {
    digest->model_begin.push_back(static_cast<uint32_t>(digest->rows.size()));
    for (uint32_t row : model_rows) {
      digest->rows.push_back(row);
      digest->row_begin.push_back(static_cast<uint32_t>(digest->entries.size()));
      for (uint32_t cell : matrix_row_cells_[row]) {
        uint32_t first = 1;
        for (uint32_t s = cell_first_summary_[cell]; s != kNone; s = cell_summaries_[s].next) {
          const CellSummary& summary = cell_summaries_[s];
          digest->entries.push_back({matrix_cell_column_[cell], summary.stack, summary.kind,
                                     summary.dtype, summary.runs, first});
          first = 0;
        }
      }
    }
  }
  digest->model_begin.push_back(static_cast<uint32_t>(digest->rows.size()));
  digest->row_begin.push_back(static_cast<uint32_t>(digest->entries.size()));
  digest->runs = rows_.size();
  digest_ = std::move(digest);
  return digest_;
}

RunIndex::MatrixCellState RunIndex::CombinedCell(uint32_t cell_id, const Resolved& resolved,
                                                 const std::vector<uint8_t>& stack_ok) const {
  MatrixCellState cell{0, 0, 0};
  const IndexColumn& column = matrix_columns_[matrix_cell_column_[cell_id]];
  if (!Wants(resolved, kTarget, column.target) || !Wants(resolved, kMode, column.mode)) {
    return cell;
  }
  for (uint32_t s = cell_first_summary_[cell_id]; s != kNone; s = cell_summaries_[s].next) {
    const CellSummary& summary = cell_summaries_[s];
    if (!stack_ok[summary.stack] || !Wants(resolved, kKind, summary.kind) ||
        !Wants(resolved, kDtype, summary.dtype)) {
      continue;
    }
    const uint32_t position = summary.latest_position + 1;
    if (cell.position == 0 || summary.latest > cell.finished) {
      cell = {summary.latest, position, summary.ties};
    } else if (summary.latest == cell.finished) {
      cell.ties += summary.ties + 1;
      cell.position = std::max(cell.position, position);
    }
  }
  return cell;
}

MatrixIndexPage RunIndex::MakeMatrixPage(const MatrixIndexQuery& query, bool summaries) const {
  MatrixIndexPage page;
  page.from_summaries = summaries;
  // Per cell the index holds, zeroed by calloc (pages a query never touches
  // cost nothing).
  auto zeroed = [](size_t n, size_t size) {
    void* memory = std::calloc(std::max<size_t>(n, 1), size);
    if (memory == nullptr) throw std::bad_alloc();
    return std::unique_ptr<void, decltype(&std::free)>(memory, &std::free);
  };
  const auto cell_memory = zeroed(matrix_cell_column_.size(), sizeof(MatrixCellState));
  const auto filled_memory = zeroed(matrix_rows_.size(), sizeof(uint32_t));
  MatrixCellState* const cells = static_cast<MatrixCellState*>(cell_memory.get());
  uint32_t* const filled = static_cast<uint32_t*>(filled_memory.get());  // cells with a run
  std::vector<uint32_t> touched;  // matrix rows with a run, in the order first seen
  // The summaries' route: the query resolved and the stacks it took.
  Resolved resolved;
  std::vector<uint8_t> torch_ok(dicts_[kTorch].values.size(), 1);
  std::vector<uint8_t> transformers_ok(dicts_[kTransformers].values.size(), 1);
  std::vector<uint8_t> column_used(matrix_columns_.size(), 0);
  std::vector<uint8_t> stack_ok;  // the summaries' route: by stack_ids_ index
  if (summaries) {
    resolved = Resolve(query.query);
    SummarizeMatrix(query, resolved, page, column_used, touched, torch_ok, transformers_ok,
                    stack_ok);
  } else {
    WalkMatrix(query, page, [&](size_t p) {
      const Row& row = rows_[p];
      ++page.selected;
      MatrixCellState& cell = cells[row.matrix_cell];
      const auto position = static_cast<uint32_t>(p) + 1;
      if (cell.position == 0) {
        if (filled[row.matrix_row]++ == 0) touched.push_back(row.matrix_row);
        cell = {row.finished, position, 0};
      } else if (row.finished > cell.finished) {
        cell = {row.finished, position, 0};
      } else if (row.finished == cell.finished) {
        ++cell.ties;
      }
    });
    for (uint32_t r : touched) {
      for (uint32_t id : matrix_row_cells_[r]) {
        if (cells[id].position != 0) column_used[matrix_cell_column_[id]] = 1;
      }
      page.cells += filled[r];
    }
  }
  for (size_t c = 0; c < matrix_columns_.size(); ++c) {
    if (!column_used[c]) continue;
    const IndexColumn& column = matrix_columns_[c];
    page.columns.push_back({dicts_[kTarget].values[column.target],
                            dicts_[kMode].values[column.mode], "", column.ranks,
                            std::string(labels_.values[column.dynamic])});
  }
  std::sort(page.columns.begin(), page.columns.end(), MatrixColumnBefore);
  page.rows = static_cast<int64_t>(touched.size());
  // The page's rows, in BuildMatrix's order (model_id, then test).
  const std::shared_ptr<const MatrixOrder> sorted = SortedMatrixRows();
  const size_t begin = std::min(query.offset, touched.size());
  const size_t end = std::min(touched.size(), begin + query.limit);
  std::partial_sort(
      touched.begin(), touched.begin() + static_cast<std::ptrdiff_t>(end), touched.end(),
      [&sorted](uint32_t a, uint32_t b) { return sorted->rank[a] < sorted->rank[b]; });
  if (summaries) {
    for (size_t i = begin; i < end; ++i) {
      for (uint32_t id : matrix_row_cells_[touched[i]]) {
        cells[id] = CombinedCell(id, resolved, stack_ok);
      }
    }
  }
  bool tied = false;
  for (size_t i = begin; i < end; ++i) {
    for (uint32_t id : matrix_row_cells_[touched[i]]) {
      if (cells[id].position == 0) continue;
      page.rowids.push_back(rows_[cells[id].position - 1].rowid);
      tied |= cells[id].ties > 0;
    }
  }
  if (!tied) return page;
  // Runs that share their cell's latest finish time: BuildMatrix decides
  // among them, so the page's rowids hold all of them, newest first (rare).
  std::vector<uint8_t> on_page(matrix_rows_.size(), 0);
  for (size_t i = begin; i < end; ++i) on_page[touched[i]] = 1;
  auto tie = [&](size_t p) {
    const Row& row = rows_[p];
    const MatrixCellState& cell = cells[row.matrix_cell];
    return on_page[row.matrix_row] && cell.ties > 0 && row.finished == cell.finished &&
           cell.position != p + 1;
  };
  if (summaries) {
    // They are among the rows of the page's models that have a tied cell.
    std::vector<uint32_t> models;
    for (size_t i = begin; i < end; ++i) {
      for (uint32_t id : matrix_row_cells_[touched[i]]) {
        if (cells[id].position != 0 && cells[id].ties > 0) {
          models.push_back(matrix_rows_[touched[i]].first);
          break;
        }
      }
    }
    std::sort(models.begin(), models.end());
    models.erase(std::unique(models.begin(), models.end()), models.end());
    const Matcher matches = MatcherFor(resolved);
    std::vector<uint32_t> positions;
    for (uint32_t m : models) {
      for (uint32_t p : model_rows_[m]) {
        if (tie(p) && matches(p) && torch_ok[ColumnAt(kTorch, p)] &&
            transformers_ok[ColumnAt(kTransformers, p)]) {
          positions.push_back(p);
        }
      }
    }
    std::sort(positions.begin(), positions.end(), std::greater<>());
    for (uint32_t p : positions) page.rowids.push_back(rows_[p].rowid);
    return page;
  }
  MatrixIndexPage again;
  WalkMatrix(query, again, [&](size_t p) {
    if (tie(p)) page.rowids.push_back(rows_[p].rowid);
  });
  return page;
}

int64_t RunIndex::size() const {
  std::shared_lock lock(mu_);
  return static_cast<int64_t>(rows_.size());
}

Facets RunIndex::Counts() const {
  std::shared_lock lock(mu_);
  Facets facets;
  facets.runs = static_cast<int64_t>(rows_.size());
  facets.models = static_cast<int64_t>(models_.values.size());
  return facets;
}

}  // namespace compatlab
