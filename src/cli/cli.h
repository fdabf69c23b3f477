// The command-line front end: parses flags, calls the modules, prints.
#ifndef COMPATLAB_CLI_CLI_H_
#define COMPATLAB_CLI_CLI_H_

namespace compatlab {

// Runs the compatlab command line; returns the process exit code
// (0 success, 1 failure of the work itself, 2 bad input).
int RunCli(int argc, char** argv);

}  // namespace compatlab

#endif  // COMPATLAB_CLI_CLI_H_
