// What the compiler knows of each runtime op kind, in one table per kind
// (compiler/src/ops/<kind>.cc) listed once (compiler/src/ops/registry.cc). The program's table,
// its memory, its validation, the model file, the emitted source, the report and the tools iterate
// over the list instead of naming kinds (docs/compiler.md, "Op kinds"). Host only.
#ifndef QLSTM_COMPILER_OPS_OP_KIND_H_
#define QLSTM_COMPILER_OPS_OP_KIND_H_

#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "qlstm/compiler/program/program.h"
#include "qlstm/params_codec.h"
#include "qlstm/program_s8.h"

namespace qlstm {
namespace compiler {

// The quantization and the row widths an op was derived for, at its input and its output: what
// its buffers must have (a recurrent op's output width is its H; its buffer holds D x H).
struct OpBoundary {
  AffineQuant input, output;
  int32_t input_width = 0, output_width = 0;
  // A two-operand kind's other operand (ProgramOp::second_input_buffer); width 0 for the others.
  AffineQuant second_input{};
  int32_t second_input_width = 0;
};

// One op as a model file stores it: the runtime's parameter record of its kind, the quantization it
// was derived for, and what the record does not hold (float weight scales, a label for reports).
struct OpFileRecord {
  std::vector<uint8_t> params;
  AffineQuant input, output;
  AffineQuant second_input;  // a two-operand kind's operand 2 (version 11)
  std::vector<double> weight_scales;
  std::string label;
};

// Where a record being read comes from, for its messages: "FILE: field 'program[k].params...'".
struct OpFileOrigin {
  const std::string& origin;  // the file
  const std::string& where;   // "program[k]"
  uint32_t version;           // the file's format_version
};

// One of a recurrent op's state values (h or c) as the runtime keeps it per batch row
// (program_s8.h): absent, or B x H elements of the int8 hidden array or of the int16 cell array.
struct StateValue {
  enum Format {
    kAbsent,         // a GRU's c
    kAffineS8,       // in the hidden array at `quant` (an int8 LSTM's h)
    kScaledS16,      // in the cell array at quant.scale, zero point 0 (a 16x8 LSTM's h)
    kPowerOfTwoS16,  // in the cell array at 2^power (a cell; a GRU's Q0.15 h)
  };
  Format format = kAbsent;
  AffineQuant quant;
  int32_t power = 0;
  bool after_cell = false;  // B x H further than the op's first rows of the cell array (after its c)

  bool present() const { return format != kAbsent; }
  double step() const;  // the value of one integer step (1 for an absent value)
  int8_t quantize_s8(double v) const;    // kAffineS8
  int16_t quantize_s16(double v) const;  // the int16 formats: nearest, saturated
  double dequantize(int32_t q) const;
};

// A recurrent op's sizes, direction and quantization at its boundary, whatever its kind.
struct RecurrentShape {
  int32_t hidden_size = 0;
  int32_t time_direction = QLSTM_TIME_FORWARD;
  int32_t output_steps = QLSTM_OUTPUT_ALL_STEPS;
  AffineQuant input, output;  // symmetric (zero point 0) for a 16x8 LSTM
  int32_t state_size = 0;     // values per batch row in each state array: H, or 2H (16x8 LSTM)
};

// How a recurrent kind keeps its state, and what the compiler does with it.
struct RecurrentState {
  const char* cell;    // "LSTM", "GRU": the layer it computes (messages, the emitted comments)
  const char* a_cell;  // "an LSTM", "a GRU"
  RecurrentShape (*shape)(const ProgramOp& op);
  // Sets what the op writes: every step, or its final hidden state only (QLSTM_OUTPUT_FINAL).
  void (*set_output_steps)(ProgramOp* op, int32_t output_steps);
  StateValue (*h)(const ProgramOp& op);
  StateValue (*c)(const ProgramOp& op);
  // Its rows of both state arrays (B x qlstm_op_state_size each) from its constant initial state,
  // or as a zero state when it has none; throws when a constant's batch is not `batch`.
  void (*initial_rows)(const ProgramOp& op, int32_t batch, std::vector<int8_t>* hidden, std::vector<int16_t>* cell);
  // Its constant initial state, quantized into its initial_hidden / initial_cell as it keeps them,
  // from the model's float rows of op k (h0, c0: [H] or [B][H]; null for a source not constant).
  void (*set_initial_state)(ProgramOp* op, const std::vector<float>* h0, const std::vector<float>* c0);
  // What its initial_cell array holds in the emitted source for calls of `batch` rows.
  std::vector<int16_t> (*emitted_cell_rows)(const ProgramOp& op, int32_t batch);
  // qlstm compile's line on its state ("cell   2^-12 (calibrated, observed max |c| 0.8)"), and its
  // output quantization's rule where the kind fixes it (null: calibration's observer).
  std::string (*summary_state)(const ProgramOp& op);
  const char* output_observer;
  // Its initial-state arrays against the model's state sources: what is wrong
  // (".initial_cell' does not match ...", after the op's name) or "".
  std::string (*initial_state_problem)(const ProgramOp& op, const CompiledModel& m);
  // The emitted header's lines on its state format, each define named `prefix`_... (NAME_OPk).
  void (*header_defines)(const ProgramOp& op, const std::string& prefix, std::ostream& h);
  // The report: its row of "state" (what its rows hold), and its entry's "cell", "weights" and
  // "gates" (as derived).
  void (*report_state_row)(const ProgramOp& op, nlohmann::json* row);
  void (*report_details)(const ProgramOp& op, nlohmann::json* entry);
};

struct OpKind {
  int32_t kind;          // a qlstm_op_kind
  const char* name;      // "lstm": reports and messages
  const char* symbol;    // "QLSTM_OP_LSTM_S8": the emitted initializer
  const char* handler;   // "qlstm_op_handler_lstm_s8": its runner in the runtime (the emitted kind table)
  // A recurrent kind's state (rows of [recurrent ops][B][state size]); null for a kind without.
  const RecurrentState* state;
  bool int16_data;       // reads or writes int16 buffers: the model file's typed version
  uint32_t file_version; // the first model-file version that knows the kind
  // The output quantization the kind fixes, in the report's words; null where calibration chooses it.
  const char* fixed_output;
  // A kind that writes one position per batch row of a sequence (a one-step buffer): the step
  // `op` reads, >= 0 from the first, < 0 from the last (-1 the last). Null for a kind that writes
  // as many positions as it reads.
  int32_t (*selected_step)(const ProgramOp& op);

  // The runtime's block of `op` in *block for calls of B rows and T steps (a per-position op's rows
  // are the runner's), returned as the qlstm_op's params; `output_width`: a recurrent op's output
  // buffer width when it is not H, else 0.
  const void* (*to_kernel)(const ProgramOp& op, int32_t B, int32_t T, Layout layout, int32_t output_width,
                           OpBlock* block);
  // The quantization and widths `op` was derived for; false for a kind without a quantization of
  // its own (a step selection: its input buffer's), whose widths are set all the same.
  bool (*boundary)(const ProgramOp& op, OpBoundary* b);
  // Adds op's flash (and scratch, state and cell rows for `batch`) to mem and its flash to *om.
  void (*memory)(const ProgramOp& op, int32_t batch, ProgramMemory* mem, ProgramMemory::Op* om);
  // The report's op-table columns of this kind.
  void (*report)(const ProgramOp& op, nlohmann::json* row);
  // One line ("LSTM 4 -> 8, forward"): the emitted source's comments and qlstm bench.
  std::string (*describe)(const qlstm_op& o, const ProgramOp& op);
  // Model file: the record of `o` (its kind's block) as the file's format_version has it, and op's
  // float scales and label; its arrays' sizes checked against its dims (throws naming
  // "ops[k].field"); and the way back.
  std::vector<uint8_t> (*encode)(const qlstm_op& o, uint32_t file_version);
  void (*file_extras)(const ProgramOp& op, std::vector<double>* weight_scales, std::string* label);
  void (*check_arrays)(const ProgramOp& op, size_t k);
  void (*decode)(const OpFileRecord& r, const OpFileOrigin& from, ProgramOp* op);
  // Multiply-accumulates of a call of B x T positions of which the op reads `in_positions` (qlstm bench).
  int64_t (*macs)(const qlstm_op& o, int64_t in_positions, int64_t B, int64_t T);
  // int8 rows in, int8 rows out through the runtime kernel, alone (the head's search); null where
  // the kind cannot run alone. Returns the kernel's status.
  qlstm_status (*run_rows)(const ProgramOp& op, const int8_t* x, int32_t rows, std::vector<int8_t>* y);
  // A kind that writes one position per batch row from every step of a sequence (a pooling over
  // time): what that position holds ("the mean over every time step"); null, or "" for an op
  // that does not, where the kind has other forms.
  std::string (*pools_time)(const ProgramOp& op) = nullptr;
};

// The step `op` selects (OpKind::selected_step), or false for an op that selects none.
bool selected_step(const ProgramOp& op, int32_t* step);
// What `op` pools over every time step (OpKind::pools_time), or "" for an op that pools none.
std::string pooled_over_time(const ProgramOp& op);

// Recurrent op k's constant initial state from the program's float rows, through its kind's
// set_initial_state: the sources that are constant (none: nothing).
void set_constant_state(const FloatProgram& p, size_t k, ProgramOp* op);
// The recurrent op's kind's state hooks; throws for a kind without state.
const RecurrentState& recurrent_state(const ProgramOp& op);

// Every kind this qlstm knows, in qlstm_op_kind order.
const std::vector<const OpKind*>& op_kinds();
// The kind's table, or null for a kind this qlstm does not know.
const OpKind* find_op_kind(int32_t kind);
// The kind's table; throws CompileError naming `where` for an unknown kind.
const OpKind& op_kind(int32_t kind, const std::string& where);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_OPS_OP_KIND_H_
