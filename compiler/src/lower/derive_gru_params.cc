// DerivedGru to and from the GRU kernel's parameter block (derive_gru.h).
#include "qlstm/compiler/lower/derive_gru.h"

namespace qlstm {
namespace compiler {

qlstm_gru_s8_params DerivedGru::kernel_params(int32_t batch, int32_t time_steps, Layout layout) const {
  qlstm_gru_s8_params p{};
  common_kernel_params(*this, batch, time_steps, layout, &p);
  p.reset_times_hidden_to_q3_12 = reset_times_hidden_to_q3_12;
  p.update_times_difference_to_q0_15 = update_times_difference_to_q0_15;
  p.hidden_q0_15_to_output = hidden_q0_15_to_output;
  p.new_gate_zero_state_bias = new_gate_zero_state_bias.data();
  p.input_repeated = input_repeated;
  return p;
}

DerivedGru DerivedGru::from_kernel_params(const qlstm_gru_s8_params& p, const AffineQuant& input,
                                          const AffineQuant& output) {
  DerivedGru d = common_from_kernel_params<DerivedGru>(p, input, output);
  d.reset_times_hidden_to_q3_12 = p.reset_times_hidden_to_q3_12;
  d.update_times_difference_to_q0_15 = p.update_times_difference_to_q0_15;
  d.hidden_q0_15_to_output = p.hidden_q0_15_to_output;
  d.input_repeated = p.input_repeated;
  if (p.new_gate_zero_state_bias != nullptr) {
    d.new_gate_zero_state_bias.assign(p.new_gate_zero_state_bias, p.new_gate_zero_state_bias + p.dims.hidden_size);
  }
  return d;
}

std::vector<int32_t> zero_state_bias(const DerivedGate& gate, int32_t hidden_size, int32_t zp_h) {
  const size_t H = static_cast<size_t>(hidden_size);
  std::vector<int32_t> bias(H);
  for (size_t r = 0; r < H; ++r) {
    uint32_t acc = static_cast<uint32_t>(gate.hidden_effective_bias[r]);  // wraps as the kernel's
    for (size_t j = 0; j < H; ++j) acc += static_cast<uint32_t>(zp_h * gate.w_h[r * H + j]);
    bias[r] = static_cast<int32_t>(acc);
  }
  return bias;
}

}  // namespace compiler
}  // namespace qlstm
