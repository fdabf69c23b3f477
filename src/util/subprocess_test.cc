#include "util/subprocess.h"

#include "gtest/gtest.h"

namespace compatlab {
namespace {

TEST(RunCommandTest, CollectsOutputAndExitCode) {
  auto r = RunCommand({"sh", "-c", "echo out; echo err >&2; exit 3"}, {}, 10);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stdout_text, "out\n");
  EXPECT_EQ(r->stderr_text, "err\n");
  EXPECT_EQ(r->exit_code, 3);
}

TEST(RunCommandTest, PassesExtraEnvironment) {
  auto r = RunCommand({"sh", "-c", "printf %s \"$COMPATLAB_X\""}, {{"COMPATLAB_X", "42"}}, 10);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stdout_text, "42");
}

TEST(RunCommandTest, FeedsInputOnStandardInput) {
  const std::string input(1 << 20, 'x');  // larger than a pipe's buffer
  auto r = RunCommand({"sh", "-c", "wc -c; echo \"$@\"", "sh"}, {}, 10, input);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stdout_text, "1048576\n\n");
  auto empty = RunCommand({"sh", "-c", "wc -c"}, {}, 10);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->stdout_text, "0\n");
}

TEST(RunCommandTest, KillsCommandAfterTimeout) {
  auto r = RunCommand({"sleep", "30"}, {}, 0.2);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(RunCommandTest, MissingProgramIsAnError) {
  EXPECT_FALSE(RunCommand({"/nonexistent/compatlab-prog"}, {}, 5).ok());
}

}  // namespace
}  // namespace compatlab
