#include "server/routes.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <utility>

#include "absl/strings/str_split.h"
#include "core/blame.h"
#include "core/limits.h"
#include "fmt/format.h"
#include "ops/op_json.h"
#include "ops/op_report.h"
#include "query/diff.h"
#include "query/errors_report.h"
#include "query/matrix.h"
#include "query/search_hint.h"
#include "query/variant_compare.h"
#include "repro/repro.h"
#include "store/artifacts.h"
#include "store/record_json.h"
#include "store/schema.h"
#include "store/store.h"
#include "util/fs.h"
#include "util/hash.h"

namespace compatlab {
namespace {

using nlohmann::ordered_json;

// Answers with `body`, an answer kept by a cache; false (`res` untouched) when there is none.
bool SendKept(std::optional<std::string> body, HttpResponse& res) {
  if (!body.has_value()) return false;
  res.set_header("Cache-Control", "no-store");
  res.set_content(*std::move(body), "application/json");
  return true;
}

// /api/health's cache key beside the run count: the model count.
std::string HealthKey(const Facets& facets) { return std::to_string(facets.models); }

constexpr size_t kMaxPageSize = 200;
constexpr size_t kDefaultPageSize = 25;
constexpr size_t kCountCap = 1000;          // search totals are counted up to this
constexpr size_t kMaxModelRuns = 5000;      // model page
constexpr size_t kMaxErrorRuns = 5000;      // failures grouped by /api/errors
constexpr size_t kMaxDiffRuns = 20000;      // runs per side of /api/diff
constexpr size_t kMaxSummaryPoints = 2000;  // scatter points of /api/summary
constexpr int64_t kDefaultMatrixRows = 50;  // rows of a /api/matrix page
constexpr int64_t kMaxMatrixRows = 200;
constexpr size_t kMaxMatrixRuns = 20000;   // candidate runs read for one page
constexpr size_t kMatrixErrorChars = 300;  // a cell's error_message, cut (/api/run has it whole)

// A run as JSON: every result field (schema order), without the long outputs
// unless `full`. Every text value is cut to kMaxListTextBytes in a list
// (`full` false), kMaxApiTextBytes otherwise, and marked where cut
// (TruncateForDisplay): one stored value never makes an answer large.
ordered_json RunJson(const RunRecord& run, bool full) {
  ordered_json json = RunRecordToJson(run);
  if (!full) {
    // Left out of run lists (up to 64 KiB each; curves up to 4096 elements):
    // /api/run has them.
    for (const FieldDef& field : ResultFields()) {
      if (field.bulky || field.list != ListKind::kNone) json.erase(std::string(field.name));
    }
  }
  const size_t cap = full ? kMaxApiTextBytes : kMaxListTextBytes;
  for (auto& [key, value] : json.items()) {
    if (value.is_string() && value.get_ref<const std::string&>().size() > cap) {
      value = TruncateForDisplay(value.get_ref<const std::string&>(), cap);
    }
  }
  return json;
}

// Runs as a table, the compact form of the run lists: {"fields": [names],
// "rows": [[values in that order], ...]}. The names are the result fields of
// schema.h (doc/results-schema.md) without the long outputs, so a field added
// to the schema appears here with no change.
const std::vector<const FieldDef*>& ListedFields() {
  static const auto* const fields = [] {
    auto* list = new std::vector<const FieldDef*>;
    for (const FieldDef& f : ResultFields()) {
      if (!f.bulky && f.list == ListKind::kNone) list->push_back(&f);
    }
    return list;
  }();
  return *fields;
}

const std::vector<std::string>& ListedFieldNames() {
  static const auto* const names = [] {
    auto* list = new std::vector<std::string>;
    for (const FieldDef* f : ListedFields()) list->emplace_back(f->name);
    return list;
  }();
  return *names;
}

ordered_json StatsJson(const MetricStats& s) {
  return {
      {"count", s.count}, {"p50", s.p50}, {"p90", s.p90}, {"max", s.max}, {"geomean", s.geomean}};
}

// {rate (null when no run is the model's), passes, model_runs, not_model, skipped}
// (core/blame.h).
ordered_json PassRateJson(const PassRate& rate) {
  const std::optional<double> r = rate.Rate();
  return {{"rate", r ? ordered_json(*r) : ordered_json(nullptr)},
          {"passes", rate.passes},
          {"model_runs", rate.model_runs},
          {"not_model", rate.not_model},
          {"skipped", rate.skipped}};
}

ordered_json GroupsJson(const std::vector<SummaryGroup>& groups) {
  ordered_json out = ordered_json::array();
  for (const SummaryGroup& g : groups) {
    ordered_json item = ordered_json::object();
    for (const auto& [k, v] : g.key) item[k] = v;
    const int64_t passes = g.statuses.contains("pass") ? g.statuses.at("pass") : 0;
    // Passes over the tested runs blamed on the model (core/blame.h): a run compatlab could
    // not test (its reduction, reference or harness failed) or a skipped one (never run)
    // does not lower the model's rate.
    const int64_t model_runs = g.runs - g.not_model - g.skipped;
    item["runs"] = g.runs;
    item["pass"] = passes;
    item["not_model"] = g.not_model;
    item["skipped"] = g.skipped;
    item["model_runs"] = model_runs;
    item["pass_rate"] =
        model_runs > 0 ? static_cast<double>(passes) / static_cast<double>(model_runs) : 0.0;
    item["statuses"] = g.statuses;
    ordered_json metrics = ordered_json::object();
    for (const auto& [name, stats] : g.passing) metrics[name] = StatsJson(stats);
    item["passing"] = metrics;
    out.push_back(std::move(item));
  }
  return out;
}

}  // namespace

ApiRoutes::ApiRoutes(const ServerOptions& options, RunIndex& index, StorePool& pool,
                     const ErrorKnowledgeBase* kb, std::string kb_origin)
    : options_(options),
      index_(index),
      pool_(pool),
      kb_(kb),
      kb_origin_(std::move(kb_origin)),
      known_(kb),
      filled_(ListedFieldNames().size()) {}

void ApiRoutes::Register(HttpRouter& http, std::function<void()> before_each) {
  before_each_ = std::move(before_each);
  const std::set<std::string> filters = Allowed({});
  Route(http, "/api/health", {}, &ApiRoutes::Health);
  Route(http, "/api/facets", {}, &ApiRoutes::FacetsEndpoint);
  Route(http, "/api/search", Allowed({"limit", "cursor"}), &ApiRoutes::Search);
  Route(http, "/api/model", {"model_id"}, &ApiRoutes::Model);
  Route(http, "/api/run", {"run_id"}, &ApiRoutes::Run);
  Route(http, "/api/trace", {"run_id"}, &ApiRoutes::Trace);
  Route(http, "/api/errors", filters, &ApiRoutes::Errors);
  Route(http, "/api/diff", Allowed({"base", "head"}), &ApiRoutes::Diff);
  Route(http, "/api/compare", {"base", "head"}, &ApiRoutes::CompareEndpoint);
  Route(http, "/api/summary", filters, &ApiRoutes::SummaryEndpoint);
  Route(http, "/api/repro", {"run_id"}, &ApiRoutes::Repro);
  Route(http, "/api/matrix", Allowed({"stack", "stacks", "offset", "limit"}),
        &ApiRoutes::MatrixEndpoint);
  Route(http, "/api/ops", {"op_sweep", "target", "mode", "category", "q", "limit"},
        &ApiRoutes::Ops);
}

void ApiRoutes::Route(HttpRouter& http, const std::string& path, std::set<std::string> allowed,
                      Endpoint endpoint) {
  http.Get(path, [this, allowed = std::move(allowed), endpoint](const HttpRequest& req,
                                                                HttpResponse& res) {
    absl::StatusOr<Params> params = Params::Parse(req.target, req.params, allowed);
    if (!params.ok()) return SendError(res, FromStatus(params.status()));
    if (before_each_) before_each_();
    if (std::optional<HttpError> error = (this->*endpoint)(*params, res)) SendError(res, *error);
  });
}

namespace {

// A side's runs narrowed to the named stack `stack` (a diff side's `stack=`; the run index
// has no column for it): those whose stack field is it. Nothing when `stack` is empty.
void KeepStack(const std::string& stack, std::vector<RunRecord>& runs) {
  if (stack.empty()) return;
  std::erase_if(runs, [&stack](const RunRecord& run) { return run.result.stack != stack; });
}

// The rows of the last run list this worker thread answered, given back once
// the answer is written (SendRunList): the next list fills their cells in
// place, so that its strings mostly reuse the last one's storage rather than
// allocate their own (the cells of a thread's lists are mostly the same
// fields). Kept only after answers of at most kMaxSpareRowsBytes.
constexpr size_t kMaxSpareRowsBytes = 256 * 1024;

ordered_json& SpareRows() {
  thread_local ordered_json spare;
  return spare;
}

// `cell` set to `value` (text longer than kMaxListTextBytes truncated), a
// string cell keeping its storage.
void SetCell(ordered_json& cell, const FieldView& value) {
  const auto* text = std::get_if<std::string_view>(&value);
  if (text == nullptr) {
    cell = FieldViewToJson(value);
  } else if (text->size() > kMaxListTextBytes) {
    cell = TruncateForDisplay(*text, kMaxListTextBytes);
  } else if (cell.is_string()) {
    cell.get_ref<std::string&>().assign(*text);
  } else {
    cell = *text;
  }
}

// SendJson of a run list's answer (`out["rows"]` from RunTable); its rows
// are then kept for this thread's next list.
void SendRunList(HttpResponse& res, ordered_json& out) {
  SendJson(res, 200, out);
  if (res.body.size() <= kMaxSpareRowsBytes) SpareRows() = std::move(out["rows"]);
}

}  // namespace

// {"fields": [...], "rows": [[...], ...]} of these runs, in this order: the
// stored values passed straight on (the lists need no typed record).
// Columns that are null or "" in every row are left out (most of a run list's
// fields belong to other kinds and modes): readers treat a missing field as
// null, and the answer stays small. When every run was read before, only the
// fields they fill are read (filled_); else all are, and what each run fills
// is learned. The answer is the same either way.
absl::StatusOr<ordered_json> ApiRoutes::RunTable(const std::vector<int64_t>& rowids) {
  absl::StatusOr<StorePool::Lease> store = pool_.Borrow();
  if (!store.ok()) return store.status();
  const std::vector<std::string>& names = ListedFieldNames();
  const std::optional<std::vector<size_t>> filled = filled_.Union(rowids);
  std::vector<size_t> picked;  // indices into names of the fields read
  if (filled) {
    picked = *filled;
  } else {
    picked.resize(names.size());
    std::iota(picked.begin(), picked.end(), 0);
  }
  std::vector<std::string> fields;
  fields.reserve(picked.size());
  for (size_t i : picked) fields.push_back(names[i]);
  std::vector<bool> used(picked.size(), false);
  std::vector<int64_t> learned_rowids;  // when learning: each run read, and what it fills
  std::vector<std::vector<bool>> learned;
  // The rows are filled in place over this thread's last list (SpareRows).
  ordered_json rows = std::exchange(SpareRows(), nullptr);
  if (!rows.is_array()) rows = ordered_json::array();
  ordered_json::array_t& row_list = rows.get_ref<ordered_json::array_t&>();
  size_t count = 0;
  absl::Status status = (*store)->FieldsByRowid(
      fields, rowids, [&](int64_t rowid, const std::vector<FieldView>& values) {
        std::vector<bool>* fills = nullptr;
        if (!filled) {
          learned_rowids.push_back(rowid);
          fills = &learned.emplace_back(names.size(), false);
        }
        if (count == row_list.size()) row_list.emplace_back(ordered_json::array());
        ordered_json& row = row_list[count++];
        if (!row.is_array()) row = ordered_json::array();
        ordered_json::array_t& cells = row.get_ref<ordered_json::array_t&>();
        cells.resize(values.size());
        for (size_t i = 0; i < values.size(); ++i) {
          const auto* text = std::get_if<std::string_view>(&values[i]);
          if (!std::holds_alternative<std::monostate>(values[i]) &&
              (text == nullptr || !text->empty())) {
            used[i] = true;
            if (fills != nullptr) (*fills)[picked[i]] = true;
          }
          SetCell(cells[i], values[i]);
        }
      });
  row_list.resize(count);
  if (!status.ok()) return status;
  if (!filled) filled_.Learn(learned_rowids, learned);
  ordered_json field_names = ordered_json::array();
  for (size_t i = 0; i < picked.size(); ++i) {
    if (used[i]) field_names.push_back(names[picked[i]]);
  }
  if (field_names.size() < picked.size()) {  // drop the columns no run fills
    for (ordered_json& row : rows) {
      ordered_json::array_t& cells = row.get_ref<ordered_json::array_t&>();
      size_t kept = 0;
      for (size_t i = 0; i < cells.size(); ++i) {
        if (used[i]) cells[kept++] = std::move(cells[i]);
      }
      cells.resize(kept);
    }
  }
  ordered_json table = ObjectWithRoom(2);
  table["fields"] = std::move(field_names);
  table["rows"] = std::move(rows);
  return table;
}

absl::StatusOr<std::vector<RunRecord>> ApiRoutes::Fetch(const std::vector<int64_t>& rowids,
                                                        bool full) {
  absl::StatusOr<StorePool::Lease> store = pool_.Borrow();
  if (!store.ok()) return store.status();
  return (*store)->RunsByRowid(rowids, full);
}

std::optional<HttpError> ApiRoutes::Health(const Params&, HttpResponse& res) {
  // The answer changes only with the counts: kept, since health checks come
  // by the thousand (a load balancer, a crowd of connections) and building
  // the field list is most of their cost.
  const Facets facets = index_.Counts();
  if (SendKept(health_.Find(HealthKey(facets), facets.runs), res)) return std::nullopt;
  ordered_json fields = ordered_json::array();
  for (const FieldDef& f : ResultFields()) fields.push_back(f.name);
  SendJson(res, 200,
           {{"status", "ok"},
            {"store", options_.db.string()},
            {"schema_version", kSchemaVersion},
            {"runs", facets.runs},
            {"models", facets.models},
            {"knowledge_base", kb_origin_},
            {"fields", fields},
            {"metrics", index_.metrics()}});
  health_.Put(HealthKey(facets), facets.runs, res.body);
  return std::nullopt;
}

std::optional<HttpError> ApiRoutes::FacetsEndpoint(const Params&, HttpResponse& res) {
  const Facets facets = index_.GetFacets();
  ordered_json values = ordered_json::object();
  for (const auto& [field, list] : facets.values) values[field] = list;
  SendJson(res, 200, {{"runs", facets.runs}, {"models", facets.models}, {"values", values}});
  return std::nullopt;
}

std::optional<HttpError> ApiRoutes::Search(const Params& params, HttpResponse& res) {
  absl::StatusOr<IndexQuery> query = ToIndexQuery(params);
  if (!query.ok()) return FromStatus(query.status());
  absl::StatusOr<int64_t> limit =
      params.Int("limit", kDefaultPageSize, 1, static_cast<int64_t>(kMaxPageSize));
  if (!limit.ok()) return FromStatus(limit.status());
  absl::StatusOr<int64_t> cursor = params.Int("cursor", 0, 1, INT64_MAX);
  if (!cursor.ok()) return FromStatus(cursor.status());
  query->limit = static_cast<size_t>(*limit);
  query->before_rowid = *cursor;
  query->count_cap = kCountCap;
  const IndexPage page = index_.Search(*query);
  absl::StatusOr<ordered_json> table = RunTable(page.rowids);
  if (!table.ok()) return FromStatus(table.status());
  ordered_json next = nullptr;
  if (page.has_more && !page.rowids.empty()) next = std::to_string(page.rowids.back());
  ordered_json hint = nullptr;  // a search that found nothing: what the store has, what to run
  if (page.total == 0 && *cursor == 0 && !query->filter.model.empty()) {
    hint = EmptySearchHint(query->filter.model,
                           index_.ModelCounts(RelatedModelStem(query->filter.model)));
  }
  ordered_json out = ObjectWithRoom(9);
  out["fields"] = std::move((*table)["fields"]);
  out["rows"] = std::move((*table)["rows"]);
  out["current"] = index_.Current(page.rowids);
  out["limit"] = *limit;
  out["total"] = page.total;
  out["total_capped"] = page.total_capped;
  out["has_more"] = page.has_more;
  out["next_cursor"] = std::move(next);
  out["hint"] = std::move(hint);
  SendRunList(res, out);
  return std::nullopt;
}

std::optional<HttpError> ApiRoutes::Model(const Params& params, HttpResponse& res) {
  const std::string model_id = params.Get("model_id");
  if (model_id.empty()) return HttpError{400, "parameter 'model_id' is required"};
  bool truncated = false;
  const std::vector<int64_t> rowids = index_.ModelRuns(model_id, kMaxModelRuns, &truncated);
  if (rowids.empty()) return HttpError{404, fmt::format("no runs of model '{}'", model_id)};
  absl::StatusOr<ordered_json> table = RunTable(rowids);
  if (!table.ok()) return FromStatus(table.status());
  ordered_json out = ObjectWithRoom(6);
  out["model_id"] = model_id;
  out["model_type"] = index_.ModelType(model_id);
  out["fields"] = std::move((*table)["fields"]);
  out["rows"] = std::move((*table)["rows"]);
  out["current"] = index_.Current(rowids);
  out["truncated"] = truncated;
  SendRunList(res, out);
  return std::nullopt;
}

absl::StatusOr<RunRecord> ApiRoutes::RunById(const std::string& run_id) {
  if (run_id.empty()) return absl::InvalidArgumentError("parameter 'run_id' is required");
  absl::StatusOr<StorePool::Lease> store = pool_.Borrow();
  if (!store.ok()) return store.status();
  RunFilter filter;
  filter.run_id = run_id;
  absl::StatusOr<std::vector<RunRecord>> runs = (*store)->QueryRuns(filter);
  if (!runs.ok()) return runs.status();
  if (runs->empty()) return absl::NotFoundError(fmt::format("no run '{}'", run_id));
  return std::move(runs->front());
}

std::optional<HttpError> ApiRoutes::Run(const Params& params, HttpResponse& res) {
  absl::StatusOr<RunRecord> run = RunById(params.Get("run_id"));
  if (!run.ok()) return FromStatus(run.status());
  SendJson(res, 200,
           {{"run", RunJson(*run, true)},
            {"signature", run->result.error_signature},
            {"known_error", KnownErrorJson(known_.Find(run->result))},
            {"cache_pull", CachePullCommand(*run, options_.cache_remote)}});
  return std::nullopt;
}

std::optional<HttpError> ApiRoutes::Trace(const Params& params, HttpResponse& res) {
  absl::StatusOr<RunRecord> run = RunById(params.Get("run_id"));
  if (!run.ok()) return FromStatus(run.status());
  const std::string& digest = run->result.profile_trace_sha256;
  if (digest.empty()) return FromStatus(absl::NotFoundError("the run has no profile trace"));
  absl::StatusOr<std::filesystem::path> path = ArtifactPath(ArtifactDir(options_.db), digest);
  if (!path.ok()) return FromStatus(path.status());
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(*path, ec);
  if (ec || size > static_cast<uintmax_t>(kMaxProfileTraceBytes)) {
    return FromStatus(absl::NotFoundError(
        "the run's profile trace is not in the store's artifact directory (or over its bound)"));
  }
  absl::StatusOr<std::string> data = ReadFile(*path);
  if (!data.ok() || Sha256Hex(*data) != digest) {
    return FromStatus(absl::NotFoundError("the run's profile trace does not match its digest"));
  }
  res.set_content(*std::move(data), "application/gzip");
  res.set_header(
      "Content-Disposition",
      fmt::format("attachment; filename=\"compatlab-trace-{}.json.gz\"", digest.substr(0, 16)));
  return std::nullopt;
}

std::optional<HttpError> ApiRoutes::Errors(const Params& params, HttpResponse& res) {
  absl::StatusOr<IndexQuery> query = ToIndexQuery(params);
  if (!query.ok()) return FromStatus(query.status());
  query->failures_only = true;
  query->limit = kMaxErrorRuns;
  query->count_cap = kMaxErrorRuns;
  const IndexPage page = index_.Search(*query);
  absl::StatusOr<std::vector<RunRecord>> runs = Fetch(page.rowids, false);
  if (!runs.ok()) return FromStatus(runs.status());
  ordered_json out = ErrorsJson(GroupErrors(*runs, kb_), kb_origin_, kMaxListTextBytes);
  out["truncated"] = page.has_more;  // only the newest kMaxErrorRuns failures were grouped
  SendJson(res, 200, out);
  return std::nullopt;
}

std::optional<HttpError> ApiRoutes::Diff(const Params& params, HttpResponse& res) {
  absl::StatusOr<IndexQuery> extra = ToIndexQuery(params);
  if (!extra.ok()) return FromStatus(extra.status());
  std::vector<RunRecord> sides[2];
  std::string names[2];
  const char* const keys[2] = {"base", "head"};
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<DiffSide> side = ParseDiffSide(params.Get(keys[i]));
    if (!side.ok()) {
      return HttpError{
          400, fmt::format("parameter '{}': {}", keys[i], std::string(side.status().message()))};
    }
    names[i] = side->Describe();
    IndexQuery query = *extra;
    if (!side->sweep_id.empty()) query.filter.sweep_id = side->sweep_id;
    if (!side->torch_version.empty()) query.filter.torch_version = side->torch_version;
    if (!side->transformers_version.empty()) {
      query.filter.transformers_version = side->transformers_version;
    }
    if (auto error = SideRuns(query, keys[i], "model, target, mode or kind", &sides[i])) {
      return error;
    }
    KeepStack(side->stack, sides[i]);
  }
  const DiffReport report = DiffRuns(std::move(sides[0]), std::move(sides[1]));
  ordered_json counts = ordered_json::object();
  ordered_json changes = ordered_json::array();
  for (const Change& c : report.changes) {
    const RunRecord* base = c.base >= 0 ? &report.base[c.base] : nullptr;
    const RunRecord* head = c.head >= 0 ? &report.head[c.head] : nullptr;
    const RunRecord& any = base ? *base : *head;
    const std::string kind(ChangeKindName(c.kind));
    counts[kind] = counts.value(kind, 0) + 1;
    changes.push_back({{"change", kind},
                       {"regression", IsRegression(c.kind)},
                       {"test_id", any.test_id},
                       {"model_id", any.spec.model_id},
                       {"target", any.spec.target},
                       {"mode", any.spec.mode},
                       {"kind", any.spec.kind},
                       {"base", base ? RunJson(*base, false) : ordered_json(nullptr)},
                       {"head", head ? RunJson(*head, false) : ordered_json(nullptr)},
                       {"detail", c.detail},
                       {"rule", c.rule}});
  }
  SendJson(res, 200,
           {{"base", names[0]},
            {"head", names[1]},
            {"compared", report.compared},
            {"regressions", report.Regressions()},
            {"improvements", report.Improvements()},
            {"pass_rate",
             {{"base", PassRateJson(PassRateOf(report.base))},
              {"head", PassRateJson(PassRateOf(report.head))}}},
            {"counts", counts},
            {"changes", changes}});
  return std::nullopt;
}

std::optional<HttpError> ApiRoutes::SideRuns(IndexQuery query, std::string_view key,
                                             std::string_view narrow_with,
                                             std::vector<RunRecord>* runs) {
  query.limit = kMaxDiffRuns;
  query.count_cap = kMaxDiffRuns;
  const IndexPage page = index_.Search(query);
  if (page.has_more) {
    return HttpError{400, fmt::format("the {} side selects more than {} runs; narrow it with {}",
                                      key, kMaxDiffRuns, narrow_with)};
  }
  absl::StatusOr<std::vector<RunRecord>> fetched = Fetch(page.rowids, false);
  if (!fetched.ok()) return FromStatus(fetched.status());
  *runs = *std::move(fetched);
  return std::nullopt;
}

std::optional<HttpError> ApiRoutes::CompareEndpoint(const Params& params, HttpResponse& res) {
  std::vector<RunRecord> sides[2];
  CompareSide parsed[2];
  const char* const keys[2] = {"base", "head"};
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<CompareSide> side = ParseCompareSide(params.Get(keys[i]));
    if (!side.ok()) {
      return HttpError{
          400, fmt::format("parameter '{}': {}", keys[i], std::string(side.status().message()))};
    }
    parsed[i] = *side;
    IndexQuery query;
    query.model_id = side->model_id;
    query.filter.sweep_id = side->runs.sweep_id;
    query.filter.torch_version = side->runs.torch_version;
    query.filter.transformers_version = side->runs.transformers_version;
    if (auto error = SideRuns(query, keys[i], "model=, sweep= or torch=", &sides[i])) {
      return error;
    }
    if (sides[i].empty() && !side->bare_word.empty()) {  // no runs of that sweep: a model type
      const CompareSide model = ModelTypeSide(*side);
      query.model_id = model.model_id;
      query.filter.sweep_id.clear();
      if (auto error = SideRuns(query, keys[i], "model=, sweep= or torch=", &sides[i])) {
        return error;
      }
      if (sides[i].empty()) {
        return HttpError{404, fmt::format("the {} side {}: no runs of sweep {} or of {}", keys[i],
                                          side->bare_word, side->bare_word, model.model_id)};
      }
      parsed[i] = model;
    }
    KeepStack(side->runs.stack, sides[i]);
    if (sides[i].empty()) {
      return HttpError{404,
                       fmt::format("the {} side {} selects no runs", keys[i], side->Describe())};
    }
  }
  // The same report as `compatlab compare --format json`, on diff's engine.
  VariantReport report = CompareVariant(std::move(sides[0]), std::move(sides[1]),
                                        parsed[0].model_id != parsed[1].model_id);
  report.base_name = parsed[0].Describe();
  report.head_name = parsed[1].Describe();
  SendJson(res, 200, VariantReportToJson(report));
  return std::nullopt;
}

std::optional<HttpError> ApiRoutes::SummaryEndpoint(const Params& params, HttpResponse& res) {
  absl::StatusOr<IndexQuery> query = ToIndexQuery(params);
  if (!query.ok()) return FromStatus(query.status());
  // A summary walks every matching run: the answer is kept until runs are added.
  const std::string key = params.Canonical();
  const int64_t size = index_.size();
  if (SendKept(summaries_.Find(key, size), res)) return std::nullopt;
  const Summary summary = index_.Summarize(*query, kMaxSummaryPoints);
  ordered_json points = ordered_json::array();
  for (const SummaryPoint& p : summary.points) {
    ordered_json point = {{"model_id", p.model_id}};
    for (const auto& [name, value] : p.metrics) point[name] = value;
    points.push_back(std::move(point));
  }
  SendJson(res, 200,
           {{"runs", summary.runs},
            {"metrics", index_.metrics()},
            {"by_stack", GroupsJson(summary.by_stack)},
            {"by_target", GroupsJson(summary.by_target)},
            {"by_seq_len", GroupsJson(summary.by_seq_len)},
            {"points", points}});
  summaries_.Put(key, size, res.body);
  return std::nullopt;
}

std::optional<HttpError> ApiRoutes::Repro(const Params& params, HttpResponse& res) {
  absl::StatusOr<RunRecord> run = RunById(params.Get("run_id"));
  if (!run.ok()) return FromStatus(run.status());
  if (options_.probe.python.empty()) {
    return HttpError{501, "this server makes no reproduction scripts"};
  }
  if (SendKept(repro_.Find(run->run_id), res)) return std::nullopt;
  std::optional<ReproScripts::Slot> slot = repro_.TryStart();
  if (!slot.has_value()) {
    res.set_header("Retry-After", "1");
    return HttpError{503, fmt::format("{} reproduction scripts are being made; try again shortly",
                                      ReproScripts::kMaxGenerators)};
  }
  absl::StatusOr<bool> local = [&]() -> absl::StatusOr<bool> {
    absl::StatusOr<StorePool::Lease> store = pool_.Borrow();
    if (!store.ok()) return store.status();
    absl::StatusOr<OwnCode> own = ReproOwnCode(options_.probe, options_.targets_dir);
    if (!own.ok()) return own.status();
    return IsLocalRun(**store, *run, *own);
  }();
  if (!local.ok()) return FromStatus(local.status());
  absl::StatusOr<ReproScript> script = GenerateReproScript(
      *run, known_.Find(run->result), options_.probe, options_.targets_dir, *local);
  if (!script.ok()) return FromStatus(script.status());
  for (const std::string& warning : script->warnings) {
    std::fprintf(stderr, "compatlab: warning: %s\n", warning.c_str());
  }
  SendJson(res, 200, {{"run_id", run->run_id}, {"script", script->script}});
  repro_.Put(run->run_id, res.body);
  return std::nullopt;
}

std::optional<HttpError> ApiRoutes::MatrixEndpoint(const Params& params, HttpResponse& res) {
  absl::StatusOr<IndexQuery> query = ToIndexQuery(params);
  if (!query.ok()) return FromStatus(query.status());
  absl::StatusOr<StackSelection> selection = ToMatrixSelection(params);
  if (!selection.ok()) return FromStatus(selection.status());
  absl::StatusOr<int64_t> limit = params.Int("limit", kDefaultMatrixRows, 1, kMaxMatrixRows);
  if (!limit.ok()) return FromStatus(limit.status());
  absl::StatusOr<int64_t> offset = params.Int("offset", 0, 0, 100'000'000);
  if (!offset.ok()) return FromStatus(offset.status());
  // A page walks every matching run: the answer is kept until runs are added.
  const std::string key = params.Canonical();
  const int64_t size = index_.size();
  if (SendKept(matrices_.Find(key, size), res)) return std::nullopt;
  if (selection->choice == StackSelection::Choice::kNamed) {
    return NamedMatrixPage(*std::move(query), *selection, *offset, *limit, key, size, res);
  }
  MatrixIndexQuery matrix_query;
  matrix_query.query = *std::move(query);
  matrix_query.selection = *selection;
  matrix_query.offset = static_cast<size_t>(*offset);
  matrix_query.limit = static_cast<size_t>(*limit);
  const MatrixIndexPage page = index_.MatrixPage(matrix_query);
  if (page.rowids.size() > kMaxMatrixRuns) {
    return HttpError{400, fmt::format("this page would read more than {} runs; ask for fewer rows "
                                      "(limit) or narrow it with model, target or mode",
                                      kMaxMatrixRuns)};
  }
  absl::StatusOr<std::vector<RunRecord>> runs = Fetch(page.rowids, false);
  if (!runs.ok()) return FromStatus(runs.status());
  Matrix matrix = BuildMatrix(*std::move(runs), *selection, page.columns);
  // The page's runs are only its cells' candidates: the counts are the index's.
  matrix.stacks = page.stacks;
  matrix.newest = page.newest;
  matrix.current = page.cells;
  matrix.superseded = page.selected - page.cells;
  SendMatrixPage(matrix, page.rows, *offset, *limit, key, size, res);
  return std::nullopt;
}

void ApiRoutes::SendMatrixPage(const Matrix& matrix, int64_t total_rows, int64_t offset,
                               int64_t limit, const std::string& key, int64_t size,
                               HttpResponse& res) {
  ordered_json out = MatrixJson(matrix, kMatrixErrorChars);
  const int64_t next = offset + static_cast<int64_t>(matrix.rows.size());
  out["total_rows"] = total_rows;
  out["offset"] = offset;
  out["limit"] = limit;
  out["has_more"] = next < total_rows;
  out["next_offset"] = next < total_rows ? ordered_json(next) : ordered_json(nullptr);
  SendJson(res, 200, out);
  matrices_.Put(key, size, res.body);
}

std::optional<HttpError> ApiRoutes::NamedMatrixPage(IndexQuery query,
                                                    const StackSelection& selection, int64_t offset,
                                                    int64_t limit, const std::string& key,
                                                    int64_t size, HttpResponse& res) {
  // The run index keys current runs by stack pair, not by named stack (the runs' `stack`
  // field): the matching runs are read and BuildMatrix picks each named stack's current run
  // and marks the changes by diff's rule, as `matrix --stacks` does.
  query.limit = kMaxMatrixRuns + 1;
  query.count_cap = kMaxMatrixRuns + 1;
  const IndexPage found = index_.Search(query);
  if (found.rowids.size() > kMaxMatrixRuns) {
    return HttpError{400, fmt::format("stacks side by side would read more than {} runs; narrow "
                                      "them with model, target or mode",
                                      kMaxMatrixRuns)};
  }
  absl::StatusOr<std::vector<RunRecord>> runs = Fetch(found.rowids, false);
  if (!runs.ok()) return FromStatus(runs.status());
  Matrix matrix = BuildMatrix(*std::move(runs), selection);
  const auto total_rows = static_cast<int64_t>(matrix.rows.size());
  // The page's rows; their cells still index matrix.runs, and the counts are the whole matrix's.
  const auto first = static_cast<size_t>(std::min(offset, total_rows));
  const size_t last = std::min(first + static_cast<size_t>(limit), matrix.rows.size());
  matrix.rows = std::vector<MatrixRow>(std::make_move_iterator(matrix.rows.begin() + first),
                                       std::make_move_iterator(matrix.rows.begin() + last));
  SendMatrixPage(matrix, total_rows, offset, limit, key, size, res);
  return std::nullopt;
}

}  // namespace compatlab

namespace compatlab {
namespace {

constexpr int64_t kDefaultOpRows = 1000;  // cases of a /api/ops answer
constexpr int64_t kMaxOpRows = 20000;

// The op sweep /api/ops names: op_sweep=ID, else the latest of target (and mode); NotFound.
absl::StatusOr<OpSweepInfo> ChosenOpSweep(const std::vector<OpSweepInfo>& sweeps,
                                          const Params& params) {
  const std::string id = params.Get("op_sweep");
  const std::string target = params.Get("target");
  const std::string mode = params.Get("mode");
  for (auto it = sweeps.rbegin(); it != sweeps.rend(); ++it) {
    if (!id.empty()
            ? it->op_sweep_id == id
            : (target.empty() || it->target == target) && (mode.empty() || it->mode == mode)) {
      return *it;
    }
  }
  return absl::NotFoundError("no op sweep matches op_sweep, target and mode");
}

// The categories of the comma-separated `text` (all when empty); InvalidArgument.
absl::StatusOr<std::set<OpCategory>> OpCategories(const std::string& text) {
  std::set<OpCategory> out;
  for (absl::string_view name : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    absl::StatusOr<OpCategory> c = ParseOpCategory(std::string(name));
    if (!c.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("parameter 'category': ", c.status().message()));
    out.insert(*c);
  }
  return out;
}

}  // namespace

std::optional<HttpError> ApiRoutes::Ops(const Params& params, HttpResponse& res) {
  // An answer reads every op result and scans the runs: it is kept until the store changes
  // (NoteStoreChanges).
  const std::string key = params.Canonical();
  const int64_t version = ops_version_.load();
  if (SendKept(ops_.Find(key, version), res)) return std::nullopt;
  absl::StatusOr<StorePool::Lease> store = pool_.Borrow();
  if (!store.ok()) return FromStatus(store.status());
  absl::StatusOr<std::vector<OpSweepInfo>> sweeps = (*store)->ListOpSweeps();
  if (!sweeps.ok()) return FromStatus(sweeps.status());
  ordered_json list = ordered_json::array();
  for (const OpSweepInfo& s : *sweeps) {
    absl::StatusOr<std::vector<OpResult>> results = (*store)->OpResults(s.op_sweep_id);
    if (!results.ok()) return FromStatus(results.status());
    ordered_json item = OpSweepJson(s);
    item["counts"] = OpCountsJson(CountOps(*results));
    list.push_back(std::move(item));
  }
  if (params.Get("op_sweep").empty() && params.Get("target").empty() &&
      params.Get("mode").empty()) {
    SendJson(res, 200, {{"op_sweeps", list}});
    ops_.Put(key, version, res.body);
    return std::nullopt;
  }
  absl::StatusOr<OpSweepInfo> sweep = ChosenOpSweep(*sweeps, params);
  if (!sweep.ok()) return FromStatus(sweep.status());
  absl::StatusOr<int64_t> limit = params.Int("limit", kDefaultOpRows, 1, kMaxOpRows);
  if (!limit.ok()) return FromStatus(limit.status());
  absl::StatusOr<std::set<OpCategory>> categories = OpCategories(params.Get("category"));
  if (!categories.ok()) return FromStatus(categories.status());
  absl::StatusOr<std::vector<OpResult>> results = (*store)->OpResults(sweep->op_sweep_id);
  if (!results.ok()) return FromStatus(results.status());
  const OpCounts counts = CountOps(*results);  // of the whole op sweep, before the filter
  const std::string q = params.Get("q");
  std::vector<OpResult> matching;
  for (OpResult& r : *results) {
    if (q.empty() || r.Key().find(q) != std::string::npos) matching.push_back(std::move(r));
  }
  absl::StatusOr<OpUsers> users = FallbackUsers(**store);
  if (!users.ok()) return FromStatus(users.status());
  std::vector<OpRow> rows = OpRows(matching, *users, {*categories, 0});
  const bool truncated = rows.size() > static_cast<size_t>(*limit);
  if (truncated) rows.resize(static_cast<size_t>(*limit));
  ordered_json out = OpSweepReportJson(*sweep, counts, rows);
  out["matching"] = matching.size();
  out["truncated"] = truncated;
  out["op_sweeps"] = std::move(list);
  SendJson(res, 200, out);
  ops_.Put(key, version, res.body);
  return std::nullopt;
}

}  // namespace compatlab

namespace compatlab {

absl::Status ApiRoutes::NoteStoreChanges(Store& store) {
  absl::StatusOr<OpTablesMark> mark = store.MarkOpTables();
  const int64_t runs = index_.size();
  std::lock_guard lock(ops_mu_);
  // A mark that cannot be read counts as a change: no kept answer is trusted.
  if (!mark.ok() || *mark != ops_mark_ || runs != ops_runs_) ops_version_.fetch_add(1);
  ops_runs_ = runs;
  if (!mark.ok()) return mark.status();
  ops_mark_ = *mark;
  return absl::OkStatus();
}

}  // namespace compatlab
