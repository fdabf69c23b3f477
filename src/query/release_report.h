// `compatlab diff --format markdown`: the release report (doc/stacks.md, "Release report"),
// ready to paste into an issue or a release note: the builds line, the pass rates, new
// failures with their error signatures and knowledge-base entries, fixes, other status
// changes, slower and faster tests by diff's rule (with the rule that decided each), the ops
// newly falling back, and what was not compared.
#ifndef COMPATLAB_QUERY_RELEASE_REPORT_H_
#define COMPATLAB_QUERY_RELEASE_REPORT_H_

#include <map>
#include <string>
#include <vector>

#include "core/records.h"
#include "query/diff.h"
#include "query/error_kb.h"

namespace compatlab {

// The ops of `head`'s fallback_ops (audited runs only) that `base`'s do not hold, by name.
std::vector<std::string> NewFallbackOps(const RunResult& base, const RunResult& head);

// The report of `report` in GitHub-flavoured Markdown; `kb` (may be null) explains the new
// failures. Text from the runs is escaped for table cells (`|`, line breaks, backticks).
// Ends in '\n'.
std::string FormatReleaseReport(const DiffReport& report, const std::string& base_name,
                                const std::string& head_name, const ErrorKnowledgeBase* kb);

}  // namespace compatlab

#endif  // COMPATLAB_QUERY_RELEASE_REPORT_H_
