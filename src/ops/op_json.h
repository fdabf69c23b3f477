// Op coverage as JSON (doc/ops.md, "JSON"): `ops show --format json` and
// serve's /api/ops. The one place op records become JSON.
#ifndef COMPATLAB_OPS_OP_JSON_H_
#define COMPATLAB_OPS_OP_JSON_H_

#include <vector>

#include "core/op_records.h"
#include "nlohmann/json.hpp"
#include "ops/op_report.h"

namespace compatlab {

// The op sweep's fields (doc/ops.md, "Store tables") and `recorded`.
nlohmann::ordered_json OpSweepJson(const OpSweepInfo& sweep);
// {"total", "categories": {name: n} (every category), "skipped_by_source", "stale"}.
nlohmann::ordered_json OpCountsJson(const OpCounts& counts);
// A case with its key, category, stale flag and `models` (the stored models using it).
nlohmann::ordered_json OpRowJson(const OpRow& row);
// {"op_sweep": ..., "counts": ..., "cases": [...]} of `rows`.
nlohmann::ordered_json OpSweepReportJson(const OpSweepInfo& sweep, const OpCounts& counts,
                                         const std::vector<OpRow>& rows);

}  // namespace compatlab

#endif  // COMPATLAB_OPS_OP_JSON_H_
