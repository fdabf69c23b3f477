// Test-only inputs of the plan module's tests: a small catalog and two target profiles.
#ifndef COMPATLAB_PLAN_TESTING_H_
#define COMPATLAB_PLAN_TESTING_H_

#include <map>
#include <string>

#include "gtest/gtest.h"
#include "plan/catalog.h"
#include "plan/target.h"

namespace compatlab {

// A catalog of llama (LlamaForCausalLM), bert (BertForMaskedLM) and odd (no head class).
inline ModelCatalog PlanTestCatalog() {
  auto c = ParseCatalog(R"({"transformers_version":"5.x","models":{
      "llama":{"config_class":"LlamaConfig","head_class":"LlamaForCausalLM","head_kind":"causal_lm"},
      "bert":{"config_class":"BertConfig","head_class":"BertForMaskedLM","head_kind":"masked_lm"},
      "odd":{"config_class":"OddConfig","head_class":null}}})");
  EXPECT_TRUE(c.ok());
  return *c;
}

// The profiles "cpu" and "dev", whose backends are "cpu-backend" and "dev-backend".
inline std::map<std::string, TargetProfile> PlanTestProfiles() {
  std::map<std::string, TargetProfile> profiles;
  for (const char* name : {"cpu", "dev"}) {
    TargetProfile p;
    p.name = name;
    p.device = name;
    p.backend = std::string(name) + "-backend";
    profiles[name] = p;
  }
  return profiles;
}

}  // namespace compatlab

#endif  // COMPATLAB_PLAN_TESTING_H_
