// `compatlab ops`: op coverage (doc/ops.md). `ops run` runs PyTorch's OpInfo
// database on a target and mode; `ops show` prints a stored op sweep's counts
// and table, weighted by the stored models that use each op; `ops diff`
// compares two sides.
#ifndef COMPATLAB_CLI_OPS_H_
#define COMPATLAB_CLI_OPS_H_

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "ops/ops.h"

namespace compatlab {

struct OpsRunFlags {
  std::string db = "compatlab.db";
  std::string target = "cpu";
  bool allow_profile_paths = false;
  std::string mode = "eager";
  std::string backend;
  std::vector<std::string> dtypes = {"float32"};
  std::vector<std::string> ops;
  int64_t limit = 0;
  std::string shard;  // "I/N"
  int64_t max_samples = 8;
  int64_t batch_size = 16;
  double op_timeout_s = 60;
  int jobs = 1;
  bool check_skips = false;
  std::string python;
};

struct OpsShowFlags {
  std::string db = "compatlab.db";
  std::string op_sweep;  // "" = the latest
  std::vector<std::string> categories;
  size_t limit = 50;
  std::string format = "table";  // table or json
};

struct OpsDiffFlags {
  std::string db = "compatlab.db";
  std::string base_db;  // "" = db
  std::string base;
  std::string head;
  bool fail_on_regression = false;
};

struct OpsFlags {
  OpsRunFlags run;
  OpsShowFlags show;
  OpsDiffFlags diff;
  std::string command_line;
  CLI::App* run_cmd = nullptr;
  CLI::App* show_cmd = nullptr;
  CLI::App* diff_cmd = nullptr;
};

// Adds the `ops` subcommand (with run, show and diff) to `app`; options fill `flags`.
CLI::App* AddOpsCommand(CLI::App& app, OpsFlags& flags);

// Exit codes: 0 done; 1 the run failed, or `diff --fail-on-regression` found a
// newly failing op; 2 bad input; 130 interrupted.
int RunOpsCommand(const OpsFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_OPS_H_
