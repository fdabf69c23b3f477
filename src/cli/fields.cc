#include "cli/fields.h"

#include <iostream>
#include <string_view>
#include <vector>

#include "cli/common.h"
#include "core/fields.h"
#include "nlohmann/json.hpp"
#include "query/text_table.h"

namespace compatlab {
namespace {

using nlohmann::ordered_json;

std::string_view GroupName(FieldGroup group) {
  switch (group) {
    case FieldGroup::kRow:
      return "row";
    case FieldGroup::kSpec:
      return "spec";
    case FieldGroup::kResult:
      return "result";
    case FieldGroup::kContext:
      return "context";
  }
  return "";
}

// The object of the child's result object that holds the field: "result"
// (the object itself), "metrics", "stack"; "" when the child does not report it.
std::string_view SectionName(ChildSection section) {
  switch (section) {
    case ChildSection::kNone:
      return "";
    case ChildSection::kTop:
      return "result";
    case ChildSection::kMetrics:
      return "metrics";
    case ChildSection::kStack:
      return "stack";
  }
  return "";
}

std::vector<std::string_view> WhenNames(const FillRule& rule) {
  std::vector<std::string_view> names;
  for (FillWhen when : rule.when) names.push_back(FillWhenName(when));
  return names;
}

ordered_json FieldsJson() {
  ordered_json fields = ordered_json::array();
  for (const FieldDef& f : ResultFields()) {
    ordered_json fill = ordered_json::array();
    for (const FillRule& rule : f.fill) {
      fill.push_back({{"kinds", rule.kinds}, {"modes", rule.modes}, {"when", WhenNames(rule)}});
    }
    fields.push_back({{"name", f.name},
                      {"group", GroupName(f.group)},
                      {"type", DocTypeName(f)},
                      // A curve's Parquet list type (doc/dataset.md, "List columns"); "" if none.
                      {"list", ListKindName(f.list)},
                      {"unit", f.unit},
                      {"since_version", f.since_version},
                      {"child_section", SectionName(f.child)},
                      {"child_key", f.child_key},
                      {"fill", std::move(fill)},
                      {"description", f.description}});
  }
  return {{"schema_version", kSchemaVersion},
          {"conditions",
           [] {
             std::vector<std::string_view> names;
             for (FillWhen when : AllFillWhens()) names.push_back(FillWhenName(when));
             return names;
           }()},
          {"fields", std::move(fields)}};
}

std::string Join(const std::vector<std::string_view>& parts, std::string_view separator) {
  std::string text;
  for (std::string_view part : parts) {
    if (!text.empty()) text += separator;
    text += part;
  }
  return text;
}

// "forward,generate,train x eager,compile [compared]; ...", or "-".
std::string FillText(const std::vector<FillRule>& fill) {
  std::vector<std::string> rules;
  for (const FillRule& rule : fill) {
    std::string text = Join(rule.kinds, ",") + " x " + Join(rule.modes, ",");
    if (!rule.when.empty()) text += " [" + Join(WhenNames(rule), ",") + "]";
    rules.push_back(std::move(text));
  }
  return rules.empty() ? "-" : Join({rules.begin(), rules.end()}, "; ");
}

}  // namespace

CLI::App* AddFieldsCommand(CLI::App& app, FieldsFlags& flags) {
  CLI::App* command = app.add_subcommand(
      "fields",
      "The result fields: types, where the probe reports them, which runs must fill them");
  command->add_option("--format", flags.format, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  return command;
}

int RunFields(const FieldsFlags& flags) {
  if (flags.format == "json") {
    std::cout << FieldsJson().dump(2) << "\n";
    return kExitOk;
  }
  TextTable table({{"field", TextTable::kLeft},
                   {"type", TextTable::kLeft},
                   {"unit", TextTable::kLeft},
                   {"since", TextTable::kRight},
                   {"child key", TextTable::kLeft},
                   {"must fill (passing runs: kinds x modes [conditions])", TextTable::kLeft}});
  for (const FieldDef& f : ResultFields()) {
    std::string key;
    if (f.child != ChildSection::kNone)
      key = std::string(SectionName(f.child)) + "." + std::string(f.child_key);
    table.AddRow({std::string(f.name), DocTypeName(f), std::string(f.unit),
                  std::to_string(f.since_version), key.empty() ? "-" : key, FillText(f.fill)});
  }
  std::cout << table.Render();
  return kExitOk;
}

}  // namespace compatlab
