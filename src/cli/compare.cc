#include "cli/compare.h"

#include <iostream>

#include "cli/common.h"
#include "query/variant_compare.h"

namespace compatlab {

int RunCompareCommand(const CompareFlags& flags) {
  if (flags.format != "table" && flags.format != "json") {
    return Fail(kExitBadInput, "--format " + flags.format + ": not table or json");
  }
  VariantCompareOptions options;
  options.db = flags.db;
  options.base = flags.base;
  options.head = flags.head;
  options.json = flags.format == "json";
  options.thresholds = flags.thresholds;
  absl::StatusOr<std::string> text = RunVariantCompare(options);
  if (!text.ok()) return Fail(ExitCodeOf(text.status()), text.status());
  std::cout << *text;
  return kExitOk;
}

}  // namespace compatlab
