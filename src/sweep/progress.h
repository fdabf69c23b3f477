// Sweep progress for people: on a terminal, one live line (done/total,
// passes and failures, elapsed, ETA, current tests); when piped, one plain
// line per finished test.
#ifndef COMPATLAB_SWEEP_PROGRESS_H_
#define COMPATLAB_SWEEP_PROGRESS_H_

#include <cstdio>
#include <map>
#include <string>

#include "core/records.h"

namespace compatlab {

class Progress {
 public:
  // `out` is not owned. `live` selects the terminal form.
  Progress(FILE* out, bool live, int64_t total, int64_t already_done);

  void Started(const std::string& run_id, const TestSpec& spec);
  void Finished(const std::string& run_id, const TestSpec& spec, const RunResult& result);
  void Tick();
  // Restarts the elapsed-time clock (call when the first test starts).
  void ResetClock();
  // Clears the live line.
  void Close();

  int64_t done() const { return done_; }
  int64_t passed() const { return passed_; }
  int64_t failed() const { return done_here_ - passed_ - skipped_; }

 private:
  void Draw();

  FILE* out_;
  bool live_;
  int64_t total_;
  int64_t done_;
  int64_t done_here_ = 0;
  int64_t passed_ = 0;
  int64_t skipped_ = 0;
  double start_;
  std::map<std::string, std::string> current_;  // run_id -> label
};

// "hf:llama forward eager cpu float32 1x32" or "noop #3".
std::string TestLabel(const TestSpec& spec);

}  // namespace compatlab

#endif  // COMPATLAB_SWEEP_PROGRESS_H_
