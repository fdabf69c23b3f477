// `compatlab export` (the Parquet dataset, one file per stack) and
// `compatlab import` (such files merged into a store). doc/dataset.md.
#ifndef COMPATLAB_CLI_EXPORT_H_
#define COMPATLAB_CLI_EXPORT_H_

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "cli/query.h"

namespace compatlab {

struct ExportFlags {
  std::string db = "compatlab.db";
  std::string parquet_dir;
  bool traces = false;  // --traces
  RunFilterFlags filter;
};

// Adds the `export` subcommand to `app`; its options fill `flags`.
CLI::App* AddExportCommand(CLI::App& app, ExportFlags& flags);

// Writes the matching runs under flags.parquet_dir. Exit codes as in cli/common.h.
int RunExport(const ExportFlags& flags);

struct ImportFlags {
  std::string db = "compatlab.db";
  std::vector<std::string> paths;
  std::string command_line;  // recorded as the args of the sweeps it creates
  bool from_store = false;   // the paths are compatlab stores, not Parquet
};

// Adds the `import` subcommand to `app`; its options fill `flags`.
CLI::App* AddImportCommand(CLI::App& app, ImportFlags& flags);

// Imports the Parquet files under flags.paths into flags.db (created if
// missing). A rejected file: one line on stderr each, nothing imported, exit 2.
// With flags.from_store the paths are stores (ImportStoresIntoStore).
int RunImport(const ImportFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_EXPORT_H_
