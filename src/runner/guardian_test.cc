#include "runner/guardian.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace compatlab {
namespace {

// True once `pid` no longer runs. A zombie counts as gone (and is reaped if it
// is ours: an earlier test may have made this process a child subreaper).
bool WaitGone(pid_t pid, double seconds) {
  for (int i = 0; i < static_cast<int>(seconds * 100); ++i) {
    waitpid(pid, nullptr, WNOHANG);
    if (kill(pid, 0) != 0) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    size_t paren = line.rfind(')');
    if (paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z')
      return true;
    usleep(10000);
  }
  return false;
}

TEST(GuardianTest, KillsTrackedGroupsWhenItsOwnerDies) {
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  pid_t owner = fork();
  ASSERT_GE(owner, 0);
  if (owner == 0) {
    // The "supervisor": starts a guardian and a victim in its own group.
    auto guardian = Guardian::Start();
    if (!guardian.ok()) _exit(1);
    pid_t victim = fork();
    if (victim == 0) {
      setpgid(0, 0);
      while (true) pause();
    }
    setpgid(victim, victim);
    guardian->TrackGroup(victim);
    pid_t pids[2] = {victim, guardian->pid()};
    if (write(report[1], pids, sizeof(pids)) != sizeof(pids)) _exit(1);
    while (true) pause();
  }
  close(report[1]);
  pid_t pids[2];
  ASSERT_EQ(read(report[0], pids, sizeof(pids)), static_cast<ssize_t>(sizeof(pids)));
  close(report[0]);
  ASSERT_EQ(kill(pids[0], 0), 0);
  kill(owner, SIGKILL);
  waitpid(owner, nullptr, 0);
  // The victim was reparented away from us, so it cannot linger as our zombie.
  EXPECT_TRUE(WaitGone(pids[0], 5))
      << "victim survived its supervisor; guardian alive: " << (kill(pids[1], 0) == 0);
  EXPECT_TRUE(WaitGone(pids[1], 5)) << "guardian did not exit";
}

TEST(GuardianTest, QuitsQuietlyWhenDestroyed) {
  pid_t victim = fork();
  if (victim == 0) {
    setpgid(0, 0);
    while (true) pause();
  }
  setpgid(victim, victim);
  {
    auto guardian = Guardian::Start();
    ASSERT_TRUE(guardian.ok());
    guardian->TrackGroup(victim);
  }
  usleep(100000);
  EXPECT_EQ(kill(victim, 0), 0) << "a clean exit must not kill tracked groups";
  kill(victim, SIGKILL);
  waitpid(victim, nullptr, 0);
}

}  // namespace
}  // namespace compatlab
