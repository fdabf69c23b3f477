// What differs in the stack beside the release (doc/dataset.md, "Diff", "Builds"): two sides
// of a diff may run torch builds made for different hardware (2.13.0+cpu against
// 2.14.1+cu130), with another BLAS, OpenMP runtime or inductor compiler, or on another CPU;
// their timings then compare builds, not only releases.
#ifndef COMPATLAB_QUERY_BUILDS_H_
#define COMPATLAB_QUERY_BUILDS_H_

#include <string>
#include <vector>

#include "core/records.h"

namespace compatlab {

// One part of the build in which the two sides differ: its name and each side's distinct
// values ("cpu" and "cuda 13.0"), sorted.
struct BuildDifference {
  std::string part;  // torch_build, blas, openmp, cxx_compiler, cpu_model
  std::vector<std::string> base;
  std::vector<std::string> head;
};

// The parts of the build whose recorded values differ between the runs of `base` and
// `head`; a part either side never recorded (rows before schema 24) is left out.
std::vector<BuildDifference> BuildDifferences(const std::vector<RunRecord>& base,
                                              const std::vector<RunRecord>& head);

// "builds differ: torch 2.13.0+cpu vs 2.14.1+cu130; torch_build cpu vs cuda 13.0; timings
// compare builds, not only releases\n"; empty when no part differs.
std::string BuildsDifferLine(const std::vector<RunRecord>& base,
                             const std::vector<RunRecord>& head);

}  // namespace compatlab

#endif  // COMPATLAB_QUERY_BUILDS_H_
