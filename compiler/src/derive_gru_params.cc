// DerivedGru to and from the GRU kernel's parameter block (derive_gru.h).
#include "qlstm/compiler/derive_gru.h"

namespace qlstm {
namespace compiler {

qlstm_gru_s8_params DerivedGru::kernel_params(int32_t batch, int32_t time_steps, Layout layout) const {
  qlstm_gru_s8_params p{};
  common_kernel_params(*this, batch, time_steps, layout, &p);
  p.reset_times_hidden_to_q3_12 = reset_times_hidden_to_q3_12;
  p.update_times_difference_to_q0_15 = update_times_difference_to_q0_15;
  p.hidden_q0_15_to_output = hidden_q0_15_to_output;
  return p;
}

DerivedGru DerivedGru::from_kernel_params(const qlstm_gru_s8_params& p, const AffineQuant& input,
                                          const AffineQuant& output) {
  DerivedGru d = common_from_kernel_params<DerivedGru>(p, input, output);
  d.reset_times_hidden_to_q3_12 = p.reset_times_hidden_to_q3_12;
  d.update_times_difference_to_q0_15 = p.update_times_difference_to_q0_15;
  d.hidden_q0_15_to_output = p.hidden_q0_15_to_output;
  return d;
}

}  // namespace compiler
}  // namespace qlstm
