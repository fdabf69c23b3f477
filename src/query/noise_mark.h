// How a noisy row's timing figures are shown wherever people read them
// (doc/results-schema.md, "Noise"): the one mark before the figure and the
// reason beside it. The sweep's closing table, `query`, `matrix`, `diff` and
// `compare` use these; the web pages use common.js's markedFigure, its twin.
#ifndef COMPATLAB_QUERY_NOISE_MARK_H_
#define COMPATLAB_QUERY_NOISE_MARK_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/records.h"

namespace compatlab {

// The mark before a noisy figure ("~303.8 ms").
inline constexpr std::string_view kNoisyMark = "~";

// True when the noisy rule held in the steady phase (noisy = 1).
bool SteadyNoisy(const RunResult& r);
// True when it held in the first call (prepare_noisy, schema 13); a row before
// schema 13 has only the steady phase's verdict.
bool PrepareNoisy(const RunResult& r);
// True when either held: some timing figure of the row is marked.
bool AnyNoisy(const RunResult& r);

// `figure` as shown: kNoisyMark before it when `noisy`; "-" (no figure) and ""
// stay as they are.
std::string MarkedFigure(std::string_view figure, bool noisy);

// Why a row's figures are marked, in words: "steady: REASON; first call:
// REASON" (a phase without a stored reason says "noisy"); "" when quiet.
std::string NoisyReasonText(const RunResult& r);

// The footnote under a table with marked figures: "" when no run in `runs`
// is noisy, else a line saying what the mark means, then one line per noisy
// run ("  LABEL: REASON", LABEL from `label`), at most `max_lines` of them and
// a line counting the rest. Ends in '\n' when not empty.
std::string NoisyFootnote(const std::vector<const RunRecord*>& runs,
                          std::string (*label)(const RunRecord&), size_t max_lines = 10);

// "model target mode kind, sweep ID": a run's label in footnotes.
std::string NoisyRunLabel(const RunRecord& run);

}  // namespace compatlab

#endif  // COMPATLAB_QUERY_NOISE_MARK_H_
