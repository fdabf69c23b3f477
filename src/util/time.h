// Clocks. Durations use the monotonic clock; stored timestamps are UTC.
#ifndef COMPATLAB_UTIL_TIME_H_
#define COMPATLAB_UTIL_TIME_H_

#include <string>

namespace compatlab {

// Seconds on the monotonic clock (CLOCK_MONOTONIC).
double MonotonicSeconds();

// Current UTC time as "2026-11-30T02:24:35.123Z".
std::string UtcNowIso8601();

// "1.2 s", "3 min 04 s", "1 h 02 min" for durations shown to people.
std::string HumanDuration(double seconds);

}  // namespace compatlab

#endif  // COMPATLAB_UTIL_TIME_H_
