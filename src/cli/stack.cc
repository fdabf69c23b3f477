#include "cli/stack.h"

#include <iostream>

#include "cli/common.h"
#include "query/text_table.h"
#include "stack/stack.h"
#include "util/fs.h"

namespace compatlab {
namespace {

StackHome Home() { return StackHomeOf(ProjectHome(), ResolveProbeEnv("").python); }

// A package's version in `stack`, or "-".
std::string VersionIn(const StackRecord& stack, const std::string& name) {
  auto it = stack.resolved.find(name);
  return it == stack.resolved.end() ? "-" : it->second;
}

// The table of `stack ls`: name, env, torch, transformers, packages, interpreter.
std::string StackList(const std::vector<StackRecord>& stacks) {
  TextTable table({{"stack", TextTable::kLeft},
                   {"env", TextTable::kLeft},
                   {"torch", TextTable::kLeft},
                   {"transformers", TextTable::kLeft},
                   {"packages", TextTable::kRight},
                   {"python", TextTable::kLeft}});
  for (const StackRecord& s : stacks) {
    table.AddRow({s.name, s.env_id.empty() ? "-" : s.env_id, VersionIn(s, "torch"),
                  VersionIn(s, "transformers"), std::to_string(s.resolved.size()),
                  s.python.string()});
  }
  return table.Render();
}

int RunStackAdd(const StackFlags& flags) {
  absl::StatusOr<StackRequest> request = ParseStackRequest(flags.name, flags.pins);
  if (!request.ok()) return Fail(kExitBadInput, request.status());
  absl::StatusOr<StackRecord> record = AddStack(Home(), *request, [](const std::string& line) {
    std::cerr << "stack add: " << line << "\n";
  });
  if (!record.ok()) return Fail(ExitCodeOf(record.status()), record.status());
  std::cout << "stack " << record->name << ": env " << record->env_id << ", torch "
            << VersionIn(*record, "torch") << ", transformers "
            << VersionIn(*record, "transformers") << ", " << record->resolved.size()
            << " packages (" << record->python.string() << ")\n";
  return kExitOk;
}

}  // namespace

CLI::App* AddStackCommand(CLI::App& app, StackFlags& flags) {
  CLI::App* cmd = app.add_subcommand(
      "stack", "Software stacks to sweep on: add (a venv made with pip), ls, rm");
  cmd->require_subcommand(1);
  flags.add = cmd->add_subcommand("add",
                                  "Make the stack NAME from pinned packages "
                                  "(torch==V transformers==V [pkg==V ...])");
  flags.add->add_option("name", flags.name, "the stack's name")->required();
  flags.add->add_option("pins", flags.pins, "NAME==VERSION of torch, transformers and others")
      ->required();
  flags.ls =
      cmd->add_subcommand("ls", "List the stacks, default (the project's environment) first");
  flags.rm = cmd->add_subcommand("rm", "Remove a stack (its environment unless another uses it)");
  flags.rm->add_option("name", flags.name, "the stack's name")->required();
  return cmd;
}

int RunStack(const StackFlags& flags) {
  if (flags.add->parsed()) return RunStackAdd(flags);
  if (flags.rm->parsed()) {
    absl::Status removed = RemoveStack(Home(), flags.name);
    if (!removed.ok()) return Fail(ExitCodeOf(removed), removed);
    std::cout << "stack " << flags.name << " removed\n";
    return kExitOk;
  }
  absl::StatusOr<std::vector<StackRecord>> stacks = ListStacks(Home());
  if (!stacks.ok()) return Fail(ExitCodeOf(stacks.status()), stacks.status());
  std::cout << StackList(*stacks);
  return kExitOk;
}

}  // namespace compatlab
