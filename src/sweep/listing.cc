#include "sweep/listing.h"

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/records.h"
#include "nlohmann/json.hpp"
#include "plan/suite.h"
#include "plan/target.h"
#include "query/text_table.h"
#include "store/record_json.h"

namespace compatlab {

absl::StatusOr<std::string> TargetsTable(const std::filesystem::path& home) {
  const std::filesystem::path dir = home / "targets";
  TextTable table({{"target", TextTable::kLeft},
                   {"device", TextTable::kLeft},
                   {"backend", TextTable::kLeft},
                   {"compile options", TextTable::kLeft},
                   {"modes", TextTable::kLeft},
                   {"lowering", TextTable::kLeft},
                   {"verified", TextTable::kLeft},
                   {"description", TextTable::kLeft}});
  for (const std::string& name : ListTargetNames(dir)) {
    absl::StatusOr<TargetProfile> profile = LoadTargetProfile(name, dir);
    if (!profile.ok()) return absl::InvalidArgumentError(profile.status().message());
    const std::string lowering =
        absl::c_linear_search(profile->modes, kModeExport)
            ? (profile->lowering.empty() ? "torch.export" : profile->lowering)
            : "-";
    table.AddRow({profile->name, profile->device, profile->backend.empty() ? "-" : profile->backend,
                  profile->backend.empty() ? "-" : profile->compile_options_json,
                  absl::StrJoin(profile->modes, ","), lowering, profile->verified ? "yes" : "no",
                  profile->description});
  }
  return table.Render();
}

absl::StatusOr<std::string> SuitesTable(const std::filesystem::path& home) {
  const std::filesystem::path dir = home / "suites";
  TextTable table({{"suite", TextTable::kLeft},
                   {"models", TextTable::kRight},
                   {"kinds", TextTable::kLeft},
                   {"harness tests", TextTable::kRight},
                   {"description", TextTable::kLeft}});
  for (const std::string& name : ListSuiteNames(dir)) {
    absl::StatusOr<Suite> suite = LoadSuite(name, dir);
    if (!suite.ok()) return absl::InvalidArgumentError(suite.status().message());
    int64_t harness = 0;
    for (const HarnessTest& t : suite->tests) harness += t.repeat;
    const size_t count = suite->models.size() + suite->code_models.size();
    std::string models = suite->all_models ? "all registered" : std::to_string(count);
    std::string kinds;
    for (const std::string& k : suite->kinds) kinds += (kinds.empty() ? "" : ",") + k;
    table.AddRow({name, models, count == 0 && !suite->all_models ? "-" : kinds,
                  std::to_string(harness), suite->description});
  }
  return table.Render();
}

namespace {

// The plan's tests as a JSON array of specs, each with its test_id.
std::string PlanJson(const ResolvedPlan& plan) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const ResolvedTest& t : plan.tests) {
    nlohmann::ordered_json obj = TestSpecJson(t.spec);
    obj["test_id"] = t.spec.TestId();
    out.push_back(std::move(obj));
  }
  return out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

// The plan's tests as a terminal table, one row each.
std::string PlanTable(const ResolvedPlan& plan) {
  TextTable table({{"test_id", TextTable::kLeft},
                   {"model_id", TextTable::kLeft},
                   {"model_class", TextTable::kLeft},
                   {"target", TextTable::kLeft},
                   {"mode", TextTable::kLeft},
                   {"kind", TextTable::kLeft},
                   {"dtype", TextTable::kLeft},
                   {"batch", TextTable::kRight},
                   {"seq", TextTable::kRight},
                   {"timeout_s", TextTable::kRight}});
  for (const ResolvedTest& t : plan.tests) {
    const TestSpec& s = t.spec;
    std::string params;
    for (const auto& [k, v] : s.kind_params) params += absl::StrCat(" ", k, "=", v);
    table.AddRow({s.TestId().substr(0, 12), s.model_id, s.model_class, s.target, s.mode,
                  s.kind + params, s.dtype, std::to_string(s.batch_size), std::to_string(s.seq_len),
                  absl::StrCat(s.timeout_s)});
  }
  return table.Render();
}

}  // namespace

absl::StatusOr<std::string> SuitePlanListing(const PlanRequest& request,
                                             const std::filesystem::path& home,
                                             ListingFormat format, size_t* count) {
  absl::StatusOr<ResolvedPlan> plan = LoadPlan(request, home);
  if (!plan.ok()) return plan.status();
  *count = plan->tests.size();
  return format == ListingFormat::kJson ? PlanJson(*plan) : PlanTable(*plan);
}

}  // namespace compatlab
