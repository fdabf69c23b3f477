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
  std::string publish_dir;    // --publish: the files, the card, scrubbed
  bool keep_private = false;  // --keep-private: with --publish, nothing scrubbed
  std::string license = "cc-by-4.0";
  bool traces = false;  // --traces
  RunFilterFlags filter;
};

// Adds the `export` subcommand to `app`; its options fill `flags`.
CLI::App* AddExportCommand(CLI::App& app, ExportFlags& flags);

// Writes the matching runs under flags.parquet_dir, or publishes them under
// flags.publish_dir. Exit codes as in cli/common.h.
int RunExport(const ExportFlags& flags);

struct ImportFlags {
  std::string db = "compatlab.db";
  std::vector<std::string> paths;
  std::string command_line;  // recorded as the args of the sweeps it creates
  bool from_store = false;   // the paths are compatlab stores, not Parquet
  std::string from_hub;      // ORG/NAME[@REVISION]: a published dataset, no paths
  std::string python;        // --python: the interpreter of the Hub helper
};

// Adds the `import` subcommand to `app`; its options fill `flags`.
CLI::App* AddImportCommand(CLI::App& app, ImportFlags& flags);

// Imports the Parquet files under flags.paths into flags.db (created if
// missing). A rejected file: one line on stderr each, nothing imported, exit 2.
// With flags.from_store the paths are stores (ImportStoresIntoStore); with
// flags.from_hub the files of that published dataset, downloaded into the
// Hub cache (DownloadDataset).
int RunImport(const ImportFlags& flags);

struct PublishFlags {
  std::string dir;
  std::string repo;
  std::string revision;
  std::string python;
};

// Adds the `publish` subcommand to `app`; its options fill `flags`.
CLI::App* AddPublishCommand(CLI::App& app, PublishFlags& flags);

// Uploads flags.dir (written by `export --publish`) to the Hub's dataset repo
// flags.repo. Exit 2 for bad input, 1 when the Hub refused or was unreachable.
int RunPublish(const PublishFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_EXPORT_H_
