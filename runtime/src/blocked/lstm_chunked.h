// A whole LSTM call of a variant built on blocked::gate_chunked (the Arm ones): the shared walk
// (lstm_s8_walk.h) with the four gates' finishes (their requantization and activation
// parameters) built once per call instead of once per gate and step, then the variant's own cell
// and hidden updates. The same arithmetic as the variant's stages.
#ifndef QLSTM_SRC_BLOCKED_LSTM_CHUNKED_H_
#define QLSTM_SRC_BLOCKED_LSTM_CHUNKED_H_

#include "blocked/gate_rows.h"
#include "lstm_s8_walk.h"

namespace qlstm {
namespace blocked {

template <typename Kernel>
struct PreparedGates {
  const qlstm_gate_s8_params* gates;
  typename Kernel::Finish finishes[QLSTM_GATE_COUNT];
  typename Kernel::Operand x, h;  // a one-row call's x and h, prepared by the step's forget gate
};

// One gate's finish, out of line: built four times per call, its code once.
template <typename Kernel>
__attribute__((noinline)) typename Kernel::Finish finish_of(const qlstm_gate_s8_params& g) {
  return typename Kernel::Finish(GateRequant(g), g);
}

// The walk runs the forget gate first in every step, and all four gates of a step read the same
// x and h (lstm_sequence.h): where preparing them costs (kPrepareOncePerStep, gate_rows.h's
// KernelDefaults), a one-row call prepares them in the forget gate, once per step instead of once
// per gate.
template <typename Kernel>
void prepared_gate(const void* prepared, int32_t g, const GateArgs& args, int16_t* out) {
  PreparedGates<Kernel>& p = *static_cast<PreparedGates<Kernel>*>(const_cast<void*>(prepared));
  if constexpr (Kernel::kPrepareOncePerStep) {
    gate_chunked_over<Kernel>(p.gates[g], p.finishes[g], args, out, p.x, p.h,
                              args.rows == 1 && g != QLSTM_GATE_FORGET);
  } else {
    gate_chunked_with<Kernel>(p.gates[g], p.finishes[g], args, out);
  }
}

template <typename Kernel, CellUpdateFn kCellUpdate, HiddenUpdateFn kHiddenUpdate>
qlstm_status lstm_chunked(const qlstm_lstm_s8_params& params, qlstm_lstm_s8_context& ctx, const int8_t* input,
                          int8_t* output) {
  const qlstm_gate_s8_params* const g = params.gates;
  PreparedGates<Kernel> prepared = {
      g, {finish_of<Kernel>(g[0]), finish_of<Kernel>(g[1]), finish_of<Kernel>(g[2]), finish_of<Kernel>(g[3])}, {}, {}};
  return run_lstm_s8_walk(params, ctx, input, output, prepared_gate<Kernel>, &prepared, kCellUpdate, kHiddenUpdate);
}

// The variant: its stages (gate_chunked builds the finish per gate call) and the whole call.
template <typename Kernel, CellUpdateFn kCellUpdate, HiddenUpdateFn kHiddenUpdate>
constexpr LstmS8Variant chunked_variant(const char* name, bool (*is_supported)()) {
  return {name,        is_supported,  nullptr, gate_chunked<Kernel>, kCellUpdate,
          kHiddenUpdate, lstm_chunked<Kernel, kCellUpdate, kHiddenUpdate>};
}

}  // namespace blocked
}  // namespace qlstm

#endif  // QLSTM_SRC_BLOCKED_LSTM_CHUNKED_H_
