// `compatlab fields`: the result field table (core/fields.h) for people and
// tests: each field's type, unit, schema version, where the test child
// reports it, and which passing runs must fill it (the fill matrix).
#ifndef COMPATLAB_CLI_FIELDS_H_
#define COMPATLAB_CLI_FIELDS_H_

#include <string>

#include "CLI/CLI.hpp"

namespace compatlab {

struct FieldsFlags {
  std::string format = "table";  // table or json
};

// Adds the `fields` subcommand to `app`; its options fill `flags`.
CLI::App* AddFieldsCommand(CLI::App& app, FieldsFlags& flags);

// Prints the field table. Exit codes as in cli/common.h.
int RunFields(const FieldsFlags& flags);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_FIELDS_H_
