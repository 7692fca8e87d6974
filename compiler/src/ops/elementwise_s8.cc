// The int8 elementwise ops (qlstm_add_s8 and qlstm_mul_s8, arm_elementwise_add_s8's and
// arm_elementwise_mul_s8's arithmetic; parameters derive_ops.h): operand 1 is the op's input
// buffer, operand 2 its second input buffer, each read whole (offsets 0 in a compiled program).
// The two kinds differ in their block alone, so one template serves both.
#include <nlohmann/json.hpp>

#include "qlstm/compiler/ops/op_helpers.h"
#include "qlstm/elementwise_s8.h"

namespace qlstm {
namespace compiler {
namespace ops {
namespace {

// What differs between the add and the multiply: the block's member and its codec.
template <class Derived>
struct Elementwise;
template <>
struct Elementwise<DerivedAdd> {
  using Params = qlstm_add_s8_params;
  static Params& member(OpBlock* b) { return b->add; }
  static constexpr const char* kVerb = "add";
  template <class V>
  static void visit(Params& p, V& v) {
    visit_add_s8_fields(p, v);
  }
};
template <>
struct Elementwise<DerivedMul> {
  using Params = qlstm_mul_s8_params;
  static Params& member(OpBlock* b) { return b->mul; }
  static constexpr const char* kVerb = "multiply";
  template <class V>
  static void visit(Params& p, V& v) {
    visit_mul_s8_fields(p, v);
  }
};

template <class Derived>
const void* to_kernel(const ProgramOp& op, int32_t, int32_t, Layout, int32_t, OpBlock* block) {
  auto& p = Elementwise<Derived>::member(block);
  p = op.as<Derived>().kernel_params(0);
  return &p;
}

template <class Derived>
bool boundary(const ProgramOp& op, OpBoundary* b) {
  const Derived& d = op.as<Derived>();
  const int32_t n = d.block.shape.row_size;
  *b = {d.input1, d.output, n, n, d.input2, n};
  return true;
}

void memory(const ProgramOp&, int32_t, ProgramMemory*, ProgramMemory::Op*) {}  // scalars in the op table

template <class Derived>
void report(const ProgramOp& op, nlohmann::json* row) {
  const Derived& d = op.as<Derived>();
  (*row)["operands"] = {{{"scale", d.input1.scale}, {"zero_point", d.input1.zero_point}},
                        {{"scale", d.input2.scale}, {"zero_point", d.input2.zero_point}}};
}

template <class Derived>
std::string describe(const qlstm_op& o, const ProgramOp&) {
  const auto& p = op_block<typename Elementwise<Derived>::Params>(o);
  return std::string(Elementwise<Derived>::kVerb) + " of buffers " + std::to_string(o.input_buffer) + " and " +
         std::to_string(o.second_input_buffer) + ", " + std::to_string(p.shape.row_size) + " per position";
}

template <class Derived>
std::vector<uint8_t> encode(const qlstm_op& o, uint32_t /*file_version*/) {
  using P = typename Elementwise<Derived>::Params;
  return encode_record(op_block<P>(o), [](P& p, auto& w) { Elementwise<Derived>::visit(p, w); });
}

void file_extras(const ProgramOp&, std::vector<double>*, std::string*) {}

void check_arrays(const ProgramOp&, size_t) {}

template <class Derived>
void decode(const OpFileRecord& r, const OpFileOrigin& from, ProgramOp* op) {
  using P = typename Elementwise<Derived>::Params;
  std::vector<uint32_t> aligned;
  const P p = decode_record<RecordReader, P>(r, from, aligned, Elementwise<Derived>::template visit<RecordReader>);
  rows_zero(from, p.shape.rows);
  const std::string at = "field '" + from.where;
  if (p.shape.input1_offset != 0 || p.shape.input2_offset != 0) {
    bad_record(from, at + ".params.shape': a compiled op reads its operands whole (offsets 0)");
  }
  // The block's zero points are the ones its quantizations were derived with.
  if (p.input1_zero_point != r.input.zero_point || p.input2_zero_point != r.second_input.zero_point ||
      p.output_zero_point != r.output.zero_point) {
    bad_record(from, at + ".params': its zero points differ from the op's input, second_input and output");
  }
  Derived d;
  d.block = p;
  d.input1 = r.input;
  d.input2 = r.second_input;
  d.output = r.output;
  op->set(d);
}

}  // namespace

extern const OpKind kAddS8Kind = {
    QLSTM_OP_ADD_S8, "add", "QLSTM_OP_ADD_S8",
    "qlstm_op_handler_add_s8",
    /*state=*/nullptr, /*int16_data=*/false, /*file_version=*/11,
    /*fixed_output=*/nullptr,  // calibration's: the observed range of the sum
    /*selected_step=*/nullptr, to_kernel<DerivedAdd>, boundary<DerivedAdd>, memory, report<DerivedAdd>,
    describe<DerivedAdd>, encode<DerivedAdd>, file_extras, check_arrays, decode<DerivedAdd>, no_macs,
    /*run_rows=*/nullptr};

extern const OpKind kMulS8Kind = {
    QLSTM_OP_MUL_S8, "mul", "QLSTM_OP_MUL_S8",
    "qlstm_op_handler_mul_s8",
    /*state=*/nullptr, /*int16_data=*/false, /*file_version=*/11,
    /*fixed_output=*/nullptr,  // calibration's: the observed range of the product
    /*selected_step=*/nullptr, to_kernel<DerivedMul>, boundary<DerivedMul>, memory, report<DerivedMul>,
    describe<DerivedMul>, encode<DerivedMul>, file_extras, check_arrays, decode<DerivedMul>, no_macs,
    /*run_rows=*/nullptr};

}  // namespace ops
}  // namespace compiler
}  // namespace qlstm
