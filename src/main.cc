// compatlab entry point; everything lives in the modules under src/.
#include "cli/cli.h"

int main(int argc, char** argv) { return compatlab::RunCli(argc, argv); }
