// Plain-text tables for the terminal: columns padded to their widest cell.
#ifndef COMPATLAB_QUERY_TEXT_TABLE_H_
#define COMPATLAB_QUERY_TEXT_TABLE_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace compatlab {

// `text` made safe to print: C0 and C1 control characters (newlines, tabs,
// escape sequences) become spaces, bytes that are not valid UTF-8 become '?'.
std::string SanitizeForTerminal(std::string_view text);

// Number of code points of valid UTF-8 `text` (its width on a terminal, where
// every character is one column wide).
size_t DisplayWidth(std::string_view text);

// `text` (sanitized) cut to at most `max_width` code points, ending in "..."
// when cut. REQUIRES: max_width >= 3.
std::string Truncate(std::string_view text, size_t max_width);

// Builds a table row by row, then renders it. Cells are sanitized.
//
//   TextTable table({{"model", TextTable::kLeft}, {"wall_s", TextTable::kRight}});
//   table.AddRow({"hf:llama", "1.250"});
//   std::cout << table.Render();
class TextTable {
 public:
  enum Align { kLeft, kRight };
  struct Column {
    std::string name;
    Align align;
  };

  explicit TextTable(std::vector<Column> columns);

  // REQUIRES: cells.size() == number of columns.
  void AddRow(std::vector<std::string> cells);
  // A line of dashes under the header width, e.g. before a totals row.
  void AddSeparator();

  // Header, a dashed rule, the rows; columns separated by two spaces, no
  // trailing spaces, every line ending in '\n'.
  std::string Render() const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;  // empty vector = separator
};

}  // namespace compatlab

#endif  // COMPATLAB_QUERY_TEXT_TABLE_H_
