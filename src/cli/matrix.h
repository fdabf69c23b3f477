// `compatlab matrix`: models x (target, mode), one current verdict per cell
// within one stack selection, as a table, JSON or CSV (doc/matrix.md).
#ifndef COMPATLAB_CLI_MATRIX_H_
#define COMPATLAB_CLI_MATRIX_H_

#include <string>

#include "CLI/CLI.hpp"
#include "cli/query.h"

namespace compatlab {

struct MatrixFlags {
  std::string db = "compatlab.db";
  RunFilterFlags filter;
  std::string stack = "newest";
  std::string stacks;  // --stacks default,NAME: named stacks side by side
  std::string format = "table";
};

// Adds the `matrix` subcommand to `app`: --db, query's filters, --stack, --stacks,
// --format.
CLI::App* AddMatrixCommand(CLI::App& app, MatrixFlags& flags);

// Prints the matrix. Exit codes as in cli/common.h: 2 for a bad filter or
// stack, an unknown sweep or a store that cannot be opened.
int RunMatrix(const MatrixFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_MATRIX_H_
