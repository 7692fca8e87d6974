// The compiled-model file (.qlstm): FlatBuffers, versioned, with a CRC-32 over the model bytes
// that every load verifies (docs/model-format.md). Host only.
#ifndef QLSTM_COMPILER_MODEL_FILE_H_
#define QLSTM_COMPILER_MODEL_FILE_H_

#include <cstdint>
#include <string>

#include "qlstm/compiler/lower/derive.h"
#include "qlstm/compiler/program/program.h"
#include "qlstm/compiler/io/file_io.h"

namespace qlstm {
namespace compiler {

// 7: typed buffers (Buffer.type, a qlstm_element_type) and the 16x8 kinds (QLSTM_OP_LSTM_S16,
// QLSTM_OP_FULLY_CONNECTED_S16, QLSTM_OP_REQUANTIZE); written only for a model that needs them,
// an int8 model still as version 6 (its files unchanged).
// 6: a GRU record ends with new_gate_zero_state_bias (a stateless first step's new-gate
// accumulator; version 5's records are read, the field computed from the weights).
// 5: version 4 with GRU ops (QLSTM_OP_GRU_S8). 4: a program of every op kind (FC, softmax, table,
// step selection around the LSTM), one-step buffers, the LSTM's output_steps; each op's parameters
// as the runtime's record of its kind (params_codec.h). Versions 1 (one LSTM), 2 (a program of
// typed LSTM tables), 3 (LSTM records without output_steps), 4 (no GRU) and 5 are still read.
// 8: version 7 with the pooling kind (QLSTM_OP_POOL_S8); written only for a model that has one.
// 9: version 8 with a recurrent op's output_steps QLSTM_OUTPUT_FIRST (a reverse op that runs one
// step); written only for a model that has one.
// 10: version 9 with the log-softmax kind (QLSTM_OP_LOG_SOFTMAX_S8); written only for a model that
// has one.
// 11: version 10 with the elementwise kinds (QLSTM_OP_ADD_S8, QLSTM_OP_MUL_S8) and an op's
// second_input_buffer and second_input; written only for a model that has one.
// 12: version 11 with a step selection's step_count (consecutive steps; earlier records end
// before it: one step); written for a model with a step selection.
// 13: version 12 with an int8 LSTM gate's HardSigmoid line (qlstm_hard_sigmoid_params, in every
// gate's record of every int8 LSTM; earlier records have none: sigmoid and tanh gates); written
// only for a model with a HardSigmoid gate.
// 14: version 13 with the embedding kind (QLSTM_OP_EMBEDDING_S8) and an int32 input buffer of
// token ids (QLSTM_ELEMENT_S32); written only for a model with an embedding.
// 15: version 14 with the layer normalization kind (QLSTM_OP_LAYER_NORM_S8); written only for a
// model with one.
// 16: version 15 with the attention pooling kind (QLSTM_OP_ATTENTION_POOL_S8); written only for a
// model with one.
// 17: version 16 with the vanilla RNN kind (QLSTM_OP_RNN_S8); written only for a model with one.
// 18: an int8 LSTM's record ends with input_repeated (older records read as 0: a sequence);
//     written only for a model with an LSTM that reads a repeated input.
// 19: an int8 GRU's record ends with input_repeated (older records read as 0); written only for a
//     model with a GRU that reads a repeated input.
constexpr uint32_t kModelFormatVersion = 19;
// The version of a model with an LSTM that reads one step repeated (input_repeated).
constexpr uint32_t kModelFormatVersionRepeatedInput = 18;
// The version of a model with a GRU that reads one step repeated.
constexpr uint32_t kModelFormatVersionRepeatedGru = 19;
// The version of a model with a HardSigmoid gate.
constexpr uint32_t kModelFormatVersionGateLines = 13;
// The version of a model with a recurrent op that runs its first step alone.
constexpr uint32_t kModelFormatVersionFirstStep = 9;
// What a model of int8 buffers and int8 kinds only is written as.
constexpr uint32_t kModelFormatVersionS8 = 6;
// What a model with int16 buffers or kinds (and none newer) is written as.
constexpr uint32_t kModelFormatVersionTyped = 7;

// The version serialize_model writes m as: kModelFormatVersion when m has an int16 buffer or a
// 16x8 kind, else kModelFormatVersionS8.
uint32_t model_format_version(const CompiledModel& m);

std::string serialize_model(const CompiledModel& m);
// The file around the (FlatBuffers) model bytes: a format_version (the newest by default) and
// their CRC-32. serialize_model's last step; the model fuzzer wraps its input with it to get past
// the checksum.
std::string seal_model(const std::string& model_bytes, uint32_t version = kModelFormatVersion);
// Throws CompileError naming `origin` and the field for a file that is truncated, corrupted (CRC),
// of another version, or inconsistent (array sizes, parameter ranges).
CompiledModel parse_model(const std::string& bytes, const std::string& origin);

CompiledModel load_model(const std::string& path);

}  // namespace compiler
}  // namespace qlstm

#endif  // QLSTM_COMPILER_MODEL_FILE_H_
