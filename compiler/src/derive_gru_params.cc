// DerivedGru <-> the GRU kernel's parameter block (derive_gru.h): what the program table, the
// model file and the emitter read and write. The derivation itself is derive_gru.cc.
#include "qlstm/compiler/derive_gru.h"

namespace qlstm {
namespace compiler {

qlstm_gru_s8_params DerivedGru::kernel_params(int32_t batch, int32_t time_steps, Layout layout) const {
  qlstm_gru_s8_params p{};
  p.dims = {batch, time_steps, input_size, hidden_size};
  p.layout = layout == Layout::kTimeMajor ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
  for (size_t g = 0; g < gates.size(); ++g) {
    const DerivedGate& dg = gates[g];
    p.gates[g] = {dg.input_to_q3_12, dg.w_x.data(), dg.input_effective_bias.data(),
                  dg.hidden_to_q3_12, dg.w_h.data(), dg.hidden_effective_bias.data()};
  }
  p.reset_times_hidden_to_q3_12 = reset_times_hidden_to_q3_12;
  p.update_times_difference_to_q0_15 = update_times_difference_to_q0_15;
  p.hidden_q0_15_to_output = hidden_q0_15_to_output;
  p.output_zero_point = output.zero_point;
  p.time_direction = time_direction;
  p.output_steps = output_steps;  // output_width: the program's (its output buffer's)
  return p;
}

DerivedGru DerivedGru::from_kernel_params(const qlstm_gru_s8_params& p, const AffineQuant& input,
                                          const AffineQuant& output) {
  DerivedGru d;
  size_t I = 0, H = 0;
  start_from_kernel_params(d, p, input, output, &I, &H);
  for (size_t g = 0; g < d.gates.size(); ++g) copy_gate_matmuls(p.gates[g], I, H, d.gates[g]);
  d.reset_times_hidden_to_q3_12 = p.reset_times_hidden_to_q3_12;
  d.update_times_difference_to_q0_15 = p.update_times_difference_to_q0_15;
  d.hidden_q0_15_to_output = p.hidden_q0_15_to_output;
  d.time_direction = p.time_direction;
  d.output_steps = p.output_steps;
  return d;
}

}  // namespace compiler
}  // namespace qlstm
