#include "export/card.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/fields.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "store/testing.h"

namespace compatlab {
namespace {

using test::MakeRun;
using test::MakeSpec;

RunRecord CardRun(const std::string& model, const std::string& torch,
                  const std::string& stack = "") {
  RunRecord run = MakeRun("s1", MakeSpec(model));
  run.result.torch_version = torch;
  run.result.transformers_version = "5.23.0";
  run.result.stack_versions = stack;
  return run;
}

std::string DocText(const std::string& name) {
  const char* source_dir = std::getenv("COMPATLAB_SOURCE_DIR");
  EXPECT_NE(source_dir, nullptr) << "COMPATLAB_SOURCE_DIR is not set";
  std::ifstream file(std::filesystem::path(source_dir ? source_dir : ".") / "doc" / name);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

TEST(CardConfigsTest, OnePerStackFileNamedAsTheHubTakes) {
  const std::vector<CardConfig> configs = CardConfigs(
      {CardRun("llama", "2.13.0+cpu"), CardRun("gpt2", "2.13.0+cpu"), CardRun("gpt2", "2.13.0-cpu"),
       CardRun("bert", "2.13.0+cpu", R"({"onnx":"1.2"})")});
  ASSERT_EQ(configs.size(), 3u);  // by path: '+' < '-' < '.'
  EXPECT_EQ(configs[0].stack_versions, R"({"onnx":"1.2"})");
  EXPECT_EQ(configs[0].name.rfind("torch-2.13.0-cpu--transformers-5.23.0-stack-", 0), 0u);
  EXPECT_EQ(configs[1].file.generic_string(), "torch-2.13.0+cpu/transformers-5.23.0.parquet");
  EXPECT_EQ(configs[1].name, "torch-2.13.0-cpu--transformers-5.23.0");
  EXPECT_EQ(configs[1].runs, 2);
  // 2.13.0-cpu's file would take 2.13.0+cpu's name: it gets its path's hash.
  EXPECT_EQ(configs[2].file.generic_string(), "torch-2.13.0-cpu/transformers-5.23.0.parquet");
  EXPECT_EQ(configs[2].name.size(), configs[1].name.size() + 9);
  EXPECT_EQ(configs[2].name.rfind(configs[1].name + "-", 0), 0u);
  for (const CardConfig& config : configs) {
    EXPECT_EQ(config.name.find_first_not_of(
                  "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"),
              std::string::npos)
        << config.name;
  }
}

TEST(DatasetCardTest, HeaderHasEveryConfigTheDefaultLicenseAndTags) {
  CardOptions options;
  options.license = "mit";
  const std::string card =
      DatasetCard({CardRun("llama", "2.13.0+cpu"), CardRun("gpt2", "2.12.0")}, options);
  ASSERT_EQ(card.rfind("---\nlicense: mit\n", 0), 0u) << card.substr(0, 200);
  const std::string header = card.substr(0, card.find("\n---\n") + 5);
  EXPECT_NE(header.find("tags:\n- compatlab\n"), std::string::npos);
  EXPECT_NE(header.find("- config_name: all\n  data_files:\n  - split: train\n    path: "
                        "\"torch-*/*.parquet\"\n  default: true\n"),
            std::string::npos);
  EXPECT_NE(header.find("- config_name: torch-2.12.0--transformers-5.23.0\n  data_files:\n"
                        "  - split: train\n    path: \"torch-2.12.0/transformers-5.23.0.parquet\""),
            std::string::npos);
  EXPECT_NE(header.find("path: \"torch-2.13.0+cpu/transformers-5.23.0.parquet\""),
            std::string::npos);
  EXPECT_EQ(header.find("default: true"), header.rfind("default: true"));
}

TEST(DatasetCardTest, BodyListsEveryColumnStatusAndThePassRule) {
  const std::string card = DatasetCard({CardRun("llama", "2.13.0+cpu")}, {});
  for (const FieldDef& field : ResultFields()) {
    EXPECT_NE(card.find("| `" + std::string(field.name) + "` | "), std::string::npos) << field.name;
  }
  EXPECT_NE(card.find("| `seq_len` | int64 | tokens | "), std::string::npos);
  EXPECT_NE(card.find("| `build_s` | double, nullable | s | "), std::string::npos);
  for (TestStatus status : AllTestStatuses()) {
    EXPECT_NE(
        card.find(fmt::format("| `{}` | {} |", TestStatusName(status), TestStatusMeaning(status))),
        std::string::npos);
  }
  EXPECT_NE(card.find(PassRuleText()), std::string::npos);
  EXPECT_NE(card.find("compatlab repro RUN_ID"), std::string::npos);
}

TEST(DatasetCardTest, SaysWhatWasLeftOut) {
  CardOptions options;
  options.privacy.scrubbed_runs = 3;
  EXPECT_NE(DatasetCard({CardRun("llama", "2.13.0")}, options).find("3 runs were changed"),
            std::string::npos);
  options.privacy.kept = true;
  EXPECT_NE(DatasetCard({CardRun("llama", "2.13.0")}, options).find("`--keep-private`"),
            std::string::npos);
}

TEST(DatasetCardTest, StatusesAndPassRuleAreTheDocs) {
  const std::string doc = DocText("dataset.md");
  for (TestStatus status : AllTestStatuses()) {
    ASSERT_FALSE(TestStatusMeaning(status).empty()) << TestStatusName(status);
    EXPECT_NE(doc.find(fmt::format("\n| `{}` | {} |\n", TestStatusName(status),
                                   TestStatusMeaning(status))),
              std::string::npos)
        << TestStatusName(status) << ": doc/dataset.md's status table says otherwise";
  }
  EXPECT_NE(doc.find(PassRuleText()), std::string::npos)
      << "doc/dataset.md's pass rule differs from the card's";
}

TEST(DatasetCardTest, LicenseIsAHubId) {
  EXPECT_TRUE(CheckLicenseId("cc-by-4.0").ok());
  EXPECT_TRUE(CheckLicenseId("apache-2.0").ok());
  for (const char* bad : {"", "mit\nconfigs:", "a b", "\"x\""}) {
    EXPECT_EQ(CheckLicenseId(bad).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace compatlab
