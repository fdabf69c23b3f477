// The endpoints of the JSON API (doc/api.md), one handler per endpoint: each
// reads the run index, the store (through the pool) and the caches, and
// answers JSON. Parameters are checked (params.h) before a handler runs.
#ifndef COMPATLAB_SERVER_ROUTES_H_
#define COMPATLAB_SERVER_ROUTES_H_

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "query/error_kb.h"
#include "server/caches.h"
#include "server/filled_fields.h"
#include "server/http_router.h"
#include "server/params.h"
#include "server/repro_scripts.h"
#include "server/responses.h"
#include "server/run_index.h"
#include "server/server.h"
#include "server/store_pool.h"
#include "store/store.h"

namespace compatlab {

class ApiRoutes {
 public:
  // `kb`: null when there is no knowledge base; `kb_origin` names it ("" when
  // none). REQUIRES: options, index, pool and kb outlive this object.
  ApiRoutes(const ServerOptions& options, RunIndex& index, StorePool& pool,
            const ErrorKnowledgeBase* kb, std::string kb_origin);

  // Registers every /api/ endpoint on `http`. `before_each` runs once a
  // request's parameters are checked, before its handler.
  void Register(HttpRouter& http, std::function<void()> before_each);

  // Notes what /api/ops answers depend on (the op tables' mark, the runs indexed): once
  // either changed, the answers kept before are made again. Call it after each refresh of
  // the run index. Errors: the mark's read (then no answer kept before it is served).
  absl::Status NoteStoreChanges(Store& store);

 private:
  using Endpoint = std::optional<HttpError> (ApiRoutes::*)(const Params&, HttpResponse&);
  void Route(HttpRouter& http, const std::string& path, std::set<std::string> allowed,
             Endpoint endpoint);

  // --- endpoints: each fills `res` or returns the error to send ---
  std::optional<HttpError> Health(const Params&, HttpResponse& res);
  std::optional<HttpError> FacetsEndpoint(const Params&, HttpResponse& res);
  std::optional<HttpError> Search(const Params& params, HttpResponse& res);
  std::optional<HttpError> Model(const Params& params, HttpResponse& res);
  std::optional<HttpError> Run(const Params& params, HttpResponse& res);
  // /api/trace?run_id=ID: the run's gzip profile trace from the store's artifact directory
  // (store/artifacts.h), checked against its stored digest; 404 when it has none.
  std::optional<HttpError> Trace(const Params& params, HttpResponse& res);
  std::optional<HttpError> Errors(const Params& params, HttpResponse& res);
  std::optional<HttpError> Diff(const Params& params, HttpResponse& res);
  // /api/compare?base=SEL&head=SEL: `compatlab compare`'s JSON (doc/compare.md); a bare
  // word that selects no sweep selects the model of that type.
  std::optional<HttpError> CompareEndpoint(const Params& params, HttpResponse& res);
  std::optional<HttpError> SummaryEndpoint(const Params& params, HttpResponse& res);
  std::optional<HttpError> Repro(const Params& params, HttpResponse& res);
  std::optional<HttpError> MatrixEndpoint(const Params& params, HttpResponse& res);
  // /api/ops (doc/ops.md, doc/api.md): without op_sweep, target or mode, every op sweep
  // with its counts; else one op sweep (op_sweep=ID, or the latest of target and mode) with
  // its cases, most used first, of `category` (comma-separated) and containing `q` in their
  // key, at most `limit`.
  std::optional<HttpError> Ops(const Params& params, HttpResponse& res);
  // /api/matrix with `stacks`: a page of the named stacks side by side, from the matching
  // runs (at most kMaxMatrixRuns). Sends it, or returns the error to send.
  std::optional<HttpError> NamedMatrixPage(IndexQuery query, const StackSelection& selection,
                                           int64_t offset, int64_t limit, const std::string& key,
                                           int64_t size, HttpResponse& res);
  // Sends a page of `matrix` (its rows the page's, of `total_rows`) and keeps it under `key`.
  void SendMatrixPage(const Matrix& matrix, int64_t total_rows, int64_t offset, int64_t limit,
                      const std::string& key, int64_t size, HttpResponse& res);

  // {"fields": [...], "rows": [[...], ...]} of these runs, in this order.
  absl::StatusOr<nlohmann::ordered_json> RunTable(const std::vector<int64_t>& rowids);
  absl::StatusOr<std::vector<RunRecord>> Fetch(const std::vector<int64_t>& rowids, bool full);
  // The runs one side of /api/diff or /api/compare selects (`query`, at most
  // kMaxDiffRuns of them); a 400 naming `key` and what to narrow it with when
  // it selects more.
  std::optional<HttpError> SideRuns(IndexQuery query, std::string_view key,
                                    std::string_view narrow_with, std::vector<RunRecord>* runs);
  absl::StatusOr<RunRecord> RunById(const std::string& run_id);

  const ServerOptions& options_;
  RunIndex& index_;
  StorePool& pool_;
  const ErrorKnowledgeBase* const kb_;
  const std::string kb_origin_;
  std::function<void()> before_each_;
  KnownErrorCache known_;
  SummaryCache summaries_;
  // Which listed fields each run fills: RunTable reads only those.
  FilledFields filled_;
  SummaryCache matrices_{SummaryCache::kMaxMatrixEntries};
  SummaryCache health_{1};  // /api/health's answer, by the model count
  ReproScripts repro_;      // /api/repro's answers and its generators at once
  // /api/ops answers (each reads every op result and scans the runs), kept for the
  // ops_version_ they were made at; NoteStoreChanges moves it on a change.
  SummaryCache ops_{SummaryCache::kMaxOpsEntries};
  std::atomic<int64_t> ops_version_{0};
  std::mutex ops_mu_;      // guards the two below
  OpTablesMark ops_mark_;  // the op tables at ops_version_
  int64_t ops_runs_ = -1;  // the runs indexed at ops_version_
};

}  // namespace compatlab

#endif  // COMPATLAB_SERVER_ROUTES_H_
