// UTF-8 validity, for the output edges that require it (Parquet utf8
// columns, CSV): a stored text field may hold arbitrary bytes (a cut output
// tail, a process's raw stderr).
#ifndef COMPATLAB_UTIL_UTF8_H_
#define COMPATLAB_UTIL_UTF8_H_

#include <string>
#include <string_view>

namespace compatlab {

// True when `text` is well-formed UTF-8 (no overlong forms, surrogates or
// code points above U+10FFFF). NUL bytes are valid.
bool IsValidUtf8(std::string_view text);

// `text` with every ill-formed sequence replaced by U+FFFD, one replacement
// per maximal ill-formed subpart (the Unicode "substitution of maximal
// subparts" practice). Valid text is returned unchanged.
std::string ToValidUtf8(std::string_view text);

}  // namespace compatlab

#endif  // COMPATLAB_UTIL_UTF8_H_
