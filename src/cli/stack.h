// `compatlab stack add NAME torch==V transformers==V [pkg==V ...]`, `stack ls`, `stack rm NAME`:
// the stacks a sweep can run on (stack/stack.h; doc/stacks.md).
#ifndef COMPATLAB_CLI_STACK_H_
#define COMPATLAB_CLI_STACK_H_

#include <string>
#include <vector>

#include "CLI/CLI.hpp"

namespace compatlab {

struct StackFlags {
  CLI::App* add = nullptr;  // which of the three was given: the one parsed
  CLI::App* ls = nullptr;
  CLI::App* rm = nullptr;
  std::string name;
  std::vector<std::string> pins;
};

// Adds the `stack` subcommand (add, ls, rm) to `app`; its options fill `flags`.
CLI::App* AddStackCommand(CLI::App& app, StackFlags& flags);

// Runs the chosen one. Exit codes as in cli/common.h (2: bad input, a name taken or
// unknown, a package that cannot be had).
int RunStack(const StackFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_STACK_H_
