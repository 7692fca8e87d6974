// The staged LSTM and its kernel variants (C++ API).
//
// A step is three stages, each a function in a variant's table:
//   gate:          x, h  -> one gate's Q0.15 activations for `rows` batch rows
//   cell_update:   f, i, g, c -> c (int16, scale 2^P, with clip)
//   hidden_update: o, c -> h (int8), written straight into the output rows
// The sequence driver (run_lstm_s8) is shared by all variants: it orders the stages, walks time
// in either layout and handles the state. A variant is a drop-in: the reference is the
// specification in code, and every other variant must match it bit for bit (tests/variants).
#ifndef QLSTM_KERNELS_H_
#define QLSTM_KERNELS_H_

#include <stddef.h>
#include <stdint.h>

#include "qlstm/fully_connected_s16.h"
#include "qlstm/fully_connected_s8.h"
#include "qlstm/gru_s8.h"
#include "qlstm/lstm_s16.h"
#include "qlstm/lstm_s8.h"
#include "qlstm/log_softmax_s8.h"
#include "qlstm/elementwise_s8.h"
#include "qlstm/embedding_s8.h"
#include "qlstm/attention_pool_s8.h"
#include "qlstm/layer_norm_s8.h"
#include "qlstm/pool_s8.h"
#include "qlstm/program_s8.h"
#include "qlstm/requantize.h"
#include "qlstm/rnn_s8.h"

namespace qlstm {

// `rows` batch rows; row b of x is at x + b * x_row_stride (likewise h). h == nullptr means "no
// recurrent term" (first step of a stateless call). x_acc != nullptr (an int8 LSTM's repeated
// input, docs/arithmetic.md §24): the input accumulators, bias + W x, computed once per call,
// [rows][hidden_size]; the gate reads them instead of x and its input matmul. Output:
// out_q0_15[rows][hidden_size].
// (GateArgsOf<int16_t>: the same for the 16x8 LSTM's int16 input and hidden state; no x_acc.)
template <class Elem>
struct GateArgsOf {
  int32_t rows;
  int32_t input_size;
  int32_t hidden_size;
  const Elem* x;
  ptrdiff_t x_row_stride;
  const Elem* h;
  ptrdiff_t h_row_stride;
  const int32_t* x_acc = nullptr;
};
using GateArgs = GateArgsOf<int8_t>;
using GateFn = void (*)(const qlstm_gate_s8_params& gate, const GateArgs& args,
                        int16_t* out_q0_15);

struct CellUpdateParams {
  qlstm_requant forget_times_cell;      // f * c -> 2^P
  qlstm_requant input_times_cell_gate;  // i * g -> 2^P
  int32_t clip_min;                     // inclusive bounds after the add
  int32_t clip_max;
};
// c[k] = clamp(sat16(RQ(f[k] * c[k])) + RQ(i[k] * g[k]), clip_min, clip_max), k < count.
using CellUpdateFn = void (*)(const CellUpdateParams& p, int32_t count, const int16_t* f_q0_15,
                              const int16_t* i_q0_15, const int16_t* g_q0_15, int16_t* cell);

struct HiddenUpdateParams {
  qlstm_requant output_times_tanh_cell;  // o * tanh(c) -> hidden scale
  int32_t output_zero_point;
  int32_t tanh_left_shift;  // P + 12: cell scale 2^P -> Q3.12
};
// h[b][r] = sat8(RQ(o * tanh(c)) + zp) for `rows` rows of hidden_size; row b of h_out is at
// h_out + b * h_row_stride.
using HiddenUpdateFn = void (*)(const HiddenUpdateParams& p, int32_t rows, int32_t hidden_size,
                                const int16_t* o_q0_15, const int16_t* cell, int8_t* h_out,
                                ptrdiff_t h_row_stride);

// A whole call, after run_lstm_s8 has validated the parameters, the context and the scratch.
using SequenceFn = qlstm_status (*)(const qlstm_lstm_s8_params& params, qlstm_lstm_s8_context& ctx,
                                    const int8_t* input, int8_t* output);

// Can the variant run this call (its direction, output width, sizes...)? Given validated
// parameters only; cheap and free of side effects.
using CanRunFn = bool (*)(const qlstm_lstm_s8_params& params);

struct LstmS8Variant {
  const char* name;          // e.g. "reference", "arm_mve", "x86_avx2"
  bool (*is_supported)();    // can this CPU run it (run-time check on the host); null: any CPU
  CanRunFn can_run;          // can it run this call; null: every valid call
  GateFn gate;               // the three stages, driven by the shared sequence loop ...
  CellUpdateFn cell_update;
  HiddenUpdateFn hidden_update;
  // ... or, when set, the whole sequence (the stages may then be null): a variant that orders
  // the work across time steps itself, or an external backend such as CMSIS-NN.
  SequenceFn sequence;
};

// All variants built into this binary, best first; the reference is always last and runs every
// call. *count receives the number of entries.
const LstmS8Variant* const* lstm_s8_variants(size_t* count);
const LstmS8Variant& lstm_s8_reference_variant();
extern const LstmS8Variant kLstmS8ReferenceVariant;

// Dispatch, per call: the first entry of list[0, count) that this CPU supports and that can run
// the call, or null. `params` must be valid (qlstm_lstm_s8_validate).
const LstmS8Variant* select_lstm_s8_variant(const LstmS8Variant* const* list, size_t count,
                                            const qlstm_lstm_s8_params& params);
// Same contract as qlstm_lstm_s8(), dispatching over `list` (qlstm_lstm_s8() passes
// lstm_s8_variants()): QLSTM_ERROR_NO_VARIANT when no entry can run the valid call.
qlstm_status run_lstm_s8_dispatch(const LstmS8Variant* const* list, size_t count,
                                  const qlstm_lstm_s8_params* params, qlstm_lstm_s8_context* ctx,
                                  const int8_t* input, int8_t* output);
// What qlstm_lstm_s8() runs, as an entry for the tools' "--variant default": named "default",
// its sequence dispatches each call over lstm_s8_variants(). It is not in that list.
const LstmS8Variant& lstm_s8_default_variant();

// Runs the whole sequence with the given variant. Same contract as qlstm_lstm_s8(), and
// QLSTM_ERROR_UNSUPPORTED when this CPU lacks the variant, QLSTM_ERROR_NO_VARIANT when the
// variant declines the call (can_run).
qlstm_status run_lstm_s8(const LstmS8Variant& variant, const qlstm_lstm_s8_params* params,
                         qlstm_lstm_s8_context* ctx, const int8_t* input, int8_t* output);

// A call whose parameters and context the caller has already checked (the program runner, after
// qlstm_program_validate), so they are not checked twice. variant nullptr: per-call dispatch.
qlstm_status run_lstm_s8_prechecked(const LstmS8Variant* variant, const qlstm_lstm_s8_params& params,
                                    qlstm_lstm_s8_context& ctx, const int8_t* input, int8_t* output);

// ---- The GRU's variants (include/qlstm/gru_s8.h, docs/arithmetic.md §13). A step is four stages,
// ordered by the shared walk (gru_s8_walk.h) as the LSTM's are; GateArgs as above. args.h
// is null at the first step of a stateless call only: r and z then have no recurrent term (as the
// LSTM's gate), and n's recurrent accumulator is gate.hidden_effective_bias alone (the driver
// passes the zero-state bias there), with no matmul.
//   sigmoid_gate: x, h -> r or z, Q0.15 [rows][H] (the LSTM's gate with sigmoid: §3)
//   new_gate:     x, h, r -> n = tanh(x part + RQ(r * h part)), Q0.15 [rows][H]
//   update:       z, n, h -> h' = sat16(n + RQ(z * (h - n))), count elements, h in place
//   output:       h -> int8 rows y[b][r] = sat8(RQ(h) + zero_point), row b at y + b * y_row_stride
using GruGateFn = GateFn;  // r or z as the LSTM's sigmoid gate, its block built once per call
using GruNewGateFn = void (*)(const qlstm_gru_gate_s8_params& gate, const qlstm_requant& reset_times_hidden,
                              const GateArgs& args, const int16_t* reset_q0_15, int16_t* new_q0_15);
using GruUpdateFn = void (*)(const qlstm_requant& update_times_difference, int32_t count, const int16_t* update_q0_15,
                             const int16_t* new_q0_15, int16_t* hidden_q0_15);
using GruOutputFn = void (*)(const qlstm_requant& hidden_to_output, int32_t zero_point, int32_t rows,
                             int32_t hidden_size, const int16_t* hidden_q0_15, int8_t* y, ptrdiff_t y_row_stride);
// A whole GRU call, after run_gru_s8 has validated the parameters, the context and the scratch.
using GruSequenceFn = qlstm_status (*)(const qlstm_gru_s8_params& params, qlstm_gru_s8_context& ctx,
                                       const int8_t* input, int8_t* output);

struct GruS8Variant {
  const char* name;        // the LSTM variant's name for the same ISA
  bool (*is_supported)();  // null: any CPU
  bool (*can_run)(const qlstm_gru_s8_params& params);  // null: every valid call
  GruGateFn sigmoid_gate;
  GruNewGateFn new_gate;
  GruUpdateFn update;
  GruOutputFn output;
  // When set, the whole call (the same arithmetic; the stages stay set and are tested on their
  // own): a variant that prepares its stages once per call (blocked/gru_chunked.h).
  GruSequenceFn sequence;
};
// Best first, the reference last (runs every call); *count receives the number of entries.
const GruS8Variant* const* gru_s8_variants(size_t* count);
extern const GruS8Variant kGruS8ReferenceVariant;
// The first entry of list[0, count) this CPU supports and that can run the valid call, or null.
const GruS8Variant* select_gru_s8_variant(const GruS8Variant* const* list, size_t count,
                                          const qlstm_gru_s8_params& params);
// As qlstm_gru_s8() (which dispatches over gru_s8_variants()) with the given variant, e.g. the
// reference: QLSTM_ERROR_UNSUPPORTED / QLSTM_ERROR_NO_VARIANT as run_lstm_s8.
qlstm_status run_gru_s8(const GruS8Variant& variant, const qlstm_gru_s8_params* params, qlstm_gru_s8_context* ctx,
                        const int8_t* input, int8_t* output);
// Validated params and context (qlstm_program_validate); variant nullptr: per-call dispatch.
qlstm_status run_gru_s8_prechecked(const GruS8Variant* variant, const qlstm_gru_s8_params& params,
                                   qlstm_gru_s8_context& ctx, const int8_t* input, int8_t* output);

// ---- The vanilla RNN's variants (include/qlstm/rnn_s8.h, docs/arithmetic.md §23). A step is two
// stages, ordered by the RNN's walk as the GRU's are; GateArgs as above (args.h null at a
// stateless first step only: no recurrent term).
//   gate:   x, h -> the new hidden, int16 [rows][H]: the LSTM's gate (§3) with the call's block,
//           tanh (Q3.12 -> Q0.15) or ReLU as HardSigmoid's clamp on the unit line (§23)
//   output: hidden -> int8 rows y, the GRU's output stage
// Each ISA's RNN variant is these two stages of its LSTM and GRU variants.
struct RnnS8Variant {
  const char* name;        // the LSTM variant's name for the same ISA
  bool (*is_supported)();  // null: any CPU
  bool (*can_run)(const qlstm_rnn_s8_params& params);  // null: every valid call
  GateFn gate;
  GruOutputFn output;
};
// Best first, the reference last (runs every call); *count receives the number of entries.
const RnnS8Variant* const* rnn_s8_variants(size_t* count);
extern const RnnS8Variant kRnnS8ReferenceVariant;
// As qlstm_rnn_s8() with the given variant: QLSTM_ERROR_UNSUPPORTED when this CPU lacks it.
qlstm_status run_rnn_s8(const RnnS8Variant& variant, const qlstm_rnn_s8_params* params, qlstm_rnn_s8_context* ctx,
                        const int8_t* input, int8_t* output);
// Validated params and context (qlstm_program_validate); variant nullptr: per-call dispatch.
qlstm_status run_rnn_s8_prechecked(const RnnS8Variant* variant, const qlstm_rnn_s8_params& params,
                                   qlstm_rnn_s8_context& ctx, const int8_t* input, int8_t* output);

// ---- The fully connected op's variants (include/qlstm/fully_connected_s8.h): one function for
// the whole call, each equal to the reference bit for bit (tests/variants).
using FcS8Fn = void (*)(const qlstm_fc_s8_params& params, const int8_t* input, int8_t* output);
struct FcS8Variant {
  const char* name;
  bool (*is_supported)();                         // null: any CPU
  bool (*can_run)(const qlstm_fc_s8_params& p);   // null: every valid call
  FcS8Fn run;                                     // params validated, rows >= 1
};
// Best first, the reference last (runs every call); *count receives the number of entries.
const FcS8Variant* const* fc_s8_variants(size_t* count);
extern const FcS8Variant kFcS8ReferenceVariant;
const FcS8Variant* select_fc_s8_variant(const FcS8Variant* const* list, size_t count, const qlstm_fc_s8_params& p);
// As qlstm_fc_s8() with the given variant: QLSTM_ERROR_UNSUPPORTED / QLSTM_ERROR_NO_VARIANT as run_lstm_s8.
qlstm_status run_fc_s8(const FcS8Variant& variant, const qlstm_fc_s8_params* params, const int8_t* input,
                       int8_t* output);
// Validated params (the program runner); variant nullptr: per-call dispatch over fc_s8_variants().
qlstm_status run_fc_s8_prechecked(const FcS8Variant* variant, const qlstm_fc_s8_params& params, const int8_t* input,
                                  int8_t* output);

// ---- The 16x8 kernels' variants (lstm_s16.h, fully_connected_s16.h, docs/arithmetic.md §14), the
// same family as the int8 ones: best first, the reference last (runs every call), each equal to the
// reference bit for bit (tests/variants), chosen per call by qlstm_lstm_s16() and qlstm_fc_s16().
// The LSTM's stages are the int8 LSTM's with int16 activations: the gate on int16 x and h (int64
// biases, the 64-bit requantization), the int8 LSTM's cell update, and the hidden update writing
// h[b][r] = sat16(RQ(o * tanh(c))) (no zero point). The shared walk (lstm_sequence.h) orders them.
using GateS16Fn = void (*)(const qlstm_gate_s16_params& gate, const GateArgsOf<int16_t>& args, int16_t* out_q0_15);
using HiddenUpdateS16Fn = void (*)(const HiddenUpdateParams& p, int32_t rows, int32_t hidden_size,
                                   const int16_t* o_q0_15, const int16_t* cell, int16_t* h_out,
                                   ptrdiff_t h_row_stride);
// A whole 16x8 call, after run_lstm_s16 has validated the parameters, the context and the scratch.
using SequenceS16Fn = qlstm_status (*)(const qlstm_lstm_s16_params& params, qlstm_lstm_s16_context& ctx,
                                       const int16_t* input, int16_t* output);
struct LstmS16Variant {
  const char* name;        // the int8 variant's name for the same ISA
  bool (*is_supported)();  // null: any CPU
  bool (*can_run)(const qlstm_lstm_s16_params& params);  // null: every valid call
  GateS16Fn gate;
  CellUpdateFn cell_update;
  HiddenUpdateS16Fn hidden_update;
  // ... or, when set, the whole call (the stages may then be null): the CMSIS-NN backend.
  SequenceS16Fn sequence;
};
const LstmS16Variant* const* lstm_s16_variants(size_t* count);
extern const LstmS16Variant kLstmS16ReferenceVariant;
const LstmS16Variant* select_lstm_s16_variant(const LstmS16Variant* const* list, size_t count,
                                              const qlstm_lstm_s16_params& params);
// As qlstm_lstm_s16() with the given variant: QLSTM_ERROR_UNSUPPORTED / QLSTM_ERROR_NO_VARIANT as run_lstm_s8.
qlstm_status run_lstm_s16(const LstmS16Variant& variant, const qlstm_lstm_s16_params* params,
                          qlstm_lstm_s16_context* ctx, const int16_t* input, int16_t* output);
// Validated params, context and buffers (the program runner): per-call dispatch, not checked twice.
qlstm_status run_lstm_s16_prechecked(const qlstm_lstm_s16_params& params, qlstm_lstm_s16_context& ctx,
                                     const int16_t* input, int16_t* output);

using FcS16Fn = void (*)(const qlstm_fc_s16_params& params, const int16_t* input, int16_t* output);
struct FcS16Variant {
  const char* name;
  bool (*is_supported)();                         // null: any CPU
  bool (*can_run)(const qlstm_fc_s16_params& p);  // null: every valid call
  FcS16Fn run;                                    // params validated, rows >= 1
};
const FcS16Variant* const* fc_s16_variants(size_t* count);
extern const FcS16Variant kFcS16ReferenceVariant;
const FcS16Variant* select_fc_s16_variant(const FcS16Variant* const* list, size_t count, const qlstm_fc_s16_params& p);
// As qlstm_fc_s16() with the given variant: QLSTM_ERROR_UNSUPPORTED / QLSTM_ERROR_NO_VARIANT as run_lstm_s8.
qlstm_status run_fc_s16(const FcS16Variant& variant, const qlstm_fc_s16_params* params, const int16_t* input,
                        int16_t* output);
// Validated params and buffers (the program runner): per-call dispatch over fc_s16_variants().
qlstm_status run_fc_s16_prechecked(const qlstm_fc_s16_params& params, const int16_t* input, int16_t* output);

// The softmax, log-softmax and table ops on validated params (qlstm_softmax_s8_validate,
// qlstm_table_s8_validate), rows >= 0; the program runner calls them after its one validation.
void softmax_s8_prechecked(const qlstm_softmax_s8_params& params, const int8_t* input, int8_t* output);
void log_softmax_s8_prechecked(const qlstm_log_softmax_s8_params& params, const int8_t* input, int8_t* output);
void softmax_s16_prechecked(const qlstm_softmax_s16_params& params, const int16_t* input, int16_t* output);
void table_s8_prechecked(const qlstm_table_s8_params& params, const int8_t* input, int8_t* output);
void requantize_prechecked(const qlstm_requantize_params& params, const void* input, void* output);
// The embedding (embedding_s8.h): every id checked against table_rows before any row is written.
qlstm_status embedding_s8_prechecked(const qlstm_embedding_s8_params& params, const int32_t* ids, int8_t* output);
// The layer normalization (layer_norm_s8.h, docs/arithmetic.md §21), and its one reciprocal square
// root per row: 1 / sqrt(w) ~ reciprocal / 2^(shift + 12) for w >= 1 (w < 2^62).
struct LayerNormScale {
  int64_t reciprocal;  // (2^31, 2^32]
  int32_t shift;       // [20, 50]
};
LayerNormScale layer_norm_inverse_root(uint64_t w);
void layer_norm_s8_prechecked(const qlstm_layer_norm_s8_params& params, const int8_t* input, int8_t* output);
// The attention pooling (attention_pool_s8.h, docs/arithmetic.md §22) on validated params.
void attention_pool_s8_prechecked(const qlstm_attention_pool_s8_params& params, const int8_t* scores,
                                  const int8_t* sequence, int8_t* output);
// ---- The elementwise add and multiply (elementwise_s8.h, docs/arithmetic.md §19): rows x
// row_size values of each operand, contiguous. Their references are the specification in code;
// each variant is one function for the whole call, equal to its reference bit for bit
// (tests/variants). P: qlstm_add_s8_params or qlstm_mul_s8_params.
template <class P>
struct ElementwiseS8Variant {
  const char* name;
  bool (*is_supported)();  // null: any CPU
  bool (*can_run)(const P& p);  // null: every valid call
  void (*run)(const P& p, const int8_t* input1, const int8_t* input2, int8_t* output);  // validated, rows >= 1
};
using AddS8Variant = ElementwiseS8Variant<qlstm_add_s8_params>;
using MulS8Variant = ElementwiseS8Variant<qlstm_mul_s8_params>;
// Best first, the reference last (runs every call); *count receives the number of entries.
const AddS8Variant* const* add_s8_variants(size_t* count);
const MulS8Variant* const* mul_s8_variants(size_t* count);
extern const AddS8Variant kAddS8ReferenceVariant;
extern const MulS8Variant kMulS8ReferenceVariant;
// As qlstm_add_s8() / qlstm_mul_s8() with the given variant: QLSTM_ERROR_UNSUPPORTED /
// QLSTM_ERROR_NO_VARIANT as run_lstm_s8.
qlstm_status run_add_s8(const AddS8Variant& variant, const qlstm_add_s8_params* params, const int8_t* input1,
                        const int8_t* input2, int8_t* output);
qlstm_status run_mul_s8(const MulS8Variant& variant, const qlstm_mul_s8_params* params, const int8_t* input1,
                        const int8_t* input2, int8_t* output);
// On validated params (qlstm_add_s8_validate, qlstm_mul_s8_validate), rows >= 0: variant nullptr,
// the per-call dispatch over add_s8_variants() / mul_s8_variants(); what the program runner calls.
void add_s8_prechecked(const AddS8Variant* variant, const qlstm_add_s8_params& params, const int8_t* input1,
                       const int8_t* input2, int8_t* output);
void mul_s8_prechecked(const MulS8Variant* variant, const qlstm_mul_s8_params& params, const int8_t* input1,
                       const int8_t* input2, int8_t* output);
// The references alone.
void add_s8_reference(const qlstm_add_s8_params& params, const int8_t* input1, const int8_t* input2, int8_t* output);
void mul_s8_reference(const qlstm_mul_s8_params& params, const int8_t* input1, const int8_t* input2, int8_t* output);
// ---- The pooling op's variants (pool_s8.h, docs/arithmetic.md §17): one function for the whole
// call, each equal to the reference bit for bit (tests/variants).
using PoolS8Fn = void (*)(const qlstm_pool_s8_params& params, const int8_t* input, int8_t* output);
struct PoolS8Variant {
  const char* name;
  bool (*is_supported)();                          // null: any CPU
  bool (*can_run)(const qlstm_pool_s8_params& p);  // null: every valid call
  PoolS8Fn run;                                    // params validated, batch >= 1
};
// Best first, the reference last (runs every call); *count receives the number of entries.
const PoolS8Variant* const* pool_s8_variants(size_t* count);
extern const PoolS8Variant kPoolS8ReferenceVariant;
const PoolS8Variant* select_pool_s8_variant(const PoolS8Variant* const* list, size_t count,
                                            const qlstm_pool_s8_params& p);
// As qlstm_pool_s8() with the given variant: QLSTM_ERROR_UNSUPPORTED / QLSTM_ERROR_NO_VARIANT as run_lstm_s8.
qlstm_status run_pool_s8(const PoolS8Variant& variant, const qlstm_pool_s8_params* params, const int8_t* input,
                         int8_t* output);
// Validated params (qlstm_pool_s8_validate), batch >= 0; variant nullptr: per-call dispatch over
// pool_s8_variants().
qlstm_status run_pool_s8_prechecked(const PoolS8Variant* variant, const qlstm_pool_s8_params& params,
                                    const int8_t* input, int8_t* output);

// qlstm_program_run with a fixed variant for every op (nullptr: the per-call dispatch of
// qlstm_lstm_s8) and a hook around each op (the device's instruction counter); the program runner
// is this with the defaults.
struct ProgramRunOptions {
  const LstmS8Variant* variant = nullptr;
  const GruS8Variant* gru_variant = nullptr;  // nullptr: the per-call dispatch of qlstm_gru_s8
  const RnnS8Variant* rnn_variant = nullptr;  // nullptr: the per-call dispatch of qlstm_rnn_s8
  const FcS8Variant* fc_variant = nullptr;  // nullptr: the per-call dispatch of qlstm_fc_s8
  const PoolS8Variant* pool_variant = nullptr;  // nullptr: the per-call dispatch of qlstm_pool_s8
  const AddS8Variant* add_variant = nullptr;    // nullptr: the per-call dispatch of qlstm_add_s8
  const MulS8Variant* mul_variant = nullptr;    // nullptr: the per-call dispatch of qlstm_mul_s8
  void (*before_op)(int32_t op) = nullptr;
  void (*after_op)(int32_t op) = nullptr;
};
qlstm_status run_program_s8(const qlstm_program* program, qlstm_program_context* ctx, const void* input,
                            void* output, int32_t time_steps, int8_t* hidden, int16_t* cell,
                            const ProgramRunOptions& options);

// The gate names in qlstm_gate_index order, for messages: "forget", "input", "cell", "output".
const char* gate_name(int32_t gate_index);

}  // namespace qlstm

#endif  // QLSTM_KERNELS_H_
