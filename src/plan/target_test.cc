#include "plan/target.h"

#include "absl/strings/str_cat.h"
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

TEST(TargetTest, ARedisCacheTravelsToTheProbeWithTheProfile) {
  auto p = ParseTargetProfile(
      R"({"name":"c","device":"cpu","compile":{"backend":"inductor"},
          "redis_cache":{"host":"10.0.0.5","port":6379,"aot_autograd":false}})",
      "c.json");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(nlohmann::json::parse(p->json)["redis_cache"]["host"], "10.0.0.5");
  EXPECT_EQ(nlohmann::json::parse(p->json)["redis_cache"]["port"], 6379);
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
      {R"({"name":"x","device":"x","compile":{"backend":"b"},"redis_cache":{"port":6379}})",
       "'redis_cache.host'"},
      {R"({"name":"x","device":"x","compile":{"backend":"b"},"redis_cache":{"host":"h"}})",
       "'redis_cache.port'"},
      {R"({"name":"x","device":"x","compile":{"backend":"b"},"redis_cache":{"host":"h","port":0}})",
       "'redis_cache.port'"},
      {R"({"name":"x","device":"x","compile":{"backend":"b"},"redis_cache":{"host":"h","port":65536}})",
       "'redis_cache.port'"},
      {R"({"name":"x","device":"x","compile":{"backend":"b"},"redis_cache":{"host":"h","port":"1"}})",
       "'redis_cache.port'"},
      {R"({"name":"x","device":"x","compile":{"backend":"b"},"redis_cache":{"host":"a b","port":1}})",
       "'redis_cache.host'"},
      {R"({"name":"x","device":"x","compile":{"backend":"b"},"redis_cache":{"host":"h","port":1,"db":2}})",
       "'redis_cache.db'"},
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

// The message of ParseTargetProfile(text, "t.json")'s error ("" when it parses).
std::string ProfileError(const std::string& text) {
  auto p = ParseTargetProfile(text, "t.json");
  return p.ok() ? "" : std::string(p.status().message());
}

constexpr char kMinimal[] = R"("name":"x","device":"x","compile":{"backend":"b"})";

std::string WithKey(const std::string& member) {
  return absl::StrCat("{", kMinimal, ",", member, "}");
}

TEST(TargetTableTest, AnUnknownKeyListsTheKnownOnesSorted) {
  EXPECT_EQ(ProfileError(WithKey(R"("colour":"red")")),
            "t.json: 'colour' is not a known key (available, compile, description, device, "
            "dispatch_key, dynamic_refused, fallback_counts, import, lowering, memory, modes, "
            "name, op_exclusions, profile, pythonpath, ranks_backend, redis_cache, "
            "reset_fallback_counts, setup, synchronize, verified; see "
            "doc/targets.md)");
  EXPECT_EQ(ProfileError(WithKey(R"("memory":{"reset_peak":"a:b","peak":"a:b","method":"m",
                                              "x":1})")),
            "t.json: 'memory.x' is not a known key (reset_peak, peak, method)");
  EXPECT_EQ(ProfileError(R"({"name":"x","device":"x","compile":{"backend":"b","o":{}}})"),
            "t.json: 'compile.o' is not a known key (backend, options)");
}

TEST(TargetTableTest, AValueOfTheWrongTypeNamesWhatItMustBe) {
  EXPECT_EQ(ProfileError(WithKey(R"("verified":1)")), "t.json: 'verified' must be true or false");
  EXPECT_EQ(ProfileError(WithKey(R"("description":[])")), "t.json: 'description' must be a string");
  EXPECT_EQ(ProfileError(WithKey(R"("import":"m")")), "t.json: 'import' must be a list of strings");
  EXPECT_EQ(ProfileError(WithKey(R"("memory":"m")")), "t.json: 'memory' must be null or an object");
  EXPECT_EQ(ProfileError(WithKey(R"("modes":"eager")")), "t.json: 'modes' must be a list of modes");
  EXPECT_EQ(ProfileError(R"({"name":"x","device":"x","compile":"inductor"})"),
            "t.json: 'compile' must be an object");
  EXPECT_EQ(ProfileError(R"({"name":"x","device":"x","compile":{"backend":"b","options":[]}})"),
            "t.json: 'compile.options' must be an object");
  EXPECT_EQ(ProfileError(R"({"name":7,"device":"x","compile":{"backend":"b"}})"),
            "t.json: 'name' must be a non-empty string");
}

TEST(TargetTableTest, AMissingRequiredKeyIsNamedInTheTablesOrder) {
  EXPECT_EQ(ProfileError("{}"), "t.json: 'name' is missing");
  EXPECT_EQ(ProfileError(R"({"name":"x"})"), "t.json: 'device' is missing");
  EXPECT_EQ(ProfileError(R"({"name":"x","device":"x"})"),
            "t.json: 'compile' is missing (a profile that takes mode compile needs it)");
  EXPECT_EQ(ProfileError(R"({"name":"x","device":"x","modes":["eager"]})"), "");
  EXPECT_EQ(ProfileError(R"({"name":"x","device":"x","compile":{"options":{}}})"),
            "t.json: 'compile.backend' is missing");
  // memory's keys are checked for presence before their values.
  EXPECT_EQ(ProfileError(WithKey(R"("memory":{"reset_peak":1,"peak":"a:b"})")),
            "t.json: 'memory.method' is missing");
  // A bad value anywhere comes before a missing key.
  EXPECT_EQ(ProfileError(R"({"device":"x","verified":"no"})"),
            "t.json: 'verified' must be true or false");
}

TEST(TargetTest, OpExclusionsAreExactKeysWithAReasonAndACitation) {
  auto p = ParseTargetProfile(
      R"({"name":"n","device":"x","modes":["eager"],"op_exclusions":[
          {"op":"max:binary","reason":"not in the compiler","citation":"vendor doc, ops list"}]})",
      "n.json");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->op_exclusions.size(), 1u);
  EXPECT_EQ(p->op_exclusions[0],
            (OpExclusion{"max:binary", "not in the compiler", "vendor doc, ops list"}));
  EXPECT_EQ(ProfileError(WithKey(R"("op_exclusions":[{"op":"max*","reason":"r","citation":"c"}])")),
            "t.json: 'op_exclusions[0].op' bad op key 'max*': an op is NAME or NAME:VARIANT, each "
            "of letters, digits, _ . -");
  EXPECT_EQ(ProfileError(WithKey(R"("op_exclusions":[{"op":"max","reason":"r"}])")),
            "t.json: 'op_exclusions[0]' must be an object of exactly op, reason and citation");
  EXPECT_EQ(ProfileError(WithKey(R"("op_exclusions":[{"op":"a","reason":"r","citation":""}])")),
            "t.json: 'op_exclusions[0].citation' must be a non-empty string");
  EXPECT_EQ(ProfileError(WithKey(R"("op_exclusions":[{"op":"a","reason":"r","citation":"c"},
                                                     {"op":"a","reason":"r","citation":"c"}])")),
            "t.json: 'op_exclusions[1].op' names an op listed before");
}

TEST(TargetTest, AProfileMayAskForTheProfilersWindow) {
  auto p = ParseTargetProfile(
      R"({"name":"c","device":"cpu","compile":{"backend":"inductor"},"profile":"prepare"})",
      "c.json");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->profile, "prepare");
}

TEST(TargetTableTest, AFailedCheckNamesTheKeyAndTheRule) {
  EXPECT_EQ(ProfileError(WithKey(R"("setup":"rm -rf /")")),
            "t.json: 'setup' must be \"module:function\", a dotted path, or \"\"");
  EXPECT_EQ(ProfileError(WithKey(R"("lowering":"os.system")")),
            "t.json: 'lowering' must be a lowering key of lower-case letters (doc/targets.md)");
  EXPECT_EQ(ProfileError(WithKey(R"("modes":[])")), "t.json: 'modes' must be a list of modes");
  EXPECT_EQ(ProfileError(WithKey(R"("profile":"always")")),
            "t.json: 'profile' must be \"\", \"steady\" or \"prepare\" (doc/targets.md)");
  EXPECT_EQ(ProfileError(WithKey(R"("modes":["eager","jit"])")),
            "t.json: 'modes' must list modes from eager, compile, export");
  EXPECT_EQ(ProfileError(WithKey(R"("pythonpath":["a",""])")),
            "t.json: 'pythonpath' must be a list of non-empty strings");
  EXPECT_EQ(ProfileError(R"({"name":"x","device":"x","compile":{"backend":"rm -rf"}})"),
            "t.json: 'compile.backend' must be a backend name");
  EXPECT_EQ(ProfileError(WithKey(R"("memory":{"reset_peak":"","peak":"a:b","method":"m"})")),
            "t.json: 'memory.reset_peak' must be \"module:function\"");
  EXPECT_EQ(ProfileError(WithKey(R"("memory":{"reset_peak":"a:b","peak":"a:b","method":""})")),
            "t.json: 'memory.method' must be a non-empty string");
}

TEST(TargetTableTest, EveryKeyIsDocumentedInTheFieldsTable) {
  absl::StatusOr<std::string> doc = ReadFile(ProjectHome() / "doc" / "targets.md");
  ASSERT_TRUE(doc.ok()) << doc.status();
  const std::string fields = doc->substr(doc->find("## Fields"));
  const std::string table = fields.substr(0, fields.find("\n## "));
  std::vector<std::string> keys = TargetProfileKeys();
  EXPECT_EQ(keys.size(), 21u);
  for (const std::string& key : keys) {
    EXPECT_NE(table.find(absl::StrCat("`", key, "`")), std::string::npos) << key;
  }
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
