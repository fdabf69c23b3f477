#include "core/limits.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace compatlab {
namespace {

TEST(LimitsTest, ImportedRunWithinTheLimitsIsAccepted) {
  const absl::StatusOr<int64_t> empty = CheckImportedRun(RunRecord{});
  ASSERT_TRUE(empty.ok()) << empty.status();
  RunRecord run;
  run.result.stdout_tail = std::string(64 << 10, 'x');
  absl::StatusOr<int64_t> size = CheckImportedRun(run);
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(*size, *empty + (64 << 10));
}

TEST(LimitsTest, StoredIdsAreCheckedForCharactersAndLength) {
  for (const std::string& id : std::vector<std::string>{"20261205T141500Z-abc123", "bomb-0-1",
                                                        "a.b_c", std::string(128, 'f')}) {
    EXPECT_TRUE(CheckStoredId(id, "sweep id").ok()) << id;
  }
  for (const std::string& id :
       std::vector<std::string>{"", ".", "..", "x/../../victim", "a..b", "a b",
                                std::string("a\0b", 3), std::string(129, 'f'), "caf\xc3\xa9"}) {
    absl::Status s = CheckStoredId(id, "sweep id");
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << id;
  }
  const absl::Status s = CheckStoredId("x/\x1b[2J", "run id");
  EXPECT_EQ(s.message().substr(0, 24), "run id 'x/\\x1b[2J' is no");
}

TEST(LimitsTest, OneFieldOverItsLimitIsRefusedByName) {
  RunRecord run;
  run.result.error_message = std::string(kMaxImportTextBytes + 1, 'x');
  absl::Status status = CheckImportedRun(run).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("field error_message"), std::string::npos) << status;
}

TEST(LimitsTest, FieldsTogetherOverTheRowLimitAreRefused) {
  RunRecord run;
  const std::string big(kMaxImportTextBytes, 'x');
  run.result.stdout_tail = big;
  run.result.stderr_tail = big;
  run.result.error_traceback = big;
  run.result.error_message = big;
  run.host = "h";
  absl::Status status = CheckImportedRun(run).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("per run"), std::string::npos) << status;
}

TEST(LimitsTest, TruncationKeepsUtf8WholeAndSaysHowMuchIsLeftOut) {
  EXPECT_EQ(TruncateForDisplay("short", 10), "short");
  // "é" is two bytes: a cut inside it backs up to its first byte.
  EXPECT_EQ(TruncateForDisplay("aé", 2), "a [... 2 more bytes]");
  EXPECT_EQ(TruncateForDisplay(std::string(20, 'x'), 4), "xxxx [... 16 more bytes]");
}

TEST(LimitsTest, DurationsMustBeFiniteAndBounded) {
  EXPECT_TRUE(CheckDuration(2, "--grace", true).ok());
  EXPECT_TRUE(CheckDuration(0, "--grace", true).ok());
  EXPECT_FALSE(CheckDuration(0, "--timeout", false).ok());
  EXPECT_FALSE(CheckDuration(std::numeric_limits<double>::infinity(), "--timeout", false).ok());
  EXPECT_FALSE(CheckDuration(std::nan(""), "--grace", true).ok());
  EXPECT_FALSE(CheckDuration(kMaxDurationS * 2, "--grace", true).ok());
  EXPECT_FALSE(CheckDuration(-1, "--grace", true).ok());
}

}  // namespace
}  // namespace compatlab
