#include "core/error_signature.h"

#include <cstddef>

namespace compatlab {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsHexDigit(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsWordChar(char c) { return IsAlpha(c) || IsDigit(c) || c == '_'; }
bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}
// Characters that end a path token: whitespace, quotes, brackets, separators.
bool EndsPath(char c) {
  return IsSpace(c) || c == '"' || c == '\'' || c == '`' || c == ',' || c == ';' || c == '(' ||
         c == ')' || c == '[' || c == ']' || c == '{' || c == '}' || c == '<' || c == '>';
}

// The first line of `message` that is not blank.
std::string_view FirstLine(std::string_view message) {
  while (!message.empty()) {
    size_t end = message.find('\n');
    std::string_view line = message.substr(0, end);
    for (char c : line) {
      if (!IsSpace(c)) return line;
    }
    if (end == std::string_view::npos) break;
    message.remove_prefix(end + 1);
  }
  return {};
}

// Length of a path starting at `text` (0 if none starts there).
size_t PathLength(std::string_view text) {
  size_t prefix = 0;
  if (text.starts_with("/")) {
    prefix = 1;
  } else if (text.starts_with("./") || text.starts_with("~/")) {
    prefix = 2;
  } else if (text.starts_with("../")) {
    prefix = 3;
  } else {
    return 0;
  }
  size_t n = prefix;
  while (n < text.size() && !EndsPath(text[n])) ++n;
  // A lone "/" (a division, "and/or") is not a path.
  if (n == prefix) return 0;
  return n;
}

// Length of a decimal number at `text`: digits, an optional fraction and
// exponent (0 if none starts there).
size_t NumberLength(std::string_view text) {
  size_t n = 0;
  while (n < text.size() && IsDigit(text[n])) ++n;
  if (n == 0) return 0;
  if (n + 1 < text.size() && text[n] == '.' && IsDigit(text[n + 1])) {
    n += 1;
    while (n < text.size() && IsDigit(text[n])) ++n;
  }
  if (n + 1 < text.size() && (text[n] == 'e' || text[n] == 'E')) {
    size_t e = n + 1;
    if (e < text.size() && (text[e] == '-' || text[e] == '+')) ++e;
    if (e < text.size() && IsDigit(text[e])) {
      while (e < text.size() && IsDigit(text[e])) ++e;
      n = e;
    }
  }
  return n;
}

// Length of a bare hex run of at least 12 digits with at least one letter
// (else it is a decimal number), word-bounded on the right.
size_t BareHexLength(std::string_view text) {
  size_t n = 0;
  bool letter = false;
  while (n < text.size() && IsHexDigit(text[n])) letter |= !IsDigit(text[n++]);
  if (n < 12 || !letter || (n < text.size() && IsWordChar(text[n]))) return 0;
  return n;
}

}  // namespace

std::string NormalizeErrorMessage(std::string_view message) {
  const std::string_view line = FirstLine(message);
  std::string out;
  bool pending_space = false;
  auto emit = [&](std::string_view piece) {
    if (pending_space && !out.empty()) out += ' ';
    pending_space = false;
    out.append(piece);
  };
  size_t i = 0;
  while (i < line.size()) {
    const char c = line[i];
    const char prev = i > 0 ? line[i - 1] : ' ';
    const std::string_view rest = line.substr(i);
    if (IsSpace(c)) {
      pending_space = true;
      ++i;
      continue;
    }
    if (!IsWordChar(prev) && prev != '.') {
      if (size_t n = PathLength(rest); n > 0) {
        emit("<path>");
        i += n;
        continue;
      }
    }
    if (!IsWordChar(prev)) {
      if (c == '0' && rest.size() > 2 && (rest[1] == 'x' || rest[1] == 'X') &&
          IsHexDigit(rest[2])) {
        size_t n = 2;
        while (n < rest.size() && IsHexDigit(rest[n])) ++n;
        emit("<hex>");
        i += n;
        continue;
      }
      if (size_t n = BareHexLength(rest); n > 0) {
        emit("<hex>");
        i += n;
        continue;
      }
      if (size_t n = NumberLength(rest); n > 0) {
        emit("N");
        i += n;
        continue;
      }
    }
    emit(std::string_view(&line[i], 1));
    ++i;
  }
  return out;
}

std::string ErrorSignature(std::string_view error_type, std::string_view error_message) {
  const std::string message = NormalizeErrorMessage(error_message);
  std::string signature(error_type);
  if (!message.empty()) {
    if (!signature.empty()) signature += ": ";
    signature += message;
  }
  return signature;
}

bool IsFailureStatus(TestStatus status) {
  return status != TestStatus::kPass && status != TestStatus::kSkipped;
}

std::string FailureSignature(const RunResult& result) {
  if (!IsFailureStatus(result.status)) return "";
  std::string signature = ErrorSignature(result.error_type, result.error_message);
  if (signature.empty()) signature = NormalizeErrorMessage(result.status_detail);
  return signature;
}

void FillMissingErrorSignature(RunResult* result) {
  if (result->error_signature.empty()) result->error_signature = FailureSignature(*result);
}

}  // namespace compatlab
