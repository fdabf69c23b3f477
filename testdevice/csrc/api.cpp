// What Python reads from the device: custom ops in the namespace
// compatlab_testdevice (torch.ops.compatlab_testdevice.*), so the library
// needs no Python headers and loads with torch.ops.load_library.
#include <torch/library.h>

#include <tuple>

#include "testdevice.h"

namespace compatlab_testdevice {
namespace {

// [allocated_bytes, peak_bytes, num_allocs, num_frees]
std::vector<int64_t> MemoryStatsOp() {
  MemoryStats s = GetMemoryStats();
  return {s.allocated_bytes, s.peak_bytes, s.num_allocs, s.num_frees};
}

void ResetPeakMemoryStatsOp() { ResetPeakMemoryStats(); }

std::tuple<std::vector<std::string>, std::vector<int64_t>> FallbackCountsOp() {
  std::vector<std::string> names;
  std::vector<int64_t> counts;
  for (auto& [name, count] : FallbackCounts()) {
    names.push_back(name);
    counts.push_back(count);
  }
  return {std::move(names), std::move(counts)};
}

void ResetFallbackCountsOp() { ResetFallbackCounts(); }

// Every ctest kernel has finished when it returns.
void SynchronizeOp() {}

}  // namespace

TORCH_LIBRARY(compatlab_testdevice, m) {
  m.def("memory_stats() -> int[]", &MemoryStatsOp);
  m.def("reset_peak_memory_stats() -> ()", &ResetPeakMemoryStatsOp);
  m.def("fallback_counts() -> (str[], int[])", &FallbackCountsOp);
  m.def("reset_fallback_counts() -> ()", &ResetFallbackCountsOp);
  m.def("synchronize() -> ()", &SynchronizeOp);
}

}  // namespace compatlab_testdevice
