// "scalar" GRU: portable C, for cores without a SIMD unit and as the fallback everywhere. The gate
// rows four at a time by the LSTM's scalar dot products: r and z by the scalar LSTM variant's
// gate, the new gate's two matmuls in chunks (blocked/gate_rows.h). Update and output: the
// reference's.
#include "blocked/fc_rows.h"
#include "blocked/gate_rows.h"
#include "reference/rnn_s8_reference.h"
#include "scalar/dot_s8_scalar.h"

namespace qlstm {

extern const LstmS8Variant kLstmS8ScalarVariant;

extern const GruS8Variant kGruS8ScalarVariant =
    blocked::gru_variant<kLstmS8ScalarVariant, blocked::WithScalarNewGateFinish<blocked::Rows4OfDot4<scalar::Dot>>>(
        "scalar");

// The RNN's: the scalar LSTM's gate, the GRU's output stage (kernels.h).
extern const RnnS8Variant kRnnS8ScalarVariant = {"scalar", nullptr, nullptr,
                                                 rnn_reference::lstm_gate_of<kLstmS8ScalarVariant>, blocked::gru_output};

}  // namespace qlstm
