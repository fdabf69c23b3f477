#include "ops/op_json.h"

#include <string>

namespace compatlab {
namespace {

using ojson = nlohmann::ordered_json;

ojson Optional(const std::optional<double>& v) {
  return v.has_value() ? ojson(*v) : ojson(nullptr);
}

// Stored JSON text as a value; its text when it does not parse (never for rows stored here).
ojson Embedded(const std::string& text, ojson empty) {
  if (text.empty()) return empty;
  ojson j = ojson::parse(text, nullptr, false);
  return j.is_discarded() ? ojson(text) : j;
}

}  // namespace

ojson OpSweepJson(const OpSweepInfo& s) {
  return {{"op_sweep_id", s.op_sweep_id},
          {"created_at", s.created_at},
          {"finished_at", s.finished_at},
          {"target", s.target},
          {"mode", s.mode},
          {"backend", s.backend},
          {"dtypes", s.dtypes},
          {"max_samples", s.max_samples},
          {"check_skips", s.check_skips},
          {"torch_version", s.torch_version},
          {"python_version", s.python_version},
          {"host", s.host},
          {"planned", s.planned},
          {"recorded", s.recorded}};
}

ojson OpCountsJson(const OpCounts& counts) {
  ojson categories = ojson::object();
  for (OpCategory c : AllOpCategories()) {
    auto it = counts.by_category.find(c);
    categories[std::string(OpCategoryName(c))] = it == counts.by_category.end() ? 0 : it->second;
  }
  ojson by_source = ojson::object();
  for (const auto& [source, n] : counts.skipped_by_source) by_source[source] = n;
  return {{"total", counts.total},
          {"categories", categories},
          {"skipped_by_source", by_source},
          {"stale", counts.stale}};
}

ojson OpRowJson(const OpRow& row) {
  const OpResult& r = *row.result;
  return {{"key", r.Key()},
          {"op", r.op},
          {"variant", r.variant},
          {"dtype", r.dtype},
          {"target", r.target},
          {"mode", r.mode},
          {"category", std::string(OpCategoryName(CategoryOf(r)))},
          {"status", std::string(TestStatusName(r.status))},
          {"detail", r.detail},
          {"samples", r.samples},
          {"passed", r.passed},
          {"failed", r.failed},
          {"errored", r.errored},
          {"timed_out", r.timed_out},
          {"first_failure", r.first_failure},
          {"error_type", r.error_type},
          {"signature", r.signature},
          {"max_abs_err", Optional(r.max_abs_err)},
          {"max_rel_err", Optional(r.max_rel_err)},
          {"atol", Optional(r.atol)},
          {"rtol", Optional(r.rtol)},
          {"tol_source", r.tol_source},
          {"ref_dtype", r.ref_dtype},
          {"fallback_audit", r.fallback_audit},
          {"aten_ops", Embedded(r.aten_ops, ojson::array())},
          {"fallback_ops", Embedded(r.fallback_ops, ojson::object())},
          {"skip_source", r.skip_source},
          {"skip_kind", r.skip_kind},
          {"skip_reason", r.skip_reason},
          {"stale_skip", IsStaleSkip(r)},
          {"models", row.models},
          {"wall_s", r.wall_s}};
}

ojson OpSweepReportJson(const OpSweepInfo& sweep, const OpCounts& counts,
                        const std::vector<OpRow>& rows) {
  ojson cases = ojson::array();
  for (const OpRow& row : rows) cases.push_back(OpRowJson(row));
  return {{"op_sweep", OpSweepJson(sweep)}, {"counts", OpCountsJson(counts)}, {"cases", cases}};
}

}  // namespace compatlab
