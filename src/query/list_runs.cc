#include "query/list_runs.h"

#include <utility>

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
      absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> counts =
          (*store)->CountRunsByModel(near);
      if (!counts.ok()) return Recode(counts.status(), absl::StatusCode::kInternal);
      related = *std::move(counts);
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
