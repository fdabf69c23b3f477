// Sweep progress for people: on a terminal, one live line (done/total,
// passes and failures, elapsed, ETA, current tests); when piped, one plain
// line per finished test, and one when a test has run for kLongTestS without
// finishing (so a log shows what a long sweep is doing). In both forms, one
// line when the machine turns busy (BusySpellLine, sweep/summary.h).
#ifndef COMPATLAB_SWEEP_PROGRESS_H_
#define COMPATLAB_SWEEP_PROGRESS_H_

#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/records.h"
#include "util/time.h"

namespace compatlab {

// Seconds after which a piped progress prints that a test is still running.
inline constexpr double kLongTestS = 30.0;

class Progress {
 public:
  // `out` is not owned. `live` selects the terminal form. `clock` gives
  // monotonic seconds (tests pass their own).
  Progress(FILE* out, bool live, int64_t total, int64_t already_done,
           std::function<double()> clock = MonotonicSeconds);

  void Started(const std::string& run_id, const TestSpec& spec);
  void Finished(const std::string& run_id, const TestSpec& spec, const RunResult& result);
  void Tick();
  // A line for people between progress lines (the live line is drawn again after it).
  void Note(const std::string& line);
  // A noisy test measured again (sweep/execute.h, MergeRemeasureResult): one line with
  // what became of it: "compatlab: measured again (quiet): LABEL: steady 4.000 ms, the
  // other measurement ~8.000 ms".
  void Remeasured(const RunRecord& record);
  // The machine was already busy when the sweep started (BusyMachineLine was
  // printed): that line announced the first busy spell.
  void StartBusy() { busy_ = true; }
  // Restarts the elapsed-time clock (call when the first test starts).
  void ResetClock();
  // Clears the live line.
  void Close();

  int64_t done() const { return done_; }
  int64_t passed() const { return passed_; }
  int64_t failed() const { return done_here_ - passed_ - skipped_; }
  // The labels of the tests finished here with a noisy timing figure, in order.
  const std::vector<std::string>& noisy_tests() const { return noisy_; }

 private:
  void Draw();
  // A busy spell (doc/results-schema.md, "Noise"): the first finished test whose
  // timing is noisy (query/noise_mark.h's AnyNoisy: the rule the rows use) opens
  // one and prints BusySpellLine once; a test timed quiet ends it. A test with no
  // noise verdict (it never reached a timed phase) changes nothing.
  void NoteNoise(const TestSpec& spec, const RunResult& result);

  FILE* out_;
  bool live_;
  int64_t total_;
  int64_t done_;
  int64_t done_here_ = 0;
  int64_t passed_ = 0;
  int64_t skipped_ = 0;
  std::function<double()> clock_;
  double start_;
  std::map<std::string, std::string> current_;  // run_id -> label
  std::map<std::string, double> started_at_;    // run_id -> clock_() at its start
  std::set<std::string> noted_long_;            // run_ids whose long-test line was printed
  bool busy_ = false;                           // in a busy spell
  std::vector<std::string> noisy_;              // labels of the noisy tests so far
};

// "llama forward eager cpu float32 1x32", with every other setting of the test
// that can differ: the compile backend ("compile:aot_eager") and each kind
// parameter ("new_tokens=16", "steps=3"); "noop #3" for harness kinds; a dynamic test
// names its shapes and setting ("... float32 1x16,1x32 dynamic=true").
std::string TestLabel(const TestSpec& spec);

}  // namespace compatlab

#endif  // COMPATLAB_SWEEP_PROGRESS_H_
