#include "export/parquet_runs.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <map>
#include <new>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "arrow/api.h"
#include "arrow/io/file.h"
#include "arrow/io/memory.h"
#include "core/blame.h"
#include "core/error_signature.h"
#include "core/limits.h"
#include "fmt/format.h"
#include "parquet/arrow/reader.h"
#include "parquet/arrow/writer.h"
#include "parquet/file_reader.h"
#include "parquet/metadata.h"
#include "parquet/properties.h"
#include "store/schema.h"
#include "util/utf8.h"

// The pyarrow wheel's libraries use the C++11 std::string ABI (their
// symbols carry __cxx11); so must this build, or the std::string signatures
// of Arrow's API would not link (src/export/CMakeLists.txt).
static_assert(_GLIBCXX_USE_CXX11_ABI == 1, "Arrow from the pyarrow wheel needs the C++11 ABI");

namespace compatlab {
namespace {

constexpr std::string_view kTimestampUnit = "UTC ISO 8601";
constexpr std::string_view kKindParams = "kind_params";
constexpr int kZstdLevel = 3;

bool IsTimestamp(const FieldDef& field) { return field.unit == kTimestampUnit; }
bool IsKindParams(const FieldDef& field) { return field.name == kKindParams; }

bool IsList(const FieldDef& field) { return field.list != ListKind::kNone; }

// The element type of a list field's column (doc/dataset.md, "List columns").
std::shared_ptr<arrow::DataType> ListElementType(ListKind kind) {
  switch (kind) {
    case ListKind::kRealPoints:
      return arrow::struct_({arrow::field("position", arrow::int64(), false),
                             arrow::field("value", arrow::float64(), false)});
    case ListKind::kIntegerPoints:
      return arrow::struct_({arrow::field("position", arrow::int64(), false),
                             arrow::field("value", arrow::int64(), false)});
    case ListKind::kReals:
    case ListKind::kNone:
      break;
  }
  return arrow::float64();
}

// One kind_params entry: the element of its list column (kKeyValueListsVersion).
std::shared_ptr<arrow::DataType> KeyValueType() {
  return arrow::struct_(
      {arrow::field("key", arrow::utf8(), false), arrow::field("value", arrow::utf8(), false)});
}

std::shared_ptr<arrow::DataType> ArrowType(const FieldDef& field) {
  if (IsList(field)) {
    // Reals may be null (not finite when measured); a point never is.
    return arrow::list(
        arrow::field("element", ListElementType(field.list), field.list == ListKind::kReals));
  }
  if (IsTimestamp(field)) return arrow::timestamp(arrow::TimeUnit::MILLI, "UTC");
  if (IsKindParams(field)) return arrow::list(arrow::field("element", KeyValueType(), false));
  switch (field.type) {
    case FieldType::kInteger:
      return arrow::int64();
    case FieldType::kReal:
      return arrow::float64();
    case FieldType::kText:
      break;
  }
  return arrow::utf8();
}

std::shared_ptr<arrow::Schema> MakeSchema() {
  arrow::FieldVector fields;
  for (const FieldDef& field : ResultFields()) {
    // A list column is null where the store's text is empty (no curve).
    fields.push_back(
        arrow::field(std::string(field.name), ArrowType(field), field.nullable || IsList(field)));
  }
  return arrow::schema(std::move(fields),
                       arrow::key_value_metadata({std::string(kParquetSchemaVersionKey)},
                                                 {std::to_string(kSchemaVersion)}));
}

absl::Status FromArrow(const arrow::Status& status, std::string_view context) {
  if (status.ok()) return absl::OkStatus();
  return absl::InternalError(fmt::format("{}: {}", context, status.ToString()));
}

absl::Status Invalid(const std::string& name, const std::string& what) {
  return absl::InvalidArgumentError(fmt::format("{}: {}", name, what));
}

// --- writing ---------------------------------------------------------------

// Appends one record's value of one field to its column builder.
using AppendFn = std::function<arrow::Status(const RunRecord&)>;

struct Column {
  std::shared_ptr<arrow::ArrayBuilder> builder;
  AppendFn append;
};

Column MakeListColumn(const FieldDef& field, arrow::MemoryPool* pool) {
  Column column;
  auto positions = std::make_shared<arrow::Int64Builder>(pool);
  std::shared_ptr<arrow::DoubleBuilder> reals;
  std::shared_ptr<arrow::Int64Builder> integers;
  std::shared_ptr<arrow::ArrayBuilder> values;
  std::shared_ptr<arrow::StructBuilder> points;
  if (field.list == ListKind::kReals) {
    reals = std::make_shared<arrow::DoubleBuilder>(pool);
    values = reals;
  } else {
    std::shared_ptr<arrow::ArrayBuilder> value;
    if (field.list == ListKind::kRealPoints) {
      reals = std::make_shared<arrow::DoubleBuilder>(pool);
      value = reals;
    } else {
      integers = std::make_shared<arrow::Int64Builder>(pool);
      value = integers;
    }
    points = std::make_shared<arrow::StructBuilder>(
        ListElementType(field.list), pool,
        std::vector<std::shared_ptr<arrow::ArrayBuilder>>{positions, value});
    values = points;
  }
  auto list = std::make_shared<arrow::ListBuilder>(pool, values, ArrowType(field));
  column.builder = list;
  column.append = [&field, list, positions, reals, integers,
                   points](const RunRecord& r) -> arrow::Status {
    const FieldValue value = field.get(r);
    const std::string* text = std::get_if<std::string>(&value);
    if (text == nullptr || text->empty()) return list->AppendNull();
    absl::StatusOr<ListValue> parsed = ParseListText(field, *text);
    if (!parsed.ok()) {
      return arrow::Status::Invalid("run ", r.run_id, ": ", std::string(parsed.status().message()));
    }
    ARROW_RETURN_NOT_OK(list->Append());
    const size_t size = ListSize(*parsed);
    for (size_t i = 0; i < size; ++i) {
      if (points != nullptr) {
        ARROW_RETURN_NOT_OK(points->Append());
        ARROW_RETURN_NOT_OK(positions->Append(parsed->positions[i]));
        if (integers != nullptr) {
          ARROW_RETURN_NOT_OK(integers->Append(parsed->integers[i]));
        } else {
          ARROW_RETURN_NOT_OK(reals->Append(*parsed->reals[i]));
        }
      } else if (parsed->reals[i].has_value()) {
        ARROW_RETURN_NOT_OK(reals->Append(*parsed->reals[i]));
      } else {
        ARROW_RETURN_NOT_OK(reals->AppendNull());
      }
    }
    return arrow::Status::OK();
  };
  return column;
}

Column MakeColumn(const FieldDef& field, arrow::MemoryPool* pool) {
  if (IsList(field)) return MakeListColumn(field, pool);
  Column column;
  if (IsKindParams(field)) {
    auto keys = std::make_shared<arrow::StringBuilder>(pool);
    auto items = std::make_shared<arrow::StringBuilder>(pool);
    auto entries = std::make_shared<arrow::StructBuilder>(
        KeyValueType(), pool, std::vector<std::shared_ptr<arrow::ArrayBuilder>>{keys, items});
    auto list = std::make_shared<arrow::ListBuilder>(pool, entries, ArrowType(field));
    column.builder = list;
    column.append = [list, entries, keys, items](const RunRecord& r) -> arrow::Status {
      ARROW_RETURN_NOT_OK(list->Append());
      for (const auto& [key, value] : r.spec.kind_params) {
        ARROW_RETURN_NOT_OK(entries->Append());
        ARROW_RETURN_NOT_OK(keys->Append(ToValidUtf8(key)));
        ARROW_RETURN_NOT_OK(items->Append(ToValidUtf8(value)));
      }
      return arrow::Status::OK();
    };
    return column;
  }
  if (IsTimestamp(field)) {
    auto builder = std::make_shared<arrow::TimestampBuilder>(ArrowType(field), pool);
    column.builder = builder;
    column.append = [builder, &field](const RunRecord& r) -> arrow::Status {
      const FieldValue value = field.get(r);
      const std::string* text = std::get_if<std::string>(&value);
      if (text == nullptr) return builder->AppendNull();
      absl::StatusOr<int64_t> millis = ParseTimestampMillis(*text);
      if (!millis.ok()) {
        return arrow::Status::Invalid("run ", r.run_id, ": ", field.name, ": ",
                                      std::string(millis.status().message()));
      }
      return builder->Append(*millis);
    };
    return column;
  }
  switch (field.type) {
    case FieldType::kInteger: {
      auto builder = std::make_shared<arrow::Int64Builder>(pool);
      column.builder = builder;
      column.append = [builder, &field](const RunRecord& r) -> arrow::Status {
        const FieldValue value = field.get(r);
        if (const auto* v = std::get_if<int64_t>(&value)) return builder->Append(*v);
        return builder->AppendNull();
      };
      return column;
    }
    case FieldType::kReal: {
      auto builder = std::make_shared<arrow::DoubleBuilder>(pool);
      column.builder = builder;
      column.append = [builder, &field](const RunRecord& r) -> arrow::Status {
        const FieldValue value = field.get(r);
        if (const auto* v = std::get_if<double>(&value)) return builder->Append(*v);
        return builder->AppendNull();
      };
      return column;
    }
    case FieldType::kText:
      break;
  }
  auto builder = std::make_shared<arrow::StringBuilder>(pool);
  column.builder = builder;
  column.append = [builder, &field](const RunRecord& r) -> arrow::Status {
    const FieldValue value = field.get(r);
    if (const auto* v = std::get_if<std::string>(&value)) return builder->Append(ToValidUtf8(*v));
    return builder->AppendNull();
  };
  return column;
}

std::shared_ptr<parquet::WriterProperties> WriterProperties() {
  parquet::WriterProperties::Builder builder;
  builder.version(parquet::ParquetVersion::PARQUET_2_6)
      ->data_page_version(parquet::ParquetDataPageVersion::V1)
      ->compression(parquet::Compression::ZSTD)
      ->compression_level(kZstdLevel)
      ->max_row_group_length(kRowGroupMaxRows)
      ->enable_dictionary()
      ->enable_statistics()
      ->enable_write_page_index()
      ->created_by(parquet::DEFAULT_CREATED_BY);
  return builder.build();
}

// The bytes `run` takes in the columns before compression: its text and
// 8 bytes per other value (a list's text stands for its elements).
int64_t RowBytes(const RunRecord& run) {
  int64_t bytes = 0;
  for (const FieldDef& field : ResultFields()) {
    const FieldValue value = field.get(run);
    const auto* text = std::get_if<std::string>(&value);
    bytes += text != nullptr ? static_cast<int64_t>(text->size()) : 8;
  }
  return bytes;
}

absl::StatusOr<std::string> WriteTable(const std::vector<RunRecord>& runs) {
  arrow::MemoryPool* pool = arrow::system_memory_pool();
  std::vector<Column> columns;
  for (const FieldDef& field : ResultFields()) columns.push_back(MakeColumn(field, pool));
  for (const RunRecord& run : runs) {
    for (Column& column : columns) {
      arrow::Status status = column.append(run);
      if (status.IsInvalid()) return absl::InvalidArgumentError(status.message());
      if (!status.ok()) return FromArrow(status, "building the export");
    }
  }
  arrow::ArrayVector arrays;
  for (Column& column : columns) {
    std::shared_ptr<arrow::Array> array;
    if (absl::Status s = FromArrow(column.builder->Finish(&array), "building the export");
        !s.ok()) {
      return s;
    }
    arrays.push_back(std::move(array));
  }
  std::shared_ptr<arrow::Table> table =
      arrow::Table::Make(RunsArrowSchema(), std::move(arrays), static_cast<int64_t>(runs.size()));
  if (absl::Status s = FromArrow(table->ValidateFull(), "building the export"); !s.ok()) return s;

  auto sink = arrow::io::BufferOutputStream::Create(1 << 16, pool);
  if (!sink.ok()) return FromArrow(sink.status(), "writing Parquet");
  parquet::ArrowWriterProperties::Builder arrow_properties;
  arrow_properties.store_schema();  // exact Arrow types (the timestamps' "UTC") for readers
  auto writer = parquet::arrow::FileWriter::Open(*RunsArrowSchema(), pool, *sink,
                                                 WriterProperties(), arrow_properties.build());
  if (!writer.ok()) return FromArrow(writer.status(), "writing Parquet");
  std::vector<int64_t> groups = RowGroupLengths(runs, kRowGroupMaxBytes, kRowGroupMaxRows);
  if (groups.empty()) groups.push_back(0);  // a file of no runs has one empty row group
  int64_t offset = 0;
  for (const int64_t rows : groups) {  // each WriteTable call writes one row group

    if (absl::Status s =
            FromArrow((*writer)->WriteTable(*table->Slice(offset, rows), rows), "writing Parquet");
        !s.ok()) {
      return s;
    }
    offset += rows;
  }
  if (absl::Status s = FromArrow((*writer)->Close(), "writing Parquet"); !s.ok()) return s;
  auto buffer = (*sink)->Finish();
  if (!buffer.ok()) return FromArrow(buffer.status(), "writing Parquet");
  return (*buffer)->ToString();
}

// --- reading ---------------------------------------------------------------

bool IsStringType(const arrow::DataType& type) {
  return type.id() == arrow::Type::STRING || type.id() == arrow::Type::LARGE_STRING ||
         type.id() == arrow::Type::STRING_VIEW;
}

// Element `i` of a string, large_string or string_view array.
std::string_view StringAt(const arrow::Array& array, int64_t i) {
  switch (array.type_id()) {
    case arrow::Type::LARGE_STRING:
      return static_cast<const arrow::LargeStringArray&>(array).GetView(i);
    case arrow::Type::STRING_VIEW:
      return static_cast<const arrow::StringViewArray&>(array).GetView(i);
    default:
      return static_cast<const arrow::StringArray&>(array).GetView(i);
  }
}

// Whether `type` is a list field's column type: a list of the kind's element
// type, any item name (writers call it element or item).
bool IsListColumnType(const FieldDef& field, const arrow::DataType& type) {
  if (type.id() != arrow::Type::LIST) return false;
  const arrow::DataType& element = *static_cast<const arrow::ListType&>(type).value_type();
  return element.Equals(*ListElementType(field.list), /*check_metadata=*/false);
}

// Whether `type` is kind_params's column: a list of structs of exactly the
// string fields key and value (nullable or not: a null is refused per row).
bool IsKeyValueListType(const arrow::DataType& type) {
  if (type.id() != arrow::Type::LIST) return false;
  const arrow::DataType& element = *static_cast<const arrow::ListType&>(type).value_type();
  if (element.id() != arrow::Type::STRUCT || element.num_fields() != 2) return false;
  return element.field(0)->name() == "key" && IsStringType(*element.field(0)->type()) &&
         element.field(1)->name() == "value" && IsStringType(*element.field(1)->type());
}

// Whether `type` is kind_params's column of a file older than schema version 20.
bool IsStringMapType(const arrow::DataType& type) {
  if (type.id() != arrow::Type::MAP) return false;
  const auto& map = static_cast<const arrow::MapType&>(type);
  return IsStringType(*map.key_type()) && IsStringType(*map.item_type());
}

// Why the column `type` cannot hold `field`, or "" when it can. A file older
// than the field's list_typed_since holds the list as JSON text.
std::string TypeMismatch(const FieldDef& field, const arrow::DataType& type, int file_version) {
  const std::string expected = ArrowType(field)->ToString();
  bool ok = false;
  if (IsList(field)) {
    ok = IsListColumnType(field, type) ||
         (file_version < field.list_typed_since && IsStringType(type));
  } else if (IsTimestamp(field)) {
    if (type.id() == arrow::Type::TIMESTAMP) {
      const auto& ts = static_cast<const arrow::TimestampType&>(type);
      ok = ts.unit() == arrow::TimeUnit::MILLI &&
           (ts.timezone() == "UTC" || ts.timezone() == "+00:00");
    }
  } else if (IsKindParams(field)) {
    ok =
        IsKeyValueListType(type) || (file_version < kKeyValueListsVersion && IsStringMapType(type));
  } else if (field.type == FieldType::kInteger) {
    ok = type.id() == arrow::Type::INT64;
  } else if (field.type == FieldType::kReal) {
    ok = type.id() == arrow::Type::DOUBLE;
  } else {
    ok = IsStringType(type);
  }
  if (ok) return "";
  return fmt::format("column {} has type {}, expected {}", field.name, type.ToString(), expected);
}

absl::Status BadElement(const FieldDef& field, int64_t j, std::string_view what) {
  return absl::InvalidArgumentError(fmt::format("field {}: element {} {}", field.name, j, what));
}

// A real element: finite (null only where `null_ok`).
absl::Status CheckReal(const FieldDef& field, const arrow::DoubleArray& reals, int64_t j,
                       int64_t element, bool null_ok, std::optional<double>* out) {
  if (reals.IsNull(j)) {
    if (!null_ok) return BadElement(field, element, "is null");
    *out = std::nullopt;
    return absl::OkStatus();
  }
  const double v = reals.Value(j);
  if (!std::isfinite(v)) return BadElement(field, element, fmt::format("is not finite ({})", v));
  *out = v;
  return absl::OkStatus();
}

// Row `i` of a list field's column as the store's JSON text, checked: at most
// kMaxListElements elements, finite reals, non-null points, positions >= 0.
// A string column (a file older than schema version 15) holds the text itself.
absl::StatusOr<FieldValue> ListValueAt(const FieldDef& field, const arrow::Array& array,
                                       int64_t i) {
  if (array.IsNull(i)) return FieldValue(std::string());
  if (IsStringType(*array.type())) {
    const std::string_view text = StringAt(array, i);
    if (text.empty()) return FieldValue(std::string());
    absl::StatusOr<ListValue> parsed = ParseListText(field, text);
    if (!parsed.ok()) return parsed.status();
    return FieldValue(ListText(field, *parsed));
  }
  const auto& list = static_cast<const arrow::ListArray&>(array);
  const int64_t begin = list.value_offset(i);
  const int64_t size = list.value_length(i);
  if (size > static_cast<int64_t>(kMaxListElements)) {
    return absl::InvalidArgumentError(
        fmt::format("field {}: {} elements, over the limit of {} "
                    "(doc/limits.md)",
                    field.name, size, kMaxListElements));
  }
  ListValue value;
  if (field.list == ListKind::kReals) {
    const auto& reals = static_cast<const arrow::DoubleArray&>(*list.values());
    for (int64_t k = 0; k < size; ++k) {
      std::optional<double> v;
      if (absl::Status s = CheckReal(field, reals, begin + k, k, true, &v); !s.ok()) return s;
      value.reals.push_back(v);
    }
    return FieldValue(ListText(field, value));
  }
  const auto& points = static_cast<const arrow::StructArray&>(*list.values());
  const auto& positions = static_cast<const arrow::Int64Array&>(*points.field(0));
  for (int64_t k = 0; k < size; ++k) {
    const int64_t j = begin + k;
    if (points.IsNull(j) || positions.IsNull(j)) return BadElement(field, k, "is null");
    if (positions.Value(j) < 0) return BadElement(field, k, "has a negative position");
    value.positions.push_back(positions.Value(j));
    if (field.list == ListKind::kRealPoints) {
      std::optional<double> v;
      if (absl::Status s = CheckReal(
              field, static_cast<const arrow::DoubleArray&>(*points.field(1)), j, k, false, &v);
          !s.ok()) {
        return s;
      }
      value.reals.push_back(v);
    } else {
      const auto& integers = static_cast<const arrow::Int64Array&>(*points.field(1));
      if (integers.IsNull(j)) return BadElement(field, k, "is null");
      value.integers.push_back(integers.Value(j));
    }
  }
  return FieldValue(ListText(field, value));
}

// Row `i` of kind_params's column (a list of key/value structs, or a map in
// a file older than schema version 20) as the store's canonical JSON text.
// InvalidArgument for a null entry, key or value, or a key twice.
absl::StatusOr<FieldValue> KindParamsAt(const arrow::Array& array, int64_t i) {
  const auto& list = static_cast<const arrow::ListArray&>(array);  // a MapArray is one too
  const arrow::Array* entries = nullptr;  // the structs; a map's entries are never null
  std::shared_ptr<arrow::Array> keys;
  std::shared_ptr<arrow::Array> items;
  if (array.type_id() == arrow::Type::MAP) {
    keys = static_cast<const arrow::MapArray&>(array).keys();
    items = static_cast<const arrow::MapArray&>(array).items();
  } else {
    const auto& structs = static_cast<const arrow::StructArray&>(*list.values());
    entries = &structs;
    keys = structs.field(0);
    items = structs.field(1);
  }
  const int64_t begin = list.value_offset(i);
  const int64_t end = begin + list.value_length(i);
  std::map<std::string, std::string> params;
  for (int64_t j = begin; j < end; ++j) {
    if ((entries != nullptr && entries->IsNull(j)) || keys->IsNull(j)) {
      return absl::InvalidArgumentError(fmt::format("kind_params: NULL entry {}", j - begin));
    }
    if (items->IsNull(j)) {
      return absl::InvalidArgumentError(
          fmt::format("kind_params: NULL value of key '{}'", StringAt(*keys, j)));
    }
    auto [it, inserted] =
        params.emplace(std::string(StringAt(*keys, j)), std::string(StringAt(*items, j)));
    if (!inserted) {
      return absl::InvalidArgumentError(fmt::format("kind_params: key '{}' twice", it->first));
    }
  }
  return FieldValue(KindParamsToJson(params));
}

// The value of row `i` of `array` (holding `field`) as the store holds it.
absl::StatusOr<FieldValue> ValueAt(const FieldDef& field, const arrow::Array& array, int64_t i) {
  if (IsList(field)) return ListValueAt(field, array, i);
  if (array.IsNull(i)) return FieldValue(std::monostate{});
  if (IsTimestamp(field)) {
    return FieldValue(
        FormatTimestampMillis(static_cast<const arrow::TimestampArray&>(array).Value(i)));
  }
  if (IsKindParams(field)) return KindParamsAt(array, i);
  switch (field.type) {
    case FieldType::kInteger:
      return FieldValue(static_cast<const arrow::Int64Array&>(array).Value(i));
    case FieldType::kReal:
      return FieldValue(static_cast<const arrow::DoubleArray&>(array).Value(i));
    case FieldType::kText:
      break;
  }
  return FieldValue(std::string(StringAt(array, i)));
}

// Whether an error's text is a std::bad_alloc that parquet-cpp caught and
// wrapped ("Couldn't deserialize thrift: std::bad_alloc"): the text is all it
// keeps, and no data of the file appears in it.
bool WrapsBadAlloc(std::string_view message) {
  return message.find("std::bad_alloc") != std::string_view::npos;
}

}  // namespace

// Outside the anonymous namespace: ParquetRunReader::State holds one, and a member
// whose type has internal linkage is an error in the unity build (-Wsubobject-linkage).
// An Arrow memory pool that refuses to hold more than `cap` bytes at once: a
// reader of a hostile file (a page that claims to decompress to gigabytes, a
// batch of huge values) fails with OutOfMemory instead of exhausting the host.
class CappedMemoryPool : public arrow::MemoryPool {
 public:
  CappedMemoryPool(arrow::MemoryPool* base, int64_t cap) : base_(base), cap_(cap) {}

  arrow::Status Allocate(int64_t size, int64_t alignment, uint8_t** out) override {
    if (size > cap_ - held_) return Refuse(size);
    ARROW_RETURN_NOT_OK(Noted(base_->Allocate(size, alignment, out)));
    Count(size);
    return arrow::Status::OK();
  }
  arrow::Status Reallocate(int64_t old_size, int64_t new_size, int64_t alignment,
                           uint8_t** ptr) override {
    if (new_size - old_size > cap_ - held_) return Refuse(new_size);
    ARROW_RETURN_NOT_OK(Noted(base_->Reallocate(old_size, new_size, alignment, ptr)));
    Count(new_size - old_size);
    return arrow::Status::OK();
  }
  // Whether `status` (of a read through this pool) means the process ran out
  // of memory: an allocation failed, here or in another pool, and not
  // because this pool refused past its cap (a file too large: bad input).
  bool OutOfMemory(const arrow::Status& status) const {
    return base_failed_ || (status.IsOutOfMemory() && !refused_) || WrapsBadAlloc(status.message());
  }
  void Free(uint8_t* buffer, int64_t size, int64_t alignment) override {
    base_->Free(buffer, size, alignment);
    held_ -= size;
  }
  int64_t bytes_allocated() const override { return held_; }
  int64_t max_memory() const override { return peak_; }
  int64_t total_bytes_allocated() const override { return total_; }
  int64_t num_allocations() const override { return allocations_; }
  std::string backend_name() const override { return base_->backend_name(); }

 private:
  arrow::Status Refuse(int64_t size) {
    refused_ = true;
    return arrow::Status::OutOfMemory("decoding needs more than ", cap_, " bytes at once (", size,
                                      " more asked); see doc/limits.md");
  }
  arrow::Status Noted(arrow::Status status) {
    if (!status.ok()) base_failed_ = true;
    return status;
  }
  void Count(int64_t size) {
    held_ += size;
    peak_ = std::max(peak_, held_);
    if (size > 0) total_ += size;
    ++allocations_;
  }

  arrow::MemoryPool* const base_;
  const int64_t cap_;
  int64_t held_ = 0;
  int64_t peak_ = 0;
  int64_t total_ = 0;
  int64_t allocations_ = 0;
  bool base_failed_ = false;
  bool refused_ = false;
};

namespace {

// Checks the footer's claims before any data page is read: the row count and
// the decompressed size of the column chunks (of every row group) within
// the import limits.
absl::Status CheckParquetFooter(const parquet::FileMetaData& metadata, const std::string& name) {
  if (metadata.num_rows() > kMaxImportRuns) {
    return Invalid(name, fmt::format("{} rows, over the limit of {} runs per import "
                                     "(doc/limits.md)",
                                     metadata.num_rows(), kMaxImportRuns));
  }
  int64_t bytes = 0;
  for (int g = 0; g < metadata.num_row_groups(); ++g) {
    std::unique_ptr<parquet::RowGroupMetaData> group = metadata.RowGroup(g);
    for (int c = 0; c < group->num_columns(); ++c) {
      const int64_t size = group->ColumnChunk(c)->total_uncompressed_size();
      if (size < 0 || size > kMaxImportBytes - bytes) {
        return Invalid(name, fmt::format("row group {}: its columns decompress to more than {} "
                                         "bytes, over the import limit (doc/limits.md)",
                                         g, kMaxImportBytes));
      }
      bytes += size;
    }
  }
  return absl::OkStatus();
}
// Checks the file's columns against the field table. A file that states an
// older schema version may lack the fields added since; `*version` is set to
// the stated version (kSchemaVersion when the file states none).
absl::Status CheckSchema(const arrow::Schema& schema,
                         const std::shared_ptr<const arrow::KeyValueMetadata>& metadata,
                         const std::string& name, int* file_version) {
  *file_version = kSchemaVersion;
  if (metadata != nullptr) {
    const int index = metadata->FindKey(std::string(kParquetSchemaVersionKey));
    if (index >= 0) {
      const std::string& text = metadata->value(index);
      int version = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), version);
      if (ec != std::errc() || end != text.data() + text.size() || version < 1) {
        return Invalid(name, fmt::format("bad {} '{}'", kParquetSchemaVersionKey, text));
      }
      if (version > kSchemaVersion) {
        return Invalid(name, fmt::format("written with schema version {}, newer than this "
                                         "compatlab's ({}); use a newer compatlab",
                                         version, kSchemaVersion));
      }
      *file_version = version;
    }
  }
  std::set<std::string> known;
  for (const FieldDef& field : ResultFields()) {
    known.insert(std::string(field.name));
    const std::vector<int> indices = schema.GetAllFieldIndices(std::string(field.name));
    if (indices.empty() && field.since_version > *file_version) continue;  // added later
    if (indices.empty()) {
      return Invalid(name, fmt::format("not a compatlab runs file: no column {}", field.name));
    }
    if (indices.size() > 1) {
      return Invalid(name, fmt::format("column {} appears more than once", field.name));
    }
    const int index = indices.front();
    if (std::string why = TypeMismatch(field, *schema.field(index)->type(), *file_version);
        !why.empty()) {
      return Invalid(name, why);
    }
  }
  for (const auto& field : schema.fields()) {
    if (known.count(field->name()) == 0) {
      return Invalid(name, fmt::format("unknown column {}", field->name()));
    }
  }
  return absl::OkStatus();
}

// The columns of `batch` in field-table order (null: the file predates the field).
std::vector<std::shared_ptr<arrow::Array>> BatchFieldColumns(const arrow::RecordBatch& batch) {
  std::vector<std::shared_ptr<arrow::Array>> columns;
  for (const FieldDef& field : ResultFields()) {
    columns.push_back(batch.GetColumnByName(std::string(field.name)));
  }
  return columns;
}

// The out-of-memory error of a reader: an allocation failed (the process's
// memory limit), which says nothing about the file's data.
absl::Status OutOfMemory(const std::string& name) {
  return absl::ResourceExhaustedError(
      fmt::format("{}: out of memory while reading it (the reader holds at most {} bytes and {} "
                  "rows at once; the process may use less: doc/limits.md)",
                  name, kMaxParquetReaderBytes, kParquetBatchRows));
}

// `step` with a failed allocation (std::bad_alloc) reported as running out of
// memory, and parquet-cpp's exceptions as corrupt data.
template <typename Step>
auto Caught(const std::string& name, Step step) -> decltype(step()) {
  try {
    return step();
  } catch (const std::bad_alloc&) {
    return OutOfMemory(name);
  } catch (const std::exception& e) {
    if (WrapsBadAlloc(e.what())) return OutOfMemory(name);
    // parquet-cpp throws ParquetException from some decoding paths.
    return Invalid(name, fmt::format("corrupt Parquet data: {}", e.what()));
  }
}

}  // namespace

struct ParquetRunReader::State {
  State(std::string file_name, std::shared_ptr<arrow::io::RandomAccessFile> file,
        ParquetReaderMemory memory)
      : name(std::move(file_name)),
        pool(memory.base != nullptr ? memory.base : arrow::system_memory_pool(), memory.cap),
        input(std::move(file)) {}
  const std::string name;
  // Declared before the readers that allocate from it.
  CappedMemoryPool pool;
  std::shared_ptr<arrow::io::RandomAccessFile> input;
  std::unique_ptr<parquet::arrow::FileReader> reader;
  std::unique_ptr<arrow::RecordBatchReader> batches;
  int64_t row = 0;
  int64_t text_bytes = 0;

  // A file the reader could not open: out of memory when the process's
  // allocator failed, else not a readable file.
  absl::Status Unreadable(const arrow::Status& why) const {
    if (pool.OutOfMemory(why)) return OutOfMemory(name);
    return Invalid(name, "not a readable Parquet file: " + why.message());
  }

  absl::Status Open() {
    parquet::ReaderProperties reader_properties(&pool);  // pages are decompressed in `pool`
    parquet::arrow::FileReaderBuilder builder;
    if (arrow::Status s = builder.Open(input, reader_properties); !s.ok()) {
      return Unreadable(s);
    }
    const std::shared_ptr<parquet::FileMetaData> footer = builder.raw_reader()->metadata();
    if (absl::Status s = CheckParquetFooter(*footer, name); !s.ok()) return s;
    // No thread: neither decoding threads nor pre-buffering, which reads
    // through Arrow's IO thread pool and its default memory pool.
    parquet::ArrowReaderProperties properties(/*use_threads=*/false);
    properties.set_pre_buffer(false);
    properties.set_batch_size(kParquetBatchRows);
    builder.memory_pool(&pool)->properties(properties);
    auto built = builder.Build();
    if (!built.ok()) {
      return Unreadable(built.status());
    }
    reader = std::move(*built);
    std::shared_ptr<arrow::Schema> schema;
    if (arrow::Status s = reader->GetSchema(&schema); !s.ok()) {
      return Unreadable(s);
    }
    int file_version = 0;
    if (absl::Status s = CheckSchema(*schema, footer->key_value_metadata(), name, &file_version);
        !s.ok()) {
      return s;
    }
    auto opened = reader->GetRecordBatchReader();
    if (!opened.ok()) return Unreadable(opened.status());
    batches = std::move(*opened);
    return absl::OkStatus();
  }

  absl::Status Next(std::vector<RunRecord>& runs) {
    runs.clear();
    std::shared_ptr<arrow::RecordBatch> batch;
    if (arrow::Status s = batches->ReadNext(&batch); !s.ok()) {
      if (pool.OutOfMemory(s)) return OutOfMemory(name);
      return Invalid(
          name, fmt::format("row {}: {}: {}", row,
                            s.IsOutOfMemory() ? "too large" : "corrupt Parquet data", s.message()));
    }
    if (batch == nullptr) return absl::OkStatus();
    if (arrow::Status s = batch->ValidateFull(); !s.ok()) {
      return Invalid(name, fmt::format("row {}: corrupt data: {}", row, s.message()));
    }
    const std::vector<FieldDef>& fields = ResultFields();
    const std::vector<std::shared_ptr<arrow::Array>> columns = BatchFieldColumns(*batch);
    for (int64_t i = 0; i < batch->num_rows(); ++i, ++row) {
      RunRecord record;
      for (size_t f = 0; f < fields.size(); ++f) {
        if (columns[f] == nullptr) continue;  // keeps the default of a field added later
        absl::StatusOr<FieldValue> value = ValueAt(fields[f], *columns[f], i);
        absl::Status status = value.ok() ? fields[f].set(*value, record) : value.status();
        if (!status.ok()) {
          return Invalid(name, fmt::format("row {}: {}", row, std::string(status.message())));
        }
      }
      absl::StatusOr<int64_t> size = CheckImportedRun(record);
      if (!size.ok()) {
        return Invalid(
            name, fmt::format("row {} (run {}): {}", row, TruncateForDisplay(record.run_id, 64),
                              std::string(size.status().message())));
      }
      text_bytes += *size;
      if (text_bytes > kMaxImportBytes) {
        return Invalid(name, fmt::format("row {}: the file's text is over the import limit of "
                                         "{} bytes (doc/limits.md)",
                                         row, kMaxImportBytes));
      }
      FillMissingErrorSignature(&record.result);  // files older than the stored signature
      FillMissingPackages(&record.result);        // files older than schema 19
      if (record.run_id.empty() || record.sweep_id.empty()) {
        return Invalid(name, fmt::format("row {}: empty run_id or sweep_id", row));
      }
      if (const std::string test_id = record.spec.TestId(); test_id != record.test_id) {
        return Invalid(name, fmt::format("row {} (run {}): test_id {} is not the hash of the "
                                         "row's test fields ({})",
                                         row, record.run_id, record.test_id, test_id));
      }
      runs.push_back(std::move(record));
    }
    return absl::OkStatus();
  }
};

ParquetRunReader::ParquetRunReader(std::unique_ptr<State> state) : state_(std::move(state)) {}
ParquetRunReader::~ParquetRunReader() = default;

absl::StatusOr<std::unique_ptr<ParquetRunReader>> ParquetRunReader::Open(
    const std::filesystem::path& file) {
  // The system allocator, as the reader's pool: Arrow's default pool
  // (jemalloc or mimalloc) is never used.
  auto input = arrow::io::ReadableFile::Open(file.string(), arrow::system_memory_pool());
  if (!input.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: cannot read: {}", file.string(), input.status().message()));
  }
  return FromInput(*input, file.string());
}

absl::StatusOr<std::unique_ptr<ParquetRunReader>> ParquetRunReader::FromInput(
    std::shared_ptr<arrow::io::RandomAccessFile> input, const std::string& name,
    ParquetReaderMemory memory) {
  auto state = std::make_unique<State>(name, std::move(input), memory);
  if (absl::Status s = Caught(name, [&state] { return state->Open(); }); !s.ok()) return s;
  return std::unique_ptr<ParquetRunReader>(new ParquetRunReader(std::move(state)));
}

absl::Status ParquetRunReader::Next(std::vector<RunRecord>& batch) {
  return Caught(state_->name, [&] { return state_->Next(batch); });
}

int64_t ParquetRunReader::rows_read() const { return state_->row; }

const std::shared_ptr<arrow::Schema>& RunsArrowSchema() {
  static const auto* const schema = new std::shared_ptr<arrow::Schema>(MakeSchema());
  return *schema;
}

std::vector<int64_t> RowGroupLengths(const std::vector<RunRecord>& runs, int64_t max_bytes,
                                     int64_t max_rows) {
  std::vector<int64_t> lengths;
  int64_t rows = 0;
  int64_t bytes = 0;
  for (const RunRecord& run : runs) {
    const int64_t size = RowBytes(run);
    if (rows > 0 && (rows == max_rows || bytes + size > max_bytes)) {
      lengths.push_back(rows);
      rows = 0;
      bytes = 0;
    }
    ++rows;
    bytes += size;
  }
  if (rows > 0) lengths.push_back(rows);
  return lengths;
}

void SortRunsForExport(std::vector<RunRecord>& runs) {
  std::sort(runs.begin(), runs.end(), [](const RunRecord& a, const RunRecord& b) {
    return std::tie(a.spec.model_id, a.test_id, a.started_at, a.run_id) <
           std::tie(b.spec.model_id, b.test_id, b.started_at, b.run_id);
  });
}

absl::StatusOr<std::string> RunsToParquet(std::vector<RunRecord> runs) {
  SortRunsForExport(runs);
  try {
    return WriteTable(runs);
  } catch (const std::exception& e) {
    return absl::InternalError(fmt::format("writing Parquet: {}", e.what()));
  }
}

absl::StatusOr<std::vector<RunRecord>> RunsFromParquet(std::string_view bytes,
                                                       const std::string& name) {
  auto buffer = std::make_shared<arrow::Buffer>(reinterpret_cast<const uint8_t*>(bytes.data()),
                                                static_cast<int64_t>(bytes.size()));
  absl::StatusOr<std::unique_ptr<ParquetRunReader>> reader =
      ParquetRunReader::FromInput(std::make_shared<arrow::io::BufferReader>(buffer), name);
  if (!reader.ok()) return reader.status();
  std::vector<RunRecord> runs;
  std::set<std::string> run_ids;
  std::vector<RunRecord> batch;
  while (true) {
    const int64_t first_row = (*reader)->rows_read();
    if (absl::Status s = (*reader)->Next(batch); !s.ok()) return s;
    if (batch.empty()) return runs;
    for (size_t i = 0; i < batch.size(); ++i) {
      if (!run_ids.insert(batch[i].run_id).second) {
        return Invalid(name, fmt::format("row {}: run {} appears twice",
                                         first_row + static_cast<int64_t>(i), batch[i].run_id));
      }
      runs.push_back(std::move(batch[i]));
    }
  }
}

absl::StatusOr<int64_t> ParseTimestampMillis(std::string_view text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, ms = 0;
  char z = 0;
  int consumed = 0;
  const std::string copy(text);
  const bool parsed = text.size() == 24 &&
                      std::sscanf(copy.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3d%c%n", &y, &mo, &d, &h,
                                  &mi, &s, &ms, &z, &consumed) == 8 &&
                      consumed == 24 && z == 'Z';
  if (parsed) {
    using namespace std::chrono;
    const year_month_day date{year{y}, month{static_cast<unsigned>(mo)},
                              day{static_cast<unsigned>(d)}};
    if (date.ok() && h < 24 && mi < 60 && s < 60) {
      const int64_t days = sys_days{date}.time_since_epoch().count();
      const int64_t millis = ((days * 24 + h) * 60 + mi) * 60'000 + s * 1000 + ms;
      // Rejects what sscanf tolerated (signs, spaces): only the canonical text.
      if (FormatTimestampMillis(millis) == text) return millis;
    }
  }
  return absl::InvalidArgumentError(
      fmt::format("'{}' is not a UTC timestamp like 2026-11-30T02:24:35.123Z", text));
}

std::string FormatTimestampMillis(int64_t millis) {
  using namespace std::chrono;
  const sys_time<milliseconds> time{milliseconds{millis}};
  const sys_days days = floor<std::chrono::days>(time);
  const year_month_day date{days};
  const hh_mm_ss<milliseconds> clock{time - days};
  return fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}.{:03d}Z", int{date.year()},
                     unsigned{date.month()}, unsigned{date.day()}, clock.hours().count(),
                     clock.minutes().count(), clock.seconds().count(), clock.subseconds().count());
}

}  // namespace compatlab
