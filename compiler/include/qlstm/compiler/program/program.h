// A model as a short program of fused LSTM ops over planned buffers (docs/model-format.md):
// one op per layer and direction, layer-major, forward before reverse (the row order of ONNX's
// and PyTorch's state tensors). Buffer 0 is the model input, the last buffer the model output,
// buffer l the output of layer l - 1 and the input of layer l; a bidirectional layer's two ops
// read the same buffer and write the two halves of each output row ([.., 2H], forward first).
// Host only.
#ifndef QLSTM_COMPILER_PROGRAM_H_
#define QLSTM_COMPILER_PROGRAM_H_

#include <any>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "qlstm/compiler/lower/derive.h"
#include "qlstm/compiler/lower/derive_gru.h"
#include "qlstm/compiler/lower/derive_rnn.h"
#include "qlstm/compiler/lower/derive_ops.h"
#include "qlstm/compiler/lower/derive_s16.h"
#include "qlstm/compiler/float/float_layers.h"
#include "qlstm/compiler/float/float_lstm.h"
#include "qlstm/params_codec.h"
#include "qlstm/program_s8.h"

namespace qlstm {
namespace compiler {

// Where an op's initial hidden or cell state comes from.
enum class StateSource {
  kZero,      // h = 0, c = 0 (ONNX: input absent or a constant zero)
  kConstant,  // a constant of the model, the same for every batch row
  kInput,     // a model input the caller gives at run time: [ops][B][H]
};
const char* state_source_name(StateSource s);

// What the layers after the LSTM stack read from it.
enum class LstmOutput {
  kSequence,    // Y: every step of the last layer (then a head may select a step)
  kFinalState,  // final hidden states of the last layer (FloatProgram::final_directions; Y unused, so no
                // sequence is stored)
};

// The float program the ONNX importer produces and the compiler quantizes: per-step layers in
// front of the stack, the LSTM stack, the layers after it. The model's output is the last head
// layer's (the stack's own output when there is none).
struct FloatProgram {
  std::vector<FloatLayer> front;  // per step, on the model input, before the first LSTM
  std::vector<FloatLayer> head;   // after the stack; a kSelectStep or kPoolTime first turns the sequence into one step
  LstmOutput lstm_output = LstmOutput::kSequence;
  // kFinalState: the last layer's directions whose final hidden states the head reads, side by
  // side in this order (H each): {D - 1} for h_n[-1], {0, 1} for torch.cat((h_n[-2], h_n[-1]), 1)
  // of a bidirectional layer. Empty means {D - 1}.
  std::vector<int32_t> final_directions;
  std::vector<FloatLstm> ops;  // layer-major; in a bidirectional layer the forward op first
  int32_t directions = 1;      // ops per layer: 1, or 2 for bidirectional
  StateSource initial_hidden = StateSource::kZero, initial_cell = StateSource::kZero;
  // kConstant: per op, [H] (the same for every batch row) or [B][H] (a learned [L, B, H] state
  // whose rows differ: the model then fixes the batch, B = constant_state_batch()). Every op's
  // h0 and c0 have the same number of rows.
  std::vector<std::vector<float>> h0, c0;
  bool hidden_output = false, cell_output = false;  // h_n / c_n ([ops][B][H]) are model outputs
  // Per layer (empty: none): a residual connection, the layer's output is its input plus the
  // layers' own output, y_l + x_l (the input's width then D x H). What the layer above, the head
  // and layer_outputs read; h_n and c_n stay the layer's own.
  std::vector<bool> residual;
  // Per layer (empty: none): per-position layers between it and the layer above (a LayerNorm over
  // the features), on its output or its residual sum; what the layer above reads. Never after the
  // last layer (those are the head's).
  std::vector<std::vector<FloatLayer>> between;
  // Per layer (empty: none): the layer above reads this one's final hidden state (its last step),
  // repeated over the steps: an autoencoder's decoder on its encoder's h_n (docs/compiler.md).
  // The layer then writes its final state only, and the one above reads it at every step
  // (the LSTM's input_repeated). Unidirectional int8 LSTM layers only.
  std::vector<bool> repeated;

  bool residual_after(int32_t layer) const {
    return layer >= 0 && static_cast<size_t>(layer) < residual.size() && residual[static_cast<size_t>(layer)];
  }
  bool repeated_after(int32_t layer) const {
    return layer >= 0 && static_cast<size_t>(layer) < repeated.size() && repeated[static_cast<size_t>(layer)];
  }

  // The layers between layer `layer` and the one above (empty when there are none).
  const std::vector<FloatLayer>& between_after(int32_t layer) const {
    static const std::vector<FloatLayer> kNone;
    return layer >= 0 && static_cast<size_t>(layer) < between.size() ? between[static_cast<size_t>(layer)] : kNone;
  }

  int32_t layers() const { return static_cast<int32_t>(ops.size()) / directions; }
  int32_t input_size() const { return front.empty() ? ops.front().input_size : front.front().input_size; }
  // What the head reads from the stack, per position: D x H of Y, or H of the last op's h_n.
  int32_t stack_output_size() const {
    return lstm_output == LstmOutput::kFinalState ? static_cast<int32_t>(read_directions().size()) * ops.back().hidden_size
                                                  : directions * ops.back().hidden_size;
  }
  // final_directions, or {D - 1} when it is empty.
  std::vector<int32_t> read_directions() const {
    return final_directions.empty() ? std::vector<int32_t>{directions - 1} : final_directions;
  }
  // Values per output position (a head on k selected steps: k rows of the last layer's).
  int32_t output_size() const {
    return head.empty() ? stack_output_size() : head.back().output_size * head.back().groups;
  }
  // The model's output is a sequence (one row per step), not one row per batch row (after a step
  // selection or from h_n).
  bool sequence_output() const {
    return lstm_output == LstmOutput::kSequence && (head.empty() || !reads_whole_sequence(head.front().kind));
  }
  // The batch a per-row constant initial state fixes; 0 when there is none (any batch).
  int32_t constant_state_batch() const;
  // Sum of the ops' hidden sizes: the length of one batch row of a [ops][B][H] state.
  int32_t state_size() const;
  // Throws CompileError for an empty program, a layer whose input is not the layer below's
  // output, a direction that does not match its position, or inconsistent constants.
  void validate() const;
};

// A float cell value at scale 2^power, rounded to nearest and saturated to int16.
int16_t quantize_cell(double c, int32_t power);
// A GRU's hidden state is Q0.15: kept in the int16 state row as a cell at 2^kGruHiddenPower.
constexpr int32_t kGruHiddenPower = -15;

// Each batch row's last step of a sequence ([B][T][W] or [T][B][W], W values per position) at every
// one of its steps: what the layer above a repeated layer reads (FloatProgram::repeated).
std::vector<float> repeat_last_step(const std::vector<float>& seq, const SequenceShape& shape, size_t W);

// Offset of op k's rows in a [ops][B][H] state of `batch` rows per op.
size_t state_offset(const std::vector<int32_t>& hidden_sizes, int32_t op, int32_t batch);

struct FloatProgramResult {
  // The model's output: a sequence [B][T][W] or [T][B][W] (as the input) when
  // p.sequence_output(), else [B][W] (a selected step, or h_n[-1] and what follows it).
  std::vector<float> output;
  std::vector<float> h_n, c_n;  // [ops][B][H]
  std::vector<std::vector<float>> front_outputs;  // per front layer, its output sequence
  std::vector<std::vector<float>> layer_outputs;  // per LSTM layer, its output sequence (D x H per step)
  std::vector<std::vector<float>> head_outputs;   // per head layer, its output (a sequence or [B][W])
};

// Called after every step of every LSTM op with the op's index (layer-major, forward first) and
// the new cell and hidden values of one batch row ([H] each): what qlstm eval compares with each
// op's calibrated ranges.
using ProgramStepVisitor = std::function<void(int32_t op, const double* cell, const double* hidden, int32_t H)>;

// Double-precision evaluation. h0/c0 ([ops][B][H]) may be null for the program's own initial
// state (zero or its constants).
FloatProgramResult run_float_program(const FloatProgram& p, const float* x, const SequenceShape& shape,
                                     const float* h0 = nullptr, const float* c0 = nullptr,
                                     const ProgramStepVisitor& visit = nullptr);

// "lstm", "fully_connected", "softmax", "table", "select_step", "gru" (reports, messages).
const char* op_kind_name(int32_t kind);

// One fused op of a compiled program: its kind (a qlstm_op_kind) and that kind's parameters.
// The LSTM and the GRU ops are the recurrent ops: the ones with state, B x H elements of each
// state array in op order ([recurrent ops][B][H]). Where this file and CompiledModel say "LSTM
// op" of the state, the layers or the direction, they mean a recurrent op.
struct ProgramOp {
  int32_t kind = QLSTM_OP_LSTM_S8;
  // The kind's derived parameters: a Derived<Kind> (DerivedLstm, DerivedFc, ...), whose kKind is
  // `kind`; set() keeps the two in step. A default op is an int8 LSTM with a default DerivedLstm.
  // An LSTM's or a GRU's input/output quantization = those of its input and output buffers.
  template <class Derived>
  void set(Derived d) {
    kind = Derived::kKind;
    block_ = std::move(d);
  }
  template <class Derived>
  bool holds() const {
    return kind == Derived::kKind && std::any_cast<Derived>(&block_) != nullptr;
  }
  // The block as `Derived`; throws CompileError when the op holds another kind's.
  template <class Derived>
  const Derived& as() const {
    const Derived* d = std::any_cast<Derived>(&block_);
    if (d == nullptr || kind != Derived::kKind) wrong_block(Derived::kKind);
    return *d;
  }
  template <class Derived>
  Derived& as() {
    return const_cast<Derived&>(static_cast<const ProgramOp*>(this)->as<Derived>());
  }
  int32_t input_buffer = 0, output_buffer = 1;
  int32_t output_offset = 0;  // first element of the op's part of each output row
  // A two-operand kind's (an add, a multiply) other operand: a buffer written before, read whole
  // (its OpBoundary's second_input); 0 and unread for any other kind.
  int32_t second_input_buffer = 0;
  // StateSource::kConstant: [H], the same for every batch row, or [B][H], one per row of the
  // batch the model then fixes (CompiledModel::constant_state_batch); empty otherwise.
  // An LSTM: h0 int8 at its output quantization, c0 int16 at 2^P. A GRU: its state is one int16
  // Q0.15 hidden, kept in the int16 (cell) state array, so its h0 (from the model's
  // initial_hidden source) is initial_cell, Q0.15, and initial_hidden stays empty.
  // A 16x8 LSTM: its state is int16 only, so initial_cell holds rows of 2H, [c at 2^P | h at its
  // output scale] ([2H] or [B][2H], either source constant: the other half of each row 0), and
  // initial_hidden stays empty (s16_state_block lays the rows out as the runtime keeps them).
  std::vector<int8_t> initial_hidden;
  std::vector<int16_t> initial_cell;

  bool recurrent() const;  // its kind has state (ops/op_kind.h)
  // Of a recurrent op (its kind's RecurrentState::shape); throw CompileError for another kind.
  int32_t hidden_size() const;
  int32_t time_direction() const;
  int32_t output_steps() const;
  AffineQuant recurrent_input() const;   // symmetric (zero point 0) for a 16x8 LSTM
  AffineQuant recurrent_output() const;
  // Values per batch row this recurrent op keeps in each state array (qlstm_op_state_size): H, or
  // 2H for a 16x8 LSTM (its cell, then its int16 hidden, in the cell array).
  int32_t state_size() const;
  void set_output_steps(int32_t output_steps);  // QLSTM_OUTPUT_ALL_STEPS or QLSTM_OUTPUT_FINAL

 private:
  [[noreturn]] void wrong_block(int32_t wanted) const;
  std::any block_ = DerivedLstm{};
};

struct ProgramBuffer {
  int32_t width = 0;   // elements per sequence position
  AffineQuant quant;   // of every element (zero point 0 for int16)
  int32_t steps = QLSTM_BUFFER_EVERY_STEP;  // a qlstm_buffer_steps
  int32_t type = QLSTM_ELEMENT_S8;          // a qlstm_element_type
};

// A compiled model: the program and its interface. Buffer 0 is the model input, the last buffer
// the model output; the ops run in order: the front's per-step ops, the LSTM ops (layer-major,
// forward first), then the head's (a step selection, FC, table, softmax ops).
struct CompiledModel {
  std::string name;
  bool batch_first = false;
  int32_t directions = 1;
  std::vector<ProgramBuffer> buffers;
  std::vector<ProgramOp> ops;
  StateSource initial_hidden = StateSource::kZero, initial_cell = StateSource::kZero;
  bool hidden_output = false, cell_output = false;
  std::string report_json;

  int32_t layers() const { return lstm_op_count() / directions; }
  int32_t lstm_op_count() const;  // the recurrent ops, LSTM and GRU (the state's rows)
  int32_t input_size() const { return buffers.front().width; }
  int32_t output_size() const { return buffers.back().width; }
  const AffineQuant& input_quant() const { return buffers.front().quant; }
  const AffineQuant& output_quant() const { return buffers.back().quant; }
  std::vector<int32_t> hidden_sizes() const;  // of the recurrent ops, in order
  // Sum of the recurrent ops' state sizes (ProgramOp::state_size: H, 2H for a 16x8 LSTM).
  int32_t state_size() const;
  bool all_s8() const;  // every buffer int8 (the model file's versions before 7, run_program_s8)
  bool has_s16() const;  // an int16 buffer: a 16x8 model (int16 activations and state from some layer on)
  bool token_ids() const { return !buffers.empty() && buffers.front().type == QLSTM_ELEMENT_S32; }  // an embedding's input
  // The batch a per-row constant initial state fixes; 0 when there is none (any batch).
  int32_t constant_state_batch() const;
  bool all_forward() const;    // every recurrent op walks time forwards
  // The output holds one position per batch row (a last-step or h_n head): buffers.back().steps.
  bool output_is_one_step() const { return buffers.back().steps == QLSTM_BUFFER_ONE_STEP; }
  // Rows per position op k writes: a selection's step count, and the same for the per-position
  // ops after it until its steps are merged into the features (y[:, -k:] then a Linear on each
  // step: k rows per batch row); 1 for the rest.
  int32_t op_rows(size_t k) const;
  // Op k writes the next part of the row op k - 1 writes: poolings over time and one-step
  // selections of one sequence side by side (torch.cat((y[:, -1], y.mean(1), y.max(1).values), 1)),
  // each at its output offset.
  bool continues_row(size_t k) const;
  // The output's rows per batch row (op_rows of the last op): a one-step output of output_rows x
  // output_size / output_rows values per batch row, its [B, rows, W] (or [rows, B, W]) shape.
  int32_t output_rows() const { return ops.empty() ? 1 : op_rows(ops.size() - 1); }
  // The steps every call must have when an op reads all of a sequence's steps at once (a Linear
  // on y.reshape(B, -1): a per-position op from a sequence buffer to a one-step buffer whose input
  // is a whole number of its input buffer's rows), else 0.
  int32_t fixed_time_steps() const;
  // Why the model cannot be streamed in chunks (a reverse recurrent op, a selection of a fixed step), or
  // "" when it can.
  std::string streaming_refusal() const;
  // Throws CompileError (naming `origin` and the field) for an inconsistent program.
  void validate(const std::string& origin) const;
};

// Bytes of buffer b for `batch` rows of `time_steps` steps (one step for a one-step buffer).
size_t buffer_bytes(const CompiledModel& m, size_t b, int32_t batch, int32_t time_steps);

// The builder's layout: buffers and ops for a program of recurrent ops (DerivedLstm or DerivedGru,
// layer-major, forward first), each with its initial-state constants.
CompiledModel assemble_program(std::vector<ProgramOp> ops, int32_t directions);
// A program of one LSTM, or one GRU, from a zero state.
CompiledModel single_op_model(const DerivedLstm& d, const std::string& name = "", bool batch_first = false);
CompiledModel single_op_model(const DerivedGru& d, const std::string& name = "", bool batch_first = false);
CompiledModel single_op_model(const DerivedRnn& d, const std::string& name = "", bool batch_first = false);

// What a program needs on the device for `batch` rows and calls of at most `max_time_steps`
// steps: the one place that sizes it (the report, the emitted source, the host run, bench).
struct ProgramMemory {
  size_t scratch_bytes = 0;     // the largest recurrent op's qlstm_op_scratch_bytes()
  size_t cell_values = 0;       // B x the largest LSTM H: the int16 cell of an LSTM op run statelessly
  size_t state_values = 0;      // B x the sum of the recurrent ops' H: one [ops][B][H] state, hidden or cell
  // Each of the two activation areas: the largest inner buffer it holds, B x T x width (B x width
  // for a one-step buffer).
  size_t activation_bytes = 0;
  size_t weight_bytes = 0, bias_bytes = 0;  // flash: int8 weights, int32 effective biases
  size_t requant_bytes = 0;     // flash: the FC ops' int32 multipliers and shifts
  size_t table_bytes = 0;       // flash: the table ops' 256 entries
  // Per op: its flash (the above) and the RAM of the buffer it writes (B x steps x width bytes;
  // the last op's is the caller's output).
  struct Op {
    size_t flash_bytes = 0, output_bytes = 0;
  };
  std::vector<Op> ops;
  size_t flash_bytes() const { return weight_bytes + bias_bytes + requant_bytes + table_bytes; }
  size_t state_bytes() const { return state_values * (sizeof(int8_t) + sizeof(int16_t)); }
  // Scratch, one hidden + cell state and both activation areas.
  size_t ram_bytes() const { return scratch_bytes + state_bytes() + 2 * activation_bytes; }
};
ProgramMemory program_memory(const CompiledModel& m, int32_t batch, int32_t max_time_steps);

// The host's memory for calls of a program, sized by its ProgramMemory: what a
// qlstm_program_context points to (run_program_s8, qlstm bench).
class ProgramContextStorage {
 public:
  explicit ProgramContextStorage(const ProgramMemory& mem)
      : scratch_(mem.scratch_bytes / sizeof(ScratchBlock) + 1),
        cell_(mem.cell_values),
        areas_{std::vector<int8_t>(mem.activation_bytes), std::vector<int8_t>(mem.activation_bytes)} {}
  // Points into this storage: valid while it lives.
  qlstm_program_context context() {
    return {scratch_.data(), scratch_.size() * sizeof(ScratchBlock), cell_.data(),
            {areas_[0].data(), areas_[1].data()}, areas_[0].size()};
  }

 private:
  struct alignas(QLSTM_SCRATCH_ALIGNMENT) ScratchBlock {
    unsigned char bytes[QLSTM_SCRATCH_ALIGNMENT];
  };
  std::vector<ScratchBlock> scratch_;
  std::vector<int16_t> cell_;
  std::vector<int8_t> areas_[2];
};

// The state of every recurrent op: [ops][B][H], hidden int8 (in each LSTM op's output
// quantization), cell int16 (at each LSTM op's 2^P; a GRU op's Q0.15 hidden, its hidden rows
// unused: the output zero point).
struct ProgramState {
  std::vector<int8_t> hidden;
  std::vector<int16_t> cell;
};
// A 16x8 LSTM op's constant state (ProgramOp::initial_cell: rows of [c | h], 2H each; empty: zero)
// for `batch` rows, as the runtime keeps it at the op's state_offset in the cell array: B x H
// cells, then B x H int16 hiddens.
std::vector<int16_t> s16_state_block(const std::vector<int16_t>& constant, size_t H, int32_t batch);
// The model's own initial state (zeros: cell 0, hidden = the zero point; or its constants).
ProgramState initial_program_state(const CompiledModel& m, int32_t batch);
// Float state [ops][B][H] to the kernel's formats (a GRU op's h to Q0.15 in cell; its c is
// ignored; a 16x8 LSTM op's c and h both int16 in cell); throws for non-finite values.
ProgramState quantize_program_state(const CompiledModel& m, int32_t batch, const std::vector<float>* h,
                                    const std::vector<float>* c, const std::string& what);
// The other way: a state of `batch` rows to float h and c, [ops][B][H] each, appended (a GRU op's c: 0).
void dequantize_program_state(const CompiledModel& m, const ProgramState& s, int32_t batch, std::vector<float>* h,
                              std::vector<float>* c);

// The runtime's table of a compiled program for calls of `batch` rows and `time_steps` steps,
// pointing into m: what the emitted kOps hold, what the host and the device run
// (qlstm_program_run) and what qlstm_program_validate checks (CompiledModel::validate). Built for
// any model, consistent or not: the runtime validation refuses a bad index or width.
struct RuntimeProgram {
  RuntimeProgram() = default;
  // Each op's params points into `blocks`: moved, never copied.
  RuntimeProgram(RuntimeProgram&&) = default;
  RuntimeProgram& operator=(RuntimeProgram&&) = default;
  RuntimeProgram(const RuntimeProgram&) = delete;
  RuntimeProgram& operator=(const RuntimeProgram&) = delete;

  std::vector<qlstm_op> ops;
  std::vector<OpBlock> blocks;  // ops[k].params points to blocks[k]'s member of its kind
  std::vector<int32_t> widths;  // per buffer
  size_t state_values = 0;      // B x the sum of the ops' H
  std::vector<int32_t> steps;   // per buffer, a qlstm_buffer_steps
  int32_t batch = 1;
  int32_t layout = QLSTM_LAYOUT_BATCH_MAJOR;
  std::vector<int32_t> types;   // per buffer, a qlstm_element_type; empty: every buffer int8

  qlstm_program table() const {
    return {ops.data(),   static_cast<int32_t>(ops.size()), static_cast<int32_t>(widths.size()), widths.data(),
            state_values, steps.data(), batch, layout, types.empty() ? nullptr : types.data()};
  }
};
RuntimeProgram runtime_program(const CompiledModel& m, int32_t batch, int32_t time_steps, Layout layout);

// int8 in, int8 out, op by op through the runtime kernel: what the emitted NAME_run and
// NAME_run_state do on the device, bit for bit. The output is B x T x the output width, or B x
// the width when the output buffer holds one step. state: null = the model's initial state; else
// it is the initial state and receives the final one.
std::vector<int8_t> run_program_s8(const CompiledModel& m, const std::vector<int8_t>& x,
                                   const SequenceShape& shape, ProgramState* state = nullptr);
// Any program, int8 or 16x8: x holds the input buffer's elements (x_bytes bytes, int8 or int16 as
// the buffer's type) and the result the output buffer's, as raw bytes.
// Floats in, floats out, through run_program_raw: the input quantized and the output dequantized
// at their buffers' types and quantizations, from the model's initial state.
std::vector<float> run_program_float(const CompiledModel& m, const std::vector<float>& x, const SequenceShape& shape);
// run_program_float's two ends: floats quantized to the input buffer's type (int16 little-endian
// as raw bytes), and the output buffer's raw bytes dequantized (wherever the program runs).
std::vector<uint8_t> quantize_raw_input(const CompiledModel& m, const std::vector<float>& x);
std::vector<float> dequantize_raw_output(const CompiledModel& m, const std::vector<uint8_t>& y);
std::vector<uint8_t> run_program_raw(const CompiledModel& m, const void* x, size_t x_bytes, const SequenceShape& shape,
                                     ProgramState* state = nullptr);
// The same sequence as stateful calls of `chunk` steps (the last shorter), as NAME_stream does;
// only for a streamable program (streaming_refusal). A per-step output is the whole run's; a
// one-step output gives, per chunk, the output of the chunk's last step: [B][chunks][O] or
// [chunks][B][O] as the layout. state as run_program_s8.
std::vector<int8_t> run_program_s8_streamed(const CompiledModel& m, const std::vector<int8_t>& x,
                                            const SequenceShape& shape, int32_t chunk,
                                            ProgramState* state = nullptr);
// The same for any program, int8 or 16x8, on raw bytes (as run_program_raw).
std::vector<uint8_t> run_program_raw_streamed(const CompiledModel& m, const void* x, size_t x_bytes,
                                              const SequenceShape& shape, int32_t chunk,
                                              ProgramState* state = nullptr);

// Copies time steps [t0, t0 + n) of a [B][T][F] or [T][B][F] sequence into a [B][n][F] or
// [n][B][F] one (gather), or back (scatter).
void gather_steps(const int8_t* x, int32_t B, int32_t T, int32_t F, Layout layout, int32_t t0, int32_t n,
                  int8_t* chunk);
void scatter_steps(const int8_t* chunk, int32_t B, int32_t T, int32_t F, Layout layout, int32_t t0, int32_t n,
                   int8_t* y);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_PROGRAM_H_
