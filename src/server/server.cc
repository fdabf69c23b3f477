#include "server/server.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_split.h"
#include "fmt/format.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "query/diff.h"
#include "query/errors_report.h"
#include "server/run_index.h"
#include "sqlite3.h"
#include "store/record_json.h"
#include "store/schema.h"
#include "store/store.h"

namespace compatlab {

class HttpServer : public httplib::Server {};

namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

constexpr size_t kMaxParamBytes = 256;
constexpr size_t kMaxPageSize = 200;
constexpr size_t kDefaultPageSize = 25;
constexpr size_t kCountCap = 1000;          // search totals are counted up to this
constexpr size_t kMaxModelRuns = 5000;      // model page
constexpr size_t kMaxErrorRuns = 5000;      // failures grouped by /api/errors
constexpr size_t kMaxDiffRuns = 20000;      // runs per side of /api/diff
constexpr size_t kMaxSummaryPoints = 2000;  // scatter points of /api/summary

// The response headers of every answer, static files included.
httplib::Headers SecurityHeaders() {
  return {
      {"Content-Security-Policy",
       "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"},
      {"X-Content-Type-Options", "nosniff"},
      {"Referrer-Policy", "no-referrer"},
      {"X-Frame-Options", "DENY"},
  };
}

// A request error: the HTTP status and the message of {"error": ...}.
struct HttpError {
  int status;
  std::string message;
};

void SendJson(httplib::Response& res, int status, const ordered_json& body) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(body.dump(-1, ' ', false, ordered_json::error_handler_t::replace),
                  "application/json");
}

void SendError(httplib::Response& res, const HttpError& error) {
  SendJson(res, error.status, ordered_json{{"error", error.message}});
}

int HttpStatusOf(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
      return 400;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kUnavailable:
      return 503;
    case absl::StatusCode::kUnimplemented:
      return 501;
    default:
      return 500;
  }
}

HttpError FromStatus(const absl::Status& status) {
  return {HttpStatusOf(status), std::string(status.message())};
}

// The query parameters of a request, checked: only `allowed` names, each at
// most once, bounded, without control characters.
class Params {
 public:
  static absl::StatusOr<Params> Parse(const httplib::Request& req,
                                      const std::set<std::string>& allowed) {
    Params params;
    // The HTTP library splits "a=b=c" its own way: refuse it rather than guess.
    const size_t query_start = req.target.find('?');
    if (query_start != std::string::npos) {
      const std::vector<std::string> items =
          absl::StrSplit(req.target.substr(query_start + 1), '&');
      for (const std::string& item : items) {
        if (std::count(item.begin(), item.end(), '=') > 1) {
          return absl::InvalidArgumentError(
              "a parameter value holds '=': percent-encode it as %3D");
        }
      }
    }
    for (const auto& [name, value] : req.params) {
      if (!allowed.contains(name)) {
        return absl::InvalidArgumentError(
            fmt::format("unknown parameter '{}'", name.substr(0, 64)));
      }
      if (params.values_.contains(name)) {
        return absl::InvalidArgumentError(fmt::format("parameter '{}' given twice", name));
      }
      if (value.size() > kMaxParamBytes) {
        return absl::InvalidArgumentError(
            fmt::format("parameter '{}' is longer than {} bytes", name, kMaxParamBytes));
      }
      for (unsigned char c : value) {
        if (c < 0x20 || c == 0x7f) {
          return absl::InvalidArgumentError(
              fmt::format("parameter '{}' holds a control character", name));
        }
      }
      params.values_[name] = value;
    }
    return params;
  }

  // "name=value&..." in name order: the same parameters give the same text.
  std::string Canonical() const {
    std::string text;
    for (const auto& [name, value] : values_) text += name + "=" + value + "&";
    return text;
  }

  std::string Get(const std::string& name) const {
    auto it = values_.find(name);
    return it == values_.end() ? "" : it->second;
  }

  // A whole number in [min, max]; `fallback` when absent.
  absl::StatusOr<int64_t> Int(const std::string& name, int64_t fallback, int64_t min,
                              int64_t max) const {
    const std::string text = Get(name);
    if (text.empty()) return fallback;
    int64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
      return absl::InvalidArgumentError(
          fmt::format("parameter '{}' must be a whole number from {} to {}", name, min, max));
    }
    return value;
  }

 private:
  std::map<std::string, std::string> values_;
};

// The filter parameters every run selection takes (names of doc/results-schema.md).
const std::vector<std::string>& FilterNames() {
  static const std::vector<std::string> kNames = {
      "model", "model_id", "sweep_id", "target",        "mode",
      "kind",  "status",   "dtype",    "torch_version", "transformers_version"};
  return kNames;
}

std::set<std::string> Allowed(std::initializer_list<std::string> extra) {
  std::set<std::string> names(FilterNames().begin(), FilterNames().end());
  names.insert(extra.begin(), extra.end());
  return names;
}

absl::StatusOr<IndexQuery> ToIndexQuery(const Params& params) {
  IndexQuery query;
  RunFilter& f = query.filter;
  f.model = params.Get("model");
  query.model_id = params.Get("model_id");
  f.sweep_id = params.Get("sweep_id");
  f.target = params.Get("target");
  f.mode = params.Get("mode");
  f.kind = params.Get("kind");
  f.dtype = params.Get("dtype");
  f.torch_version = params.Get("torch_version");
  f.transformers_version = params.Get("transformers_version");
  if (const std::string status = params.Get("status"); !status.empty()) {
    absl::StatusOr<TestStatus> parsed = ParseTestStatus(status);
    if (!parsed.ok()) return absl::InvalidArgumentError(std::string(parsed.status().message()));
    f.status = *parsed;
  }
  return query;
}

// A run as JSON: every result field (schema order), without the long outputs
// unless `full`.
ordered_json RunJson(const RunRecord& run, bool full) {
  ordered_json json = RunRecordToJson(run);
  if (!full) {
    // Left out of run lists (up to 64 KiB each): /api/run has them.
    for (const FieldDef& field : ResultFields()) {
      if (field.bulky) json.erase(std::string(field.name));
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
      if (!f.bulky) list->push_back(&f);
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

ordered_json KnownJson(const KnownError* known) {
  if (known == nullptr) return nullptr;
  return {{"id", known->id},
          {"explanation", known->explanation},
          {"cause", known->cause},
          {"workaround", known->workaround}};
}

ordered_json StatsJson(const MetricStats& s) {
  return {
      {"count", s.count}, {"p50", s.p50}, {"p90", s.p90}, {"max", s.max}, {"geomean", s.geomean}};
}

ordered_json GroupsJson(const std::vector<SummaryGroup>& groups) {
  ordered_json out = ordered_json::array();
  for (const SummaryGroup& g : groups) {
    ordered_json item = ordered_json::object();
    for (const auto& [k, v] : g.key) item[k] = v;
    const int64_t passes = g.statuses.contains("pass") ? g.statuses.at("pass") : 0;
    item["runs"] = g.runs;
    item["pass"] = passes;
    item["pass_rate"] =
        g.runs > 0 ? static_cast<double>(passes) / static_cast<double>(g.runs) : 0.0;
    item["statuses"] = g.statuses;
    ordered_json metrics = ordered_json::object();
    for (const auto& [name, stats] : g.passing) metrics[name] = StatsJson(stats);
    item["passing"] = metrics;
    out.push_back(std::move(item));
  }
  return out;
}

}  // namespace

struct Server::Impl {
  ServerOptions options;
  RunIndex index;
  std::optional<ErrorKnowledgeBase> kb;
  std::string kb_origin;
  HttpServer http;
  std::atomic<int64_t> last_refresh_ns{0};
  std::atomic<bool> refreshing{false};

  std::mutex pool_mu;
  std::vector<std::unique_ptr<Store>> pool;

  // A store connection for this request; back to the pool when it ends.
  class Lease {
   public:
    Lease(Impl* impl, std::unique_ptr<Store> store) : impl_(impl), store_(std::move(store)) {}
    Lease(Lease&&) = default;
    ~Lease() {
      if (store_ == nullptr) return;
      std::lock_guard lock(impl_->pool_mu);
      impl_->pool.push_back(std::move(store_));
    }
    Store& operator*() { return *store_; }
    Store* operator->() { return store_.get(); }

   private:
    Impl* impl_;
    std::unique_ptr<Store> store_;
  };

  absl::StatusOr<Lease> Borrow() {
    {
      std::lock_guard lock(pool_mu);
      if (!pool.empty()) {
        std::unique_ptr<Store> store = std::move(pool.back());
        pool.pop_back();
        return Lease(this, std::move(store));
      }
    }
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options.db, OpenMode::kReadOnly);
    if (!store.ok()) return store.status();
    return Lease(this, *std::move(store));
  }

  // Indexes the runs stored since the last look, at most once per interval.
  void MaybeRefresh() {
    const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
    const int64_t interval = static_cast<int64_t>(options.refresh_interval_s * 1e9);
    if (now - last_refresh_ns.load() < interval) return;
    if (refreshing.exchange(true)) return;  // another thread is at it
    if (absl::StatusOr<Lease> store = Borrow(); store.ok()) {
      if (absl::Status s = index.Refresh(**store); !s.ok()) {
        fprintf(stderr, "compatlab: warning: cannot read new runs: %s\n",
                std::string(s.message()).c_str());
      }
    }
    last_refresh_ns.store(now);
    refreshing.store(false);
  }

  // The knowledge base's entry for a failure; matches (regular expressions)
  // are remembered by their subject, since the same errors recur.
  const KnownError* Known(const RunResult& result) {
    if (!kb || !IsFailureStatus(result.status)) return nullptr;
    const std::string& signature = result.error_signature;
    std::string subject = MatchSubject(TestStatusName(result.status), signature);
    std::lock_guard lock(known_mu);
    if (auto it = known_cache.find(subject); it != known_cache.end()) return it->second;
    const KnownError* known = kb->Match(TestStatusName(result.status), signature);
    if (known_cache.size() >= 10000) known_cache.clear();
    known_cache.emplace(std::move(subject), known);
    return known;
  }
  std::mutex known_mu;
  std::unordered_map<std::string, const KnownError*> known_cache;
  // /api/summary answers by canonical parameters: (runs indexed, body).
  std::mutex summary_mu;
  std::map<std::string, std::pair<int64_t, std::string>> summary_cache;

  // {"fields": [...], "rows": [[...], ...]} of these runs, in this order: the
  // stored values passed straight on (the lists need no typed record).
  // Columns that are null or "" in every row are left out (most of a run list's
  // fields belong to other kinds and modes): readers treat a missing field as
  // null, and the answer stays small.
  absl::StatusOr<ordered_json> RunTable(const std::vector<int64_t>& rowids) {
    absl::StatusOr<Lease> store = Borrow();
    if (!store.ok()) return store.status();
    const std::vector<std::string>& names = ListedFieldNames();
    std::vector<std::vector<FieldValue>> values;
    values.reserve(rowids.size());
    std::vector<bool> used(names.size(), false);
    absl::Status status = (*store)->FieldsByRowid(
        names, rowids, [&values, &used](int64_t, std::vector<FieldValue>& row) {
          for (size_t i = 0; i < row.size(); ++i) {
            if (used[i] || std::holds_alternative<std::monostate>(row[i])) continue;
            const auto* text = std::get_if<std::string>(&row[i]);
            used[i] = text == nullptr || !text->empty();
          }
          values.push_back(std::move(row));  // FieldsByRowid resizes it for the next row
        });
    if (!status.ok()) return status;
    ordered_json fields = ordered_json::array();
    for (size_t i = 0; i < names.size(); ++i) {
      if (used[i]) fields.push_back(names[i]);
    }
    ordered_json rows = ordered_json::array();
    rows.get_ref<ordered_json::array_t&>().reserve(values.size());
    for (std::vector<FieldValue>& row_values : values) {
      ordered_json row = ordered_json::array();
      row.get_ref<ordered_json::array_t&>().reserve(fields.size());
      for (size_t i = 0; i < row_values.size(); ++i) {
        if (!used[i]) continue;
        if (auto* text = std::get_if<std::string>(&row_values[i])) {
          row.push_back(std::move(*text));
        } else {
          row.push_back(FieldValueToJson(row_values[i]));
        }
      }
      rows.push_back(std::move(row));
    }
    return ordered_json{{"fields", std::move(fields)}, {"rows", std::move(rows)}};
  }

  absl::StatusOr<std::vector<RunRecord>> Fetch(const std::vector<int64_t>& rowids, bool full) {
    absl::StatusOr<Lease> store = Borrow();
    if (!store.ok()) return store.status();
    return (*store)->RunsByRowid(rowids, full);
  }

  // --- endpoints: each fills `res` or returns the error to send ---
  std::optional<HttpError> Health(const Params&, httplib::Response& res);
  std::optional<HttpError> FacetsEndpoint(const Params&, httplib::Response& res);
  std::optional<HttpError> Search(const Params& params, httplib::Response& res);
  std::optional<HttpError> Model(const Params& params, httplib::Response& res);
  std::optional<HttpError> Run(const Params& params, httplib::Response& res);
  std::optional<HttpError> Errors(const Params& params, httplib::Response& res);
  std::optional<HttpError> Diff(const Params& params, httplib::Response& res);
  std::optional<HttpError> SummaryEndpoint(const Params& params, httplib::Response& res);
  std::optional<HttpError> Repro(const Params& params, httplib::Response& res);
  absl::StatusOr<RunRecord> RunById(const std::string& run_id);

  void Route(const std::string& path, std::set<std::string> allowed,
             std::optional<HttpError> (Impl::*endpoint)(const Params&, httplib::Response&)) {
    http.Get(path, [this, allowed = std::move(allowed), endpoint](const httplib::Request& req,
                                                                  httplib::Response& res) {
      absl::StatusOr<Params> params = Params::Parse(req, allowed);
      if (!params.ok()) return SendError(res, FromStatus(params.status()));
      MaybeRefresh();
      if (std::optional<HttpError> error = (this->*endpoint)(*params, res)) SendError(res, *error);
    });
  }
};

std::optional<HttpError> Server::Impl::Health(const Params&, httplib::Response& res) {
  ordered_json fields = ordered_json::array();
  for (const FieldDef& f : ResultFields()) fields.push_back(f.name);
  const Facets facets = index.GetFacets();
  SendJson(res, 200,
           {{"status", "ok"},
            {"store", options.db.string()},
            {"schema_version", kSchemaVersion},
            {"runs", facets.runs},
            {"models", facets.models},
            {"knowledge_base", kb_origin},
            {"fields", fields},
            {"metrics", index.metrics()}});
  return std::nullopt;
}

std::optional<HttpError> Server::Impl::FacetsEndpoint(const Params&, httplib::Response& res) {
  const Facets facets = index.GetFacets();
  ordered_json values = ordered_json::object();
  for (const auto& [field, list] : facets.values) values[field] = list;
  SendJson(res, 200, {{"runs", facets.runs}, {"models", facets.models}, {"values", values}});
  return std::nullopt;
}

std::optional<HttpError> Server::Impl::Search(const Params& params, httplib::Response& res) {
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
  const IndexPage page = index.Search(*query);
  absl::StatusOr<ordered_json> table = RunTable(page.rowids);
  if (!table.ok()) return FromStatus(table.status());
  ordered_json next = nullptr;
  if (page.has_more && !page.rowids.empty()) next = std::to_string(page.rowids.back());
  SendJson(res, 200,
           {{"fields", std::move((*table)["fields"])},
            {"rows", std::move((*table)["rows"])},
            {"limit", *limit},
            {"total", page.total},
            {"total_capped", page.total_capped},
            {"has_more", page.has_more},
            {"next_cursor", next}});
  return std::nullopt;
}

std::optional<HttpError> Server::Impl::Model(const Params& params, httplib::Response& res) {
  const std::string model_id = params.Get("model_id");
  if (model_id.empty()) return HttpError{400, "parameter 'model_id' is required"};
  bool truncated = false;
  const std::vector<int64_t> rowids = index.ModelRuns(model_id, kMaxModelRuns, &truncated);
  if (rowids.empty()) return HttpError{404, fmt::format("no runs of model '{}'", model_id)};
  absl::StatusOr<ordered_json> table = RunTable(rowids);
  if (!table.ok()) return FromStatus(table.status());
  SendJson(res, 200,
           {{"model_id", model_id},
            {"model_type", index.ModelType(model_id)},
            {"fields", std::move((*table)["fields"])},
            {"rows", std::move((*table)["rows"])},
            {"truncated", truncated}});
  return std::nullopt;
}

absl::StatusOr<RunRecord> Server::Impl::RunById(const std::string& run_id) {
  if (run_id.empty()) return absl::InvalidArgumentError("parameter 'run_id' is required");
  absl::StatusOr<Lease> store = Borrow();
  if (!store.ok()) return store.status();
  RunFilter filter;
  filter.run_id = run_id;
  absl::StatusOr<std::vector<RunRecord>> runs = (*store)->QueryRuns(filter);
  if (!runs.ok()) return runs.status();
  if (runs->empty()) return absl::NotFoundError(fmt::format("no run '{}'", run_id));
  return std::move(runs->front());
}

std::optional<HttpError> Server::Impl::Run(const Params& params, httplib::Response& res) {
  absl::StatusOr<RunRecord> run = RunById(params.Get("run_id"));
  if (!run.ok()) return FromStatus(run.status());
  SendJson(res, 200,
           {{"run", RunJson(*run, true)},
            {"signature", run->result.error_signature},
            {"known_error", KnownJson(Known(run->result))}});
  return std::nullopt;
}

std::optional<HttpError> Server::Impl::Errors(const Params& params, httplib::Response& res) {
  absl::StatusOr<IndexQuery> query = ToIndexQuery(params);
  if (!query.ok()) return FromStatus(query.status());
  query->failures_only = true;
  query->limit = kMaxErrorRuns;
  query->count_cap = kMaxErrorRuns;
  const IndexPage page = index.Search(*query);
  absl::StatusOr<std::vector<RunRecord>> runs = Fetch(page.rowids, false);
  if (!runs.ok()) return FromStatus(runs.status());
  ordered_json out = ErrorsJson(GroupErrors(*runs, kb ? &*kb : nullptr), kb_origin);
  out["truncated"] = page.has_more;  // only the newest kMaxErrorRuns failures were grouped
  SendJson(res, 200, out);
  return std::nullopt;
}

std::optional<HttpError> Server::Impl::Diff(const Params& params, httplib::Response& res) {
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
    query.limit = kMaxDiffRuns;
    query.count_cap = kMaxDiffRuns;
    const IndexPage page = index.Search(query);
    if (page.has_more) {
      return HttpError{400, fmt::format("the {} side selects more than {} runs; narrow it with "
                                        "model, target, mode or kind",
                                        keys[i], kMaxDiffRuns)};
    }
    absl::StatusOr<std::vector<RunRecord>> runs = Fetch(page.rowids, false);
    if (!runs.ok()) return FromStatus(runs.status());
    sides[i] = *std::move(runs);
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
                       {"detail", c.detail}});
  }
  SendJson(res, 200,
           {{"base", names[0]},
            {"head", names[1]},
            {"compared", report.compared},
            {"regressions", report.Regressions()},
            {"counts", counts},
            {"changes", changes}});
  return std::nullopt;
}

std::optional<HttpError> Server::Impl::SummaryEndpoint(const Params& params,
                                                       httplib::Response& res) {
  absl::StatusOr<IndexQuery> query = ToIndexQuery(params);
  if (!query.ok()) return FromStatus(query.status());
  // A summary walks every matching run: the answer is kept until runs are added.
  const std::string key = params.Canonical();
  const int64_t size = index.size();
  {
    std::lock_guard lock(summary_mu);
    if (auto it = summary_cache.find(key); it != summary_cache.end() && it->second.first == size) {
      res.set_header("Cache-Control", "no-store");
      res.set_content(it->second.second, "application/json");
      return std::nullopt;
    }
  }
  const Summary summary = index.Summarize(*query, kMaxSummaryPoints);
  ordered_json points = ordered_json::array();
  for (const SummaryPoint& p : summary.points) {
    ordered_json point = {{"model_id", p.model_id}};
    for (const auto& [name, value] : p.metrics) point[name] = value;
    points.push_back(std::move(point));
  }
  SendJson(res, 200,
           {{"runs", summary.runs},
            {"metrics", index.metrics()},
            {"by_stack", GroupsJson(summary.by_stack)},
            {"by_target", GroupsJson(summary.by_target)},
            {"by_seq_len", GroupsJson(summary.by_seq_len)},
            {"points", points}});
  std::lock_guard lock(summary_mu);
  if (summary_cache.size() >= 64) summary_cache.clear();
  summary_cache[key] = {size, res.body};
  return std::nullopt;
}

std::optional<HttpError> Server::Impl::Repro(const Params& params, httplib::Response& res) {
  absl::StatusOr<RunRecord> run = RunById(params.Get("run_id"));
  if (!run.ok()) return FromStatus(run.status());
  if (!options.repro) return HttpError{501, "this server makes no reproduction scripts"};
  absl::StatusOr<std::string> script = options.repro(*run, Known(run->result));
  if (!script.ok()) return FromStatus(script.status());
  SendJson(res, 200, {{"run_id", run->run_id}, {"script", *script}});
  return std::nullopt;
}

absl::StatusOr<std::unique_ptr<Server>> Server::Open(const ServerOptions& options) {
  // Readers map the store instead of copying its pages through read(2). Takes
  // effect only before SQLite's first use in the process (else it is refused,
  // harmlessly).
  constexpr sqlite3_int64 kMmapBytes = sqlite3_int64{1} << 32;
  sqlite3_config(SQLITE_CONFIG_MMAP_SIZE, kMmapBytes, kMmapBytes);
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  absl::StatusOr<Impl::Lease> store = impl->Borrow();
  if (!store.ok()) return store.status();
  if (absl::Status s = impl->index.Refresh(**store); !s.ok()) return s;
  impl->last_refresh_ns = std::chrono::steady_clock::now().time_since_epoch().count();
  if (!fs::is_directory(options.web_dir)) {
    return absl::NotFoundError(fmt::format("{}: no web page folder", options.web_dir.string()));
  }
  if (absl::StatusOr<ErrorKnowledgeBase> kb = ErrorKnowledgeBase::Load(options.kb_path); kb.ok()) {
    impl->kb = *std::move(kb);
    impl->kb_origin = options.kb_path.string();
  }
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  Impl& i = *impl_;
  httplib::Server& http = i.http;
  const int threads = std::max(2, i.options.threads);
  http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http.set_keep_alive_max_count(10000);
  http.set_tcp_nodelay(true);  // headers and body go out in two writes: no Nagle delay
  http.set_payload_max_length(64 * 1024);
  http.set_default_headers(SecurityHeaders());
  http.set_mount_point("/", i.options.web_dir.string());
  if (!i.options.vendor_dir.empty()) http.set_mount_point("/vendor", i.options.vendor_dir.string());
  const std::set<std::string> filters = Allowed({});
  i.Route("/api/health", {}, &Impl::Health);
  i.Route("/api/facets", {}, &Impl::FacetsEndpoint);
  i.Route("/api/search", Allowed({"limit", "cursor"}), &Impl::Search);
  i.Route("/api/model", {"model_id"}, &Impl::Model);
  i.Route("/api/run", {"run_id"}, &Impl::Run);
  i.Route("/api/errors", filters, &Impl::Errors);
  i.Route("/api/diff", Allowed({"base", "head"}), &Impl::Diff);
  i.Route("/api/summary", filters, &Impl::SummaryEndpoint);
  i.Route("/api/repro", {"run_id"}, &Impl::Repro);
  // Unknown routes, other methods, and failures inside a handler: a JSON error.
  httplib::Server::HandlerWithResponse json_errors = [](const httplib::Request& req,
                                                        httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string message = res.status == 404 ? "no such page: " + req.path.substr(0, 200)
                                            : fmt::format("HTTP status {}", res.status);
    SendError(res, {res.status, message});
    return httplib::Server::HandlerResponse::Handled;
  };
  http.set_error_handler(json_errors);
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr error) {
        std::string message = "internal error";
        try {
          std::rethrow_exception(error);
        } catch (const std::exception& e) {
          message = std::string("internal error: ") + e.what();
        } catch (...) {
        }
        SendError(res, {500, message});
      });
}

Server::~Server() { Stop(); }

absl::Status Server::Bind(const std::string& host, int port) {
  if (port == 0) {
    port_ = impl_->http.bind_to_any_port(host);
    if (port_ < 0) port_ = 0;
  } else if (impl_->http.bind_to_port(host, port)) {
    port_ = port;
  }
  if (port_ == 0) {
    return absl::UnavailableError(fmt::format("cannot listen on {}:{}", host, port));
  }
  return absl::OkStatus();
}

absl::Status Server::Serve() {
  if (!impl_->http.listen_after_bind()) {
    return absl::UnavailableError(
        fmt::format("the server on port {} stopped with an error", port_));
  }
  return absl::OkStatus();
}

void Server::Stop() { impl_->http.stop(); }

int64_t Server::runs() const { return impl_->index.size(); }

}  // namespace compatlab
