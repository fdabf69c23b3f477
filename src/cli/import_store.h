// `compatlab import`'s store side: runs read elsewhere merged into a store
// (Store::MergeRuns, doc/dataset.md "Import"), and `--from-store`: the runs of
// other compatlab stores (SQLite files, e.g. the one scripts/verify-cuda brings
// back from a machine where compatlab is built without Arrow).
#ifndef COMPATLAB_CLI_IMPORT_STORE_H_
#define COMPATLAB_CLI_IMPORT_STORE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/records.h"

namespace compatlab {

// Every run of the stores at `sources`, each opened read-only (so it must be a
// compatlab store of this schema version). InvalidArgument when a source is
// `target` itself; the store's errors otherwise.
absl::StatusOr<std::vector<RunRecord>> ReadStoreRuns(const std::vector<std::string>& sources,
                                                     const std::string& target);

// Merges `runs` into `db` (created if missing) in one transaction, `args` as
// the args of the sweeps it creates, and prints one line: "imported N runs
// from <from> into <db> (...)". Exit codes as in cli/common.h: 2 for a
// conflicting run (nothing imported), 1 for a store error.
int MergeImportedRuns(const std::vector<RunRecord>& runs, const std::string& db,
                      const std::string& args, const std::string& from);

// `compatlab import --from-store SOURCES... --db DB`: ReadStoreRuns, then
// MergeImportedRuns; a source that cannot be read is exit 2, nothing imported.
int RunImportFromStores(const std::vector<std::string>& sources, const std::string& db,
                        const std::string& command_line);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_IMPORT_STORE_H_
