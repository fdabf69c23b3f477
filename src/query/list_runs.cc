#include "query/list_runs.h"

#include <map>

#include "query/error_kb.h"
#include "query/errors_report.h"
#include "query/runs_format.h"
#include "query/search_hint.h"
#include "util/status.h"

namespace compatlab {

absl::StatusOr<std::string> ListRuns(const ListRunsOptions& options) {
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(options.db, OpenMode::kReadOnly);
  if (!store.ok()) return Recode(store.status(), absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<std::vector<RunRecord>> runs = (*store)->QueryRuns(options.filter);
  if (!runs.ok()) return Recode(runs.status(), absl::StatusCode::kInternal);
  switch (options.format) {
    case RunsFormat::kJson:
      return FormatRunsJson(*runs) + "\n";
    case RunsFormat::kCsv:
      return FormatRunsCsv(*runs);
    case RunsFormat::kTable:
      break;
  }
  std::string text = FormatRunsTable(*runs);
  if (runs->empty() && !options.filter.model.empty()) {
    // What the store has under a related name, and the command that tests the one asked for.
    std::vector<std::pair<std::string, int64_t>> related;
    if (const std::string stem = RelatedModelStem(options.filter.model); !stem.empty()) {
      RunFilter near;
      near.model = stem;
      near.limit = 100000;
      absl::StatusOr<std::vector<RunRecord>> found = (*store)->QueryRuns(near);
      if (!found.ok()) return Recode(found.status(), absl::StatusCode::kInternal);
      std::map<std::string, int64_t> counts;
      for (const RunRecord& r : *found) ++counts[r.spec.model_id];
      related.assign(counts.begin(), counts.end());
    }
    text += EmptySearchHint(options.filter.model, related) + "\n";
  }
  // Kind load's figures, which the table above has no columns for.
  if (const std::string load = FormatLoadTable(*runs); !load.empty()) text += "\n" + load;
  // The knowledge base's explanations of the errors shown.
  if (absl::StatusOr<ErrorKnowledgeBase> kb = ErrorKnowledgeBase::Load(options.kb_path); kb.ok()) {
    text += FormatKnownErrorsFooter(*runs, *kb, options.kb_path.string());
  }
  return text;
}

}  // namespace compatlab
