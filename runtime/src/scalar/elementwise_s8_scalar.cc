// "scalar" elementwise add and multiply: portable C over the per-call plan of
// blocked/elementwise_blocks.h (a 64-bit product for SMMULR's rounding, a clamp for SSAT).
#include "blocked/elementwise_blocks.h"
#include "qlstm/kernels.h"

namespace qlstm {

extern const AddS8Variant kAddS8ScalarVariant = {"scalar", nullptr, blocked::add_can_run,
                                                 blocked::add_s8<blocked::PortableOps>};
extern const MulS8Variant kMulS8ScalarVariant = {"scalar", nullptr, blocked::mul_can_run,
                                                 blocked::mul_s8<blocked::PortableOps>};

}  // namespace qlstm
