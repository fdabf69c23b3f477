#include "cli/import_store.h"

#include <filesystem>
#include <iostream>
#include <iterator>

#include "cli/common.h"
#include "fmt/format.h"
#include "store/store.h"

namespace compatlab {

namespace fs = std::filesystem;

absl::StatusOr<std::vector<RunRecord>> ReadStoreRuns(const std::vector<std::string>& sources,
                                                     const std::string& target) {
  std::vector<RunRecord> runs;
  for (const std::string& source : sources) {
    std::error_code ec;
    if (fs::exists(target, ec) && fs::equivalent(source, target, ec)) {
      return absl::InvalidArgumentError(fmt::format("{} is the target store itself", source));
    }
    auto store = Store::Open(source, OpenMode::kReadOnly);
    if (!store.ok()) return store.status();
    auto read = (*store)->QueryRuns(RunFilter{});
    if (!read.ok()) return read.status();
    runs.insert(runs.end(), std::make_move_iterator(read->begin()),
                std::make_move_iterator(read->end()));
  }
  return runs;
}

int MergeImportedRuns(const std::vector<RunRecord>& runs, const std::string& db,
                      const std::string& args, const std::string& from) {
  auto store = Store::Open(db, OpenMode::kReadWriteCreate);
  if (!store.ok()) return Fail(kExitBadInput, store.status());
  auto merged = (*store)->MergeRuns(runs, args);
  if (!merged.ok()) {
    const bool conflict = merged.status().code() == absl::StatusCode::kAlreadyExists ||
                          merged.status().code() == absl::StatusCode::kInvalidArgument;
    Fail(conflict ? kExitBadInput : kExitFailure, merged.status());
    return Fail(conflict ? kExitBadInput : kExitFailure, "nothing imported");
  }
  std::cout << fmt::format(
      "imported {} runs from {} into {} ({} already present; {} sweeps created)\n",
      merged->inserted, from, db, merged->already_present, merged->sweeps_created);
  return kExitOk;
}

int RunImportFromStores(const std::vector<std::string>& sources, const std::string& db,
                        const std::string& command_line) {
  // Every source is read before the target is even opened: a bad source
  // leaves no trace, not even a new empty store.
  auto runs = ReadStoreRuns(sources, db);
  if (!runs.ok()) return Fail(kExitBadInput, runs.status());
  return MergeImportedRuns(*runs, db, command_line, fmt::format("{} stores", sources.size()));
}

}  // namespace compatlab
