#include "util/time.h"

#include <time.h>

#include "absl/strings/str_format.h"

namespace compatlab {

double MonotonicSeconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string UtcNowIso8601() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  tm utc;
  gmtime_r(&ts.tv_sec, &utc);
  return absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                         utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                         static_cast<int>(ts.tv_nsec / 1000000));
}

std::string HumanDuration(double seconds) {
  if (seconds < 60) return absl::StrFormat("%.1f s", seconds);
  long s = static_cast<long>(seconds + 0.5);
  if (s < 3600) return absl::StrFormat("%ld min %02ld s", s / 60, s % 60);
  return absl::StrFormat("%ld h %02ld min", s / 3600, (s % 3600) / 60);
}

}  // namespace compatlab
