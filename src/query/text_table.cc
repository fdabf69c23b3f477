#include "query/text_table.h"

#include <algorithm>
#include <cassert>
#include <utility>

namespace compatlab {
namespace {

// Length of the valid UTF-8 sequence at the start of `s`, or 0 when it is not
// one (overlong forms, surrogates and code points above U+10FFFF included).
size_t Utf8SequenceLength(std::string_view s, uint32_t* code_point) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(0);
  size_t length;
  uint32_t cp;
  if (lead < 0x80) {
    *code_point = lead;
    return 1;
  } else if ((lead & 0xe0) == 0xc0) {
    length = 2;
    cp = lead & 0x1f;
  } else if ((lead & 0xf0) == 0xe0) {
    length = 3;
    cp = lead & 0x0f;
  } else if ((lead & 0xf8) == 0xf0) {
    length = 4;
    cp = lead & 0x07;
  } else {
    return 0;
  }
  if (s.size() < length) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i) & 0x3f);
  }
  static constexpr uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMinimum[length] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  *code_point = cp;
  return length;
}

}  // namespace

std::string SanitizeForTerminal(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    uint32_t cp = 0;
    const size_t length = Utf8SequenceLength(text, &cp);
    if (length == 0) {
      out += '?';
      text.remove_prefix(1);
      continue;
    }
    if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) {
      out += ' ';
    } else {
      out.append(text.substr(0, length));
    }
    text.remove_prefix(length);
  }
  return out;
}

size_t DisplayWidth(std::string_view text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  }));
}

std::string Truncate(std::string_view text, size_t max_width) {
  std::string clean = SanitizeForTerminal(text);
  if (DisplayWidth(clean) <= max_width) return clean;
  const size_t keep = max_width - 3;
  size_t points = 0;
  size_t end = 0;
  for (; end < clean.size(); ++end) {
    if ((static_cast<unsigned char>(clean[end]) & 0xc0) != 0x80 && points++ == keep) break;
  }
  return clean.substr(0, end) + "...";
}

TextTable::TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

void TextTable::AddRow(std::vector<std::string> cells) {
  assert(cells.size() == columns_.size());
  for (std::string& cell : cells) cell = SanitizeForTerminal(cell);
  rows_.push_back(std::move(cells));
}

void TextTable::AddSeparator() { rows_.emplace_back(); }

std::string TextTable::Render() const {
  std::vector<size_t> widths;
  for (const Column& column : columns_) widths.push_back(DisplayWidth(column.name));
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], DisplayWidth(row[i]));
  }
  std::string out;
  auto emit = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t i = 0; i < columns_.size(); ++i) {
      if (i > 0) line += "  ";
      const std::string padding(widths[i] - DisplayWidth(cells[i]), ' ');
      line += columns_[i].align == kRight ? padding + cells[i] : cells[i] + padding;
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  };
  auto rule = [&] {
    size_t total = 2 * (columns_.size() - 1);
    for (size_t w : widths) total += w;
    out += std::string(total, '-') + "\n";
  };
  std::vector<std::string> header;
  for (const Column& column : columns_) header.push_back(column.name);
  emit(header);
  rule();
  for (const auto& row : rows_) {
    if (row.empty()) {
      rule();
    } else {
      emit(row);
    }
  }
  return out;
}

}  // namespace compatlab
