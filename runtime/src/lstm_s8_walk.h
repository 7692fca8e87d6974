// The int8 LSTM's shared sequence walk (lstm_sequence.h) as one function, for the variants that
// prepare their gate stage once per call (blocked/lstm_chunked.h) and for the stages of any
// variant (lstm_s8.cc): one instantiation of the walk in a firmware.
#ifndef QLSTM_SRC_LSTM_S8_WALK_H_
#define QLSTM_SRC_LSTM_S8_WALK_H_

#include "qlstm/kernels.h"
#include "qlstm/lstm_s8.h"

namespace qlstm {

// One gate of one step: gate_index's pre-activations to Q0.15, from what the caller prepared.
using PreparedGateFn = void (*)(const void* prepared, int32_t gate_index, const GateArgs& args, int16_t* out_q0_15);

// A validated call (run_lstm_s8's checks done): the walk with these stages.
qlstm_status run_lstm_s8_walk(const qlstm_lstm_s8_params& params, qlstm_lstm_s8_context& ctx, const int8_t* input,
                              int8_t* output, PreparedGateFn gate, const void* prepared, CellUpdateFn cell_update,
                              HiddenUpdateFn hidden_update);

}  // namespace qlstm

#endif  // QLSTM_SRC_LSTM_S8_WALK_H_
