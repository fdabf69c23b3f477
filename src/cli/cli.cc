#include "cli/cli.h"

#include "CLI/CLI.hpp"

namespace compatlab {

int RunCli(int argc, char** argv) {
  CLI::App app{"compatlab: model compatibility and performance lab"};
  CLI11_PARSE(app, argc, argv);
  return 0;
}

}  // namespace compatlab
