#include "server/static_files.h"

#include <fstream>

#include "gtest/gtest.h"
#include "store/testing.h"

namespace compatlab {
namespace {

namespace fs = std::filesystem;

class StaticFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    web_ = temp_.path() / "web";
    vendor_ = temp_.path() / "vendor";
    fs::create_directories(web_ / "sub");
    fs::create_directories(vendor_);
    std::ofstream(web_ / "index.html") << "index";
    std::ofstream(web_ / "app.js") << "js";
    std::ofstream(web_ / "sub" / "index.html") << "sub";
    std::ofstream(vendor_ / "chart.umd.js") << "chart";
    std::ofstream(temp_.path() / "secret.txt") << "secret";
    mounts_ = {{"/", web_}, {"/vendor/", vendor_}};
  }

  std::string Found(std::string_view path) {
    std::optional<fs::path> file = FindStaticFile(mounts_, path);
    return file ? fs::relative(*file, temp_.path()).string() : "";
  }

  test::ScopedTempDir temp_;
  fs::path web_, vendor_;
  std::vector<StaticMount> mounts_;
};

TEST_F(StaticFilesTest, PathsMapToFilesOfTheirMount) {
  EXPECT_EQ(Found("/"), "web/index.html");
  EXPECT_EQ(Found("/app.js"), "web/app.js");
  EXPECT_EQ(Found("/sub/"), "web/sub/index.html");
  EXPECT_EQ(Found("/sub/../app.js"), "web/app.js");
  EXPECT_EQ(Found("/vendor/chart.umd.js"), "vendor/chart.umd.js");
}

TEST_F(StaticFilesTest, NothingOutsideTheFoldersNorFolders) {
  const std::vector<std::string_view> outside = {"/../secret.txt",
                                                 "/sub/../../secret.txt",
                                                 "/vendor/../secret.txt",
                                                 "/vendor/../../secret.txt",
                                                 "/....//secret.txt",
                                                 "/sub",
                                                 "/nope",
                                                 "/vendorchart.umd.js",
                                                 "/vendor",
                                                 std::string_view("/app.js\0x", 9)};
  for (std::string_view path : outside) {
    EXPECT_EQ(Found(path), "") << path;
  }
}

TEST(StaticContentTypeTest, ByExtensionInAnyCase) {
  EXPECT_EQ(StaticContentType("a/index.html"), "text/html");
  EXPECT_EQ(StaticContentType("a/search.js"), "text/javascript");
  EXPECT_EQ(StaticContentType("a/style.CSS"), "text/css");
  EXPECT_EQ(StaticContentType("a/shot.png"), "image/png");
  EXPECT_EQ(StaticContentType("a/chart.umd.js.map"), "application/json");
  EXPECT_EQ(StaticContentType("a/Makefile"), "");
  EXPECT_EQ(StaticContentType("a/file.unknown"), "");
}

}  // namespace
}  // namespace compatlab
