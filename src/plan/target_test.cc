#include "plan/target.h"

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "util/fs.h"

namespace compatlab {
namespace {

constexpr char kCuda[] = R"({
  "name": "cuda", "description": "GPUs", "verified": true, "device": "cuda",
  "pythonpath": [], "import": [], "setup": "", "available": "torch.cuda.is_available",
  "synchronize": "torch.cuda.synchronize",
  "memory": {"reset_peak": "torch.cuda.reset_peak_memory_stats",
             "peak": "torch.cuda.max_memory_allocated", "method": "torch.cuda.max_memory_allocated"},
  "dispatch_key": "CUDA", "fallback_counts": "", "reset_fallback_counts": "",
  "compile": {"backend": "inductor", "options": {"fullgraph": false, "dynamic": true}}})";

TEST(TargetTest, ParsesAProfile) {
  auto p = ParseTargetProfile(kCuda, "cuda.json");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->name, "cuda");
  EXPECT_EQ(p->device, "cuda");
  EXPECT_TRUE(p->verified);
  EXPECT_EQ(p->backend, "inductor");
  EXPECT_EQ(p->compile_options_json, R"({"dynamic":true,"fullgraph":false})");
  EXPECT_EQ(nlohmann::json::parse(p->json)["dispatch_key"], "CUDA");
  EXPECT_EQ(WithStaticShapes(p->compile_options_json), R"({"dynamic":false,"fullgraph":false})");
}

TEST(TargetTest, AnExportOnlyProfileNamesItsLoweringAndNeedsNoCompile) {
  auto p = ParseTargetProfile(
      R"({"name":"onnxruntime","device":"cpu","pythonpath":[],"import":[],"setup":"",
          "modes":["export"],"lowering":"onnxruntime"})",
      "onnxruntime.json");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->lowering, "onnxruntime");
  EXPECT_EQ(p->modes, std::vector<std::string>{"export"});
  EXPECT_EQ(p->backend, "");
  EXPECT_EQ(p->compile_options_json, "{}");
  auto cpu = ParseTargetProfile(R"({"name":"c","device":"cpu","compile":{"backend":"inductor"}})",
                                "c.json");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ(cpu->lowering, "");
  EXPECT_EQ(cpu->modes, (std::vector<std::string>{"eager", "compile", "export"}));
  for (const char* bad : {R"({"name":"x","device":"x","modes":["export","jit"]})",
                          R"({"name":"x","device":"x","modes":[]})",
                          R"({"name":"x","device":"x","modes":["export"],"lowering":"os.system"})",
                          R"({"name":"x","device":"x","modes":["compile"]})"}) {
    auto refused = ParseTargetProfile(bad, "x.json");
    EXPECT_FALSE(refused.ok()) << bad;
  }
}

TEST(TargetTest, RefusesBadProfilesNamingTheKey) {
  struct Case {
    const char* text;
    const char* key;
  } cases[] = {
      {R"({"name":"x","device":"x","compile":{"backend":"b"},"colour":"red"})", "'colour'"},
      {R"({"name":"","device":"x","compile":{"backend":"b"}})", "'name'"},
      {R"({"name":"x","compile":{"backend":"b"}})", "'device'"},
      {R"({"name":"x","device":"x"})", "'compile'"},
      {R"({"name":"x","device":"x","compile":{}})", "'compile.backend'"},
      {R"({"name":"x","device":"x","compile":{"backend":"b","opts":{}}})", "'compile.opts'"},
      {R"({"name":"x","device":"x","compile":{"backend":"b"},"memory":{"peak":"a:b"}})",
       "'memory.reset_peak'"},
      {R"({"name":"x","device":"x","compile":{"backend":"b"},"setup":"rm -rf /"})", "'setup'"},
      {R"({"name":"x","device":"x","compile":{"backend":"b"},"pythonpath":[""]})", "'pythonpath'"},
      {R"({"name":"x","device":"x","compile":{"backend":"b"},"verified":"yes"})", "'verified'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    auto p = ParseTargetProfile(c.text, "bad.json");
    ASSERT_FALSE(p.ok());
    EXPECT_NE(std::string(p.status().message()).find(c.key), std::string::npos) << p.status();
    EXPECT_NE(std::string(p.status().message()).find("bad.json"), std::string::npos);
  }
  EXPECT_FALSE(ParseTargetProfile("[]", "a.json").ok());
  EXPECT_FALSE(ParseTargetProfile("{", "a.json").ok());
}

TEST(TargetTest, ShippedProfilesLoadAndUnrunOnesAreUnverified) {
  const auto dir = ProjectHome() / "targets";
  std::vector<std::string> names = ListTargetNames(dir);
  for (const char* want : {"cpu", "cuda", "neuron"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  }
  auto profiles = LoadTargetProfiles(&names, dir);
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  EXPECT_FALSE(profiles->at("neuron").verified);
  EXPECT_EQ(profiles->at("neuron").backend, "neuron");
  auto neuron = nlohmann::json::parse(profiles->at("neuron").compile_options_json);
  EXPECT_EQ(neuron["dynamic"], false);
  EXPECT_EQ(neuron["fullgraph"], true);
  EXPECT_TRUE(profiles->at("cpu").verified);
  // cuda ran on an H200 (doc/targets.md, "Verifying on a GPU machine"); its mode
  // export lowers through AOTInductor.
  EXPECT_TRUE(profiles->at("cuda").verified);
  EXPECT_EQ(profiles->at("cuda").lowering, "aoti");

  auto unknown = LoadTargetProfile("tpu9", dir);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(std::string(unknown.status().message()).find("unknown target 'tpu9'"),
            std::string::npos);
  std::vector<std::string> twice = {"cpu", (dir / "cpu.json").string()};
  EXPECT_FALSE(LoadTargetProfiles(&twice, dir).ok());
}

}  // namespace
}  // namespace compatlab
