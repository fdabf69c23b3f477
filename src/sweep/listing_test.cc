#include "sweep/listing.h"

#include <cstdlib>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "store/testing.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

fs::path SourceHome() {
  const char* dir = std::getenv("COMPATLAB_SOURCE_DIR");
  return dir != nullptr ? fs::path(dir) : fs::current_path();
}

TEST(ListingTest, TargetsTableShowsEveryShippedProfile) {
  absl::StatusOr<std::string> table = TargetsTable(SourceHome());
  ASSERT_TRUE(table.ok()) << table.status();
  for (const char* name : {"cpu", "cuda", "neuron", "ctest"}) EXPECT_THAT(*table, HasSubstr(name));
  EXPECT_THAT(*table, HasSubstr("compile options"));
}

TEST(ListingTest, SuitesTableCountsHarnessTests) {
  absl::StatusOr<std::string> table = SuitesTable(SourceHome());
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(*table, HasSubstr("smoke"));
  EXPECT_THAT(*table, HasSubstr("300"));  // noop's 300 harness tests
}

TEST(ListingTest, ABrokenFileIsInvalidArgumentNamingIt) {
  test::ScopedTempDir home;
  fs::create_directories(home.path() / "targets");
  fs::create_directories(home.path() / "suites");
  std::ofstream(home.path() / "targets" / "bad.json") << "{\"name\": \"bad\"";
  std::ofstream(home.path() / "suites" / "worse.json") << "[]";
  absl::StatusOr<std::string> targets = TargetsTable(home.path());
  EXPECT_EQ(targets.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(targets.status().message(), HasSubstr("bad"));
  absl::StatusOr<std::string> suites = SuitesTable(home.path());
  EXPECT_EQ(suites.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(suites.status().message(), HasSubstr("worse"));
}

TEST(ListingTest, SuitePlanListsTheTestsASweepWouldRun) {
  PlanRequest request;
  request.suite = "noop";  // harness tests only: no probe needed
  size_t count = 0;
  absl::StatusOr<std::string> json =
      SuitePlanListing(request, SourceHome(), ListingFormat::kJson, &count);
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(count, 300u);
  const nlohmann::json tests = nlohmann::json::parse(*json);
  ASSERT_EQ(tests.size(), 300u);
  EXPECT_EQ(tests[0]["kind"], "noop");
  EXPECT_EQ(tests[0]["test_id"].get<std::string>().size(), 32u);
  absl::StatusOr<std::string> table =
      SuitePlanListing(request, SourceHome(), ListingFormat::kTable, &count);
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_THAT(*table, HasSubstr("noop rep=299"));

  request.suite = "no-such-suite";
  EXPECT_FALSE(SuitePlanListing(request, SourceHome(), ListingFormat::kTable, &count).ok());
}

}  // namespace
}  // namespace compatlab
