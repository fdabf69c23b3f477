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

// `text` safe to print on a terminal: every C0 control character (NUL, BEL,
// ESC, ...) except TAB, DEL, and every C1 control (U+0080..U+009F) written as
// a visible escape ("\x1b", "\u009b"). With `keep_line_breaks`, '\n' and
// '\r' stay as they are. Other bytes, ill-formed UTF-8 included, are kept.
std::string EscapeControls(std::string_view text, bool keep_line_breaks);

}  // namespace compatlab

#endif  // COMPATLAB_UTIL_UTF8_H_
