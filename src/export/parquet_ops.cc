#include "export/parquet_ops.h"

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <utility>
#include <variant>

#include "arrow/api.h"
#include "arrow/io/memory.h"
#include "core/limits.h"
#include "fmt/format.h"
#include "parquet/arrow/reader.h"
#include "parquet/arrow/writer.h"
#include "parquet/properties.h"

namespace compatlab {
namespace {

enum class OpColumnType { kText, kInteger, kReal, kOptionalReal };
using OpValue = std::variant<std::string, int64_t, std::optional<double>>;

// One column of the op results file: its name, type, and how a row fills it.
struct OpColumn {
  const char* name;
  OpColumnType type;
  std::function<OpValue(const OpSweepInfo&, const OpResult&)> get;
  std::function<void(const OpValue&, OpSweepInfo&, OpResult&)> set;
};

#define OP_SWEEP_TEXT(member)                                                                     \
  OpColumn {                                                                                      \
#member, OpColumnType::kText,                                                                 \
        [](const OpSweepInfo& s, const OpResult&)                                                 \
             -> OpValue { return s.member; },                                                     \
                                           [](const OpValue& v, OpSweepInfo& s,                   \
                                              OpResult&) { s.member = std::get<std::string>(v); } \
  }
#define OP_TEXT(member)                                                                          \
  OpColumn {                                                                                     \
#member, OpColumnType::kText,                                                                \
        [](const OpSweepInfo&, const OpResult& r)                                                \
             -> OpValue { return r.member; }, [](const OpValue& v, OpSweepInfo&,                 \
                                                 OpResult&                                       \
                                                     r) { r.member = std::get<std::string>(v); } \
  }
#define OP_COUNT(member)                                                                           \
  OpColumn {                                                                                       \
#member, OpColumnType::kInteger,                                                               \
        [](const OpSweepInfo&, const OpResult& r)                                                  \
             -> OpValue { return r.member; }, [](const OpValue& v, OpSweepInfo&,                   \
                                                 OpResult& r) { r.member = std::get<int64_t>(v); } \
  }
#define OP_FIGURE(member)                                                                      \
  OpColumn {                                                                                   \
#member, OpColumnType::kOptionalReal,                                                        \
        [](const OpSweepInfo&, const OpResult& r) -> OpValue { return r.member; },               \
        [](const OpValue& v, OpSweepInfo&, OpResult& r) { r.member = std::get<std::optional<double>>(v); } \
  }

// The file's columns in order: the op sweep's, then the case's (doc/dataset.md).
const std::vector<OpColumn>& OpColumns() {
  static const auto* const columns = new std::vector<OpColumn>{
      OP_SWEEP_TEXT(op_sweep_id),
      OP_SWEEP_TEXT(created_at),
      OP_SWEEP_TEXT(finished_at),
      OP_SWEEP_TEXT(target),
      OP_SWEEP_TEXT(mode),
      OP_SWEEP_TEXT(backend),
      OP_SWEEP_TEXT(dtypes),
      OpColumn{"max_samples", OpColumnType::kInteger,
               [](const OpSweepInfo& s, const OpResult&) -> OpValue { return s.max_samples; },
               [](const OpValue& v, OpSweepInfo& s, OpResult&) {
                 s.max_samples = std::get<int64_t>(v);
               }},
      OpColumn{
          "check_skips", OpColumnType::kInteger,
          [](const OpSweepInfo& s, const OpResult&) -> OpValue { return int64_t{s.check_skips}; },
          [](const OpValue& v, OpSweepInfo& s, OpResult&) {
            s.check_skips = std::get<int64_t>(v) != 0;
          }},
      OP_SWEEP_TEXT(torch_version),
      OP_SWEEP_TEXT(python_version),
      OP_SWEEP_TEXT(host),
      OP_TEXT(op),
      OP_TEXT(variant),
      OP_TEXT(dtype),
      OpColumn{"status", OpColumnType::kText,
               [](const OpSweepInfo&, const OpResult& r) -> OpValue {
                 return std::string(TestStatusName(r.status));
               },
               [](const OpValue& v, OpSweepInfo&, OpResult& r) {
                 r.status = *ParseTestStatus(std::get<std::string>(v));  // checked before
               }},
      OP_TEXT(detail),
      OP_COUNT(samples),
      OP_COUNT(passed),
      OP_COUNT(failed),
      OP_COUNT(errored),
      OP_COUNT(timed_out),
      OP_TEXT(first_failure),
      OP_TEXT(error_type),
      OP_TEXT(signature),
      OP_FIGURE(max_abs_err),
      OP_FIGURE(max_rel_err),
      OP_FIGURE(atol),
      OP_FIGURE(rtol),
      OP_TEXT(tol_source),
      OP_TEXT(ref_dtype),
      OP_TEXT(fallback_audit),
      OP_TEXT(aten_ops),
      OP_TEXT(fallback_ops),
      OP_TEXT(skip_source),
      OP_TEXT(skip_kind),
      OP_TEXT(skip_reason),
      OpColumn{"wall_s", OpColumnType::kReal,
               [](const OpSweepInfo&, const OpResult& r) -> OpValue {
                 return std::optional<double>(r.wall_s);
               },
               [](const OpValue& v, OpSweepInfo&, OpResult& r) {
                 r.wall_s = std::get<std::optional<double>>(v).value_or(0);
               }},
  };
  return *columns;
}

#undef OP_SWEEP_TEXT
#undef OP_TEXT
#undef OP_COUNT
#undef OP_FIGURE

std::shared_ptr<arrow::DataType> OpArrowType(OpColumnType type) {
  switch (type) {
    case OpColumnType::kText:
      return arrow::utf8();
    case OpColumnType::kInteger:
      return arrow::int64();
    default:
      return arrow::float64();
  }
}

std::shared_ptr<arrow::Schema> OpSchema() {
  arrow::FieldVector fields;
  for (const OpColumn& c : OpColumns()) {
    fields.push_back(
        arrow::field(c.name, OpArrowType(c.type), c.type == OpColumnType::kOptionalReal));
  }
  return arrow::schema(std::move(fields),
                       arrow::key_value_metadata({std::string(kParquetTableKey)}, {"op_results"}));
}

absl::Status ArrowError(const arrow::Status& s, std::string_view what) {
  return absl::InternalError(fmt::format("{}: {}", what, s.ToString()));
}

// The array of column `c` over every row.
absl::StatusOr<std::shared_ptr<arrow::Array>> BuildOpColumn(
    const OpColumn& c, const std::vector<std::pair<const OpSweepInfo*, const OpResult*>>& rows) {
  std::unique_ptr<arrow::ArrayBuilder> builder;
  if (arrow::Status s =
          arrow::MakeBuilder(arrow::default_memory_pool(), OpArrowType(c.type), &builder);
      !s.ok()) {
    return ArrowError(s, "building op results");
  }
  for (const auto& [sweep, result] : rows) {
    const OpValue v = c.get(*sweep, *result);
    arrow::Status s;
    if (const auto* text = std::get_if<std::string>(&v)) {
      s = static_cast<arrow::StringBuilder&>(*builder).Append(*text);
    } else if (const auto* n = std::get_if<int64_t>(&v)) {
      s = static_cast<arrow::Int64Builder&>(*builder).Append(*n);
    } else if (const auto& d = std::get<std::optional<double>>(v); d.has_value()) {
      s = static_cast<arrow::DoubleBuilder&>(*builder).Append(*d);
    } else {
      s = builder->AppendNull();
    }
    if (!s.ok()) return ArrowError(s, "building op results");
  }
  std::shared_ptr<arrow::Array> array;
  if (arrow::Status s = builder->Finish(&array); !s.ok())
    return ArrowError(s, "building op results");
  return array;
}

absl::Status Bad(const std::string& name, const std::string& what) {
  return absl::InvalidArgumentError(fmt::format("{}: {}", name, what));
}

// Row `i` of column `c` (array `a`), checked.
absl::StatusOr<OpValue> ReadValue(const OpColumn& c, const arrow::Array& a, int64_t i,
                                  const std::string& name) {
  const std::string at = fmt::format("row {}: column {}", i, c.name);
  if (a.IsNull(i)) {
    if (c.type != OpColumnType::kOptionalReal) return Bad(name, at + " is null");
    return OpValue(std::optional<double>());
  }
  switch (c.type) {
    case OpColumnType::kText: {
      std::string_view v = static_cast<const arrow::StringArray&>(a).GetView(i);
      if (v.size() > static_cast<size_t>(kMaxImportTextBytes)) {
        return Bad(name, fmt::format("{} is over {} bytes", at, kMaxImportTextBytes));
      }
      return OpValue(std::string(v));
    }
    case OpColumnType::kInteger: {
      const int64_t v = static_cast<const arrow::Int64Array&>(a).Value(i);
      if (v < 0) return Bad(name, at + " is negative");
      return OpValue(v);
    }
    default: {
      const double v = static_cast<const arrow::DoubleArray&>(a).Value(i);
      if (!std::isfinite(v)) return Bad(name, at + " is not finite");
      return OpValue(std::optional<double>(v));
    }
  }
}

// The checks of one read row beyond its columns' own.
absl::Status CheckOpRow(const OpSweepInfo& s, const OpResult& r, int64_t i,
                        const std::string& name) {
  if (s.op_sweep_id.empty() || s.op_sweep_id.size() > kMaxStoredIdBytes) {
    return Bad(name, fmt::format("row {}: a bad op_sweep_id", i));
  }
  if (absl::Status k = CheckOpKey(r.Key()); !k.ok()) {
    return Bad(name, fmt::format("row {}: {}", i, std::string(k.message())));
  }
  if (s.mode != kModeEager && s.mode != kModeCompile) {
    return Bad(
        name, fmt::format("row {}: mode {} is neither eager nor compile", i, s.mode.substr(0, 40)));
  }
  if (!r.skip_source.empty() && r.skip_source != kSkipSourcePytorch &&
      r.skip_source != kSkipSourceTarget && r.skip_source != kSkipSourceCompatlab) {
    return Bad(name, fmt::format("row {}: unknown skip_source", i));
  }
  return absl::OkStatus();
}

// The read table's columns against OpColumns (names, order and types); InvalidArgument.
absl::Status CheckOpSchema(const arrow::Schema& schema, const std::string& name) {
  const auto& columns = OpColumns();
  const auto metadata = schema.metadata();
  if (metadata == nullptr ||
      metadata->Get(std::string(kParquetTableKey)).ValueOr("") != "op_results") {
    return Bad(name, "not an op results file (no compatlab.table = op_results)");
  }
  if (schema.num_fields() != static_cast<int>(columns.size())) {
    return Bad(name, fmt::format("{} columns, expected {}", schema.num_fields(), columns.size()));
  }
  for (size_t i = 0; i < columns.size(); ++i) {
    const auto& field = *schema.field(static_cast<int>(i));
    if (field.name() != columns[i].name || !field.type()->Equals(*OpArrowType(columns[i].type))) {
      return Bad(name, fmt::format("column {} is {} {}, expected {} {}", i, field.name(),
                                   field.type()->ToString(), columns[i].name,
                                   OpArrowType(columns[i].type)->ToString()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> OpResultsToParquet(const std::vector<OpSweepResults>& sweeps) {
  std::vector<std::pair<const OpSweepInfo*, const OpResult*>> rows;
  for (const OpSweepResults& s : sweeps) {
    for (const OpResult& r : s.results) rows.emplace_back(&s.sweep, &r);
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return std::make_tuple(a.first->op_sweep_id, a.second->op, a.second->variant, a.second->dtype) <
           std::make_tuple(b.first->op_sweep_id, b.second->op, b.second->variant, b.second->dtype);
  });
  arrow::ArrayVector arrays;
  for (const OpColumn& c : OpColumns()) {
    absl::StatusOr<std::shared_ptr<arrow::Array>> array = BuildOpColumn(c, rows);
    if (!array.ok()) return array.status();
    arrays.push_back(*std::move(array));
  }
  std::shared_ptr<arrow::Schema> schema = OpSchema();
  std::shared_ptr<arrow::Table> table =
      arrow::Table::Make(schema, arrays, static_cast<int64_t>(rows.size()));
  auto sink = arrow::io::BufferOutputStream::Create(1 << 16);
  if (!sink.ok()) return ArrowError(sink.status(), "writing op results");
  parquet::WriterProperties::Builder properties;
  properties.compression(parquet::Compression::ZSTD)->created_by(parquet::DEFAULT_CREATED_BY);
  parquet::ArrowWriterProperties::Builder arrow_properties;
  arrow_properties.store_schema();
  if (arrow::Status s =
          parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), *sink, 100'000,
                                     properties.build(), arrow_properties.build());
      !s.ok()) {
    return ArrowError(s, "writing op results");
  }
  auto buffer = (*sink)->Finish();
  if (!buffer.ok()) return ArrowError(buffer.status(), "writing op results");
  return (*buffer)->ToString();
}

absl::StatusOr<std::vector<OpSweepResults>> OpResultsFromParquet(std::string_view bytes,
                                                                 const std::string& name,
                                                                 int64_t max_rows) {
  if (static_cast<int64_t>(bytes.size()) > kMaxImportOpFileBytes) {
    return Bad(name, fmt::format("over {} bytes", kMaxImportOpFileBytes));
  }
  auto input = std::make_shared<arrow::io::BufferReader>(std::make_shared<arrow::Buffer>(
      reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int64_t>(bytes.size())));
  parquet::arrow::FileReaderBuilder builder;
  if (arrow::Status s = builder.Open(input); !s.ok()) {
    return Bad(name, "not a readable Parquet file: " + s.message());
  }
  if (builder.raw_reader()->metadata()->num_rows() > max_rows) {
    return Bad(name, fmt::format("more than {} op results", max_rows));
  }
  parquet::ArrowReaderProperties properties(/*use_threads=*/false);
  builder.properties(properties);
  auto reader = builder.Build();
  if (!reader.ok()) return Bad(name, "not a readable Parquet file: " + reader.status().message());
  arrow::Result<std::shared_ptr<arrow::Table>> read = (*reader)->ReadTable();
  if (!read.ok()) return Bad(name, "cannot read: " + read.status().message());
  const std::shared_ptr<arrow::Table>& table = *read;
  if (absl::Status s = CheckOpSchema(*table->schema(), name); !s.ok()) return s;
  auto combined = table->CombineChunksToBatch();
  if (!combined.ok()) return Bad(name, "cannot read: " + combined.status().message());
  const arrow::RecordBatch& batch = **combined;
  std::map<std::string, OpSweepResults> by_sweep;
  std::set<std::tuple<std::string, std::string, std::string, std::string>> seen;
  for (int64_t i = 0; i < batch.num_rows(); ++i) {
    OpSweepInfo s;
    OpResult r;
    for (size_t c = 0; c < OpColumns().size(); ++c) {
      const OpColumn& column = OpColumns()[c];
      absl::StatusOr<OpValue> v = ReadValue(column, *batch.column(static_cast<int>(c)), i, name);
      if (!v.ok()) return v.status();
      if (column.name == std::string_view("status") &&
          !ParseTestStatus(std::get<std::string>(*v)).ok()) {
        return Bad(name, fmt::format("row {}: unknown status", i));
      }
      column.set(*v, s, r);
    }
    if (absl::Status k = CheckOpRow(s, r, i, name); !k.ok()) return k;
    if (!seen.insert({s.op_sweep_id, r.op, r.variant, r.dtype}).second) {
      return Bad(name, fmt::format("row {}: {} {} of op sweep {} twice", i, r.Key(), r.dtype,
                                   s.op_sweep_id));
    }
    auto [it, inserted] = by_sweep.try_emplace(s.op_sweep_id);
    if (inserted) {
      it->second.sweep = s;
    } else if (std::tie(it->second.sweep.target, it->second.sweep.mode,
                        it->second.sweep.torch_version) !=
               std::tie(s.target, s.mode, s.torch_version)) {
      return Bad(name, fmt::format("row {}: op sweep {} with another target, mode or torch", i,
                                   s.op_sweep_id));
    }
    r.op_sweep_id = s.op_sweep_id;
    it->second.results.push_back(std::move(r));
  }
  std::vector<OpSweepResults> out;
  for (auto& [id, s] : by_sweep) {
    s.sweep.planned = static_cast<int64_t>(s.results.size());
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace compatlab
