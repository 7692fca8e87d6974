// "scalar" fully connected: portable C, four output rows per pass over the input
// (blocked/fc_rows.h with the LSTM's scalar dot products), for cores without a SIMD unit and as
// the fallback everywhere.
#include "blocked/fc_rows.h"
#include "scalar/dot_s8_scalar.h"

namespace qlstm {
namespace scalar {
namespace {

struct FcKernel : blocked::Rows4OfDot4<Dot> {
  using FcFinish = blocked::ScalarFcFinish;
};

bool is_supported() { return true; }

}  // namespace
}  // namespace scalar

extern const FcS8Variant kFcS8ScalarVariant = {"scalar", scalar::is_supported, nullptr, blocked::fc_chunked<scalar::FcKernel>};

}  // namespace qlstm
