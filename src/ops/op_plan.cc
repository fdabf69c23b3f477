#include "ops/op_plan.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace compatlab {

using nlohmann::json;

absl::StatusOr<OpCatalog> ParseOpCatalog(std::string_view text) {
  json answer = json::parse(text, nullptr, false);
  if (answer.is_discarded() || !answer.is_object() || !answer.contains("ops") ||
      !answer["ops"].is_array() || !answer.value("torch_version", json()).is_string()) {
    return absl::InvalidArgumentError("the probe's op catalog is not an object with ops");
  }
  if (answer["ops"].size() > kMaxCatalogOps) {
    return absl::InvalidArgumentError(
        absl::StrCat("the probe's op catalog lists more than ", kMaxCatalogOps, " ops"));
  }
  OpCatalog catalog;
  catalog.torch_version = answer["torch_version"].get<std::string>();
  if (answer.value("python_version", json()).is_string()) {
    catalog.python_version = answer["python_version"].get<std::string>();
  }
  std::set<std::string> seen;
  for (const json& op : answer["ops"]) {
    if (!op.is_object() || !op.value("key", json()).is_string()) {
      return absl::InvalidArgumentError("the probe's op catalog has an op without a key");
    }
    std::string key = op["key"].get<std::string>();
    if (absl::Status s = CheckOpKey(key); !s.ok()) return s;
    if (!seen.insert(key).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("the probe's op catalog lists ", key, " twice"));
    }
    catalog.keys.push_back(std::move(key));
  }
  return catalog;
}

absl::StatusOr<OpCatalog> LoadOpCatalog(const ProbeEnv& env) {
  absl::StatusOr<std::string> out = RunProbeCommand(env, "compatlab_probe.ops.catalog", {});
  if (!out.ok()) return out.status();
  return ParseOpCatalog(*out);
}

absl::StatusOr<std::vector<std::string>> SelectOps(const OpCatalog& catalog,
                                                   const OpSelection& selection) {
  if (selection.shards < 1 || selection.shard < 0 || selection.shard >= selection.shards) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad shard ", selection.shard, "/", selection.shards));
  }
  const std::set<std::string> known(catalog.keys.begin(), catalog.keys.end());
  for (const std::string& key : selection.ops) {
    if (absl::Status s = CheckOpKey(key); !s.ok()) return s;
    if (!known.contains(key)) {
      return absl::InvalidArgumentError(
          absl::StrCat("no op ", key, " in torch ", catalog.torch_version,
                       "'s OpInfo database (ops are matched by exact key: NAME or NAME:VARIANT)"));
    }
  }
  const std::set<std::string> wanted(selection.ops.begin(), selection.ops.end());
  std::vector<std::string> keys;
  for (size_t i = 0; i < catalog.keys.size(); ++i) {
    if (!wanted.empty() && !wanted.contains(catalog.keys[i])) continue;
    keys.push_back(catalog.keys[i]);
  }
  if (selection.limit > 0 && static_cast<int64_t>(keys.size()) > selection.limit) {
    keys.resize(static_cast<size_t>(selection.limit));
  }
  std::vector<std::string> shard;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (static_cast<int64_t>(i) % selection.shards == selection.shard) shard.push_back(keys[i]);
  }
  return shard;
}

std::vector<OpBatch> MakeBatches(const std::vector<std::string>& keys,
                                 const std::vector<std::string>& dtypes, int64_t batch_size,
                                 const std::map<std::string, OpExclusion>& excluded,
                                 bool run_excluded) {
  std::vector<OpBatch> batches;
  for (const std::string& dtype : dtypes) {
    OpBatch batch{dtype, {}};
    for (const std::string& key : keys) {
      if (!run_excluded && excluded.contains(key)) continue;
      batch.keys.push_back(key);
      if (static_cast<int64_t>(batch.keys.size()) == batch_size) {
        batches.push_back(batch);
        batch.keys.clear();
      }
    }
    if (!batch.keys.empty()) batches.push_back(std::move(batch));
  }
  return batches;
}

std::map<std::string, OpExclusion> ExclusionsByKey(const TargetProfile& profile) {
  std::map<std::string, OpExclusion> by_key;
  for (const OpExclusion& e : profile.op_exclusions) by_key.emplace(e.op, e);
  return by_key;
}

std::pair<std::string, std::string> SplitOpKey(std::string_view key) {
  const size_t colon = key.find(':');
  if (colon == std::string_view::npos) return {std::string(key), ""};
  return {std::string(key.substr(0, colon)), std::string(key.substr(colon + 1))};
}

OpResult ExcludedCase(const std::string& op_sweep_id, const std::string& key,
                      const std::string& dtype, const OpExclusion& exclusion) {
  OpResult r;
  r.op_sweep_id = op_sweep_id;
  std::tie(r.op, r.variant) = SplitOpKey(key);
  r.dtype = dtype;
  r.status = TestStatus::kSkipped;
  r.skip_source = kSkipSourceTarget;
  r.skip_kind = "exclude";
  r.skip_reason = absl::StrCat(exclusion.reason, " (", exclusion.citation, ")");
  r.detail = r.skip_reason;
  return r;
}

}  // namespace compatlab
