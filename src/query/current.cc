#include "query/current.h"

#include <tuple>

namespace compatlab {

bool IsNewerRun(const RunRecord& a, const RunRecord& b) {
  return std::tie(a.finished_at, a.started_at, a.run_id) >
         std::tie(b.finished_at, b.started_at, b.run_id);
}

std::vector<RunRecord> LatestPerTest(std::vector<RunRecord> runs) {
  return CurrentPerKey(std::move(runs),
                       [](const RunRecord& run) -> const std::string& { return run.test_id; });
}

}  // namespace compatlab
