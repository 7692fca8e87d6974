// The bundle `qlstm ... --target CPU` hands the device firmware: written by the host
// (tools/qlstm/device.cc), read in place by the firmware (qlstm_device.cc), both through these
// visitors and the runtime's record codec (qlstm/params_codec.h), so the two sides cannot drift.
//
// File: "QLVB", kBundleVersion, the case count (int32 each), then per case its byte count and its
// record: visit_case_header, each op's visit_op_fields, visit_case_data (docs/targets.md). The 16x8
// kernel vectors travel in a bundle of their own, "QLSB" (visit_s16_case below).
#ifndef QLSTM_TARGETS_BUNDLE_FORMAT_H_
#define QLSTM_TARGETS_BUNDLE_FORMAT_H_

#include <stdint.h>

#include "qlstm/params_codec.h"

namespace qlstm {
namespace bundle {

constexpr uint32_t kBundleVersion = 9;  // 5: GRU ops; 6: buffer types (16x8 programs); 7: second input buffers; 8: a selection's step_count; 9: an int8 LSTM gate's HardSigmoid line
constexpr int32_t kFlagStateful = 1;  // the call starts from the case's state and returns the final one
constexpr int32_t kFlagExpected = 2;  // the case carries the expected output (and final state)

// What a case holds besides its ops. Arrays point into the record (device) or the caller's
// memory (host).
struct CaseView {
  int32_t name_length;
  const char* name;
  int32_t flags;
  int32_t batch;
  int32_t time_steps;
  int32_t op_count;
  int32_t buffer_count;
  const int32_t* buffer_widths;
  const int32_t* buffer_steps;  // a qlstm_buffer_steps per buffer
  const int32_t* buffer_types;  // a qlstm_element_type per buffer (all QLSTM_ELEMENT_S8: an int8 program)
  int32_t layout;               // a qlstm_layout
  // input and expected are raw bytes of their buffers' element types (int16 little-endian).
  const int8_t* input;     // [B][T][widths[0]] in the ops' layout
  const int8_t* h0;        // stateful: [recurrent ops][B][H] (a GRU's rows unused: its h is in c0)
  const int16_t* c0;
  const int8_t* expected;  // [B][T][widths[last]], or [B][widths[last]] for a one-step output
  const int8_t* final_h;   // stateful and expected
  const int16_t* final_c;
};

// Element counts of a case's data (-1 when the header is out of range), and the bytes of the input
// and the output in their buffers' element types.
struct CaseSizes {
  int64_t input;
  int64_t state;  // sum over the recurrent ops of B x qlstm_op_state_size
  int64_t output;
  int64_t input_bytes;
  int64_t output_bytes;
};

template <class C, class V>
void visit_case_header(C& c, V& v) {
  v.i32("name_length", c.name_length);
  v.array("name", c.name, c.name_length < 0 || c.name_length > 256 ? -1 : c.name_length);
  v.i32("flags", c.flags);
  v.i32("batch", c.batch);
  v.i32("time_steps", c.time_steps);
  v.i32("op_count", c.op_count);
  v.i32("buffer_count", c.buffer_count);
  v.array("buffer_widths", c.buffer_widths, c.buffer_count < 2 || c.buffer_count > 1024 ? -1 : c.buffer_count);
  v.array("buffer_steps", c.buffer_steps, c.buffer_count < 2 || c.buffer_count > 1024 ? -1 : c.buffer_count);
  v.array("buffer_types", c.buffer_types, c.buffer_count < 2 || c.buffer_count > 1024 ? -1 : c.buffer_count);
  v.i32("layout", c.layout);
}

template <class C, class V>
void visit_case_data(C& c, const CaseSizes& n, V& v) {
  v.array("input", c.input, n.input_bytes);
  if ((c.flags & kFlagStateful) != 0) {
    v.array("h0", c.h0, n.state);
    v.array("c0", c.c0, n.state);
  }
  if ((c.flags & kFlagExpected) != 0) {
    v.array("expected", c.expected, n.output_bytes);
    if ((c.flags & kFlagStateful) != 0) {
      v.array("final_h", c.final_h, n.state);
      v.array("final_c", c.final_c, n.state);
    }
  }
}

// The counts, bounded so that no product overflows (the program's validation judges the rest).
// Bytes of one element of buffer b: 0 for an unknown type.
inline int64_t buffer_element_bytes(const CaseView& c, int32_t b) {
  return c.buffer_types == nullptr ? 1 : static_cast<int64_t>(qlstm_element_bytes(c.buffer_types[b]));
}

inline CaseSizes case_sizes(const CaseView& c, const qlstm_op* ops) {
  const CaseSizes bad = {-1, -1, -1, -1, -1};
  const int64_t limit = int64_t{1} << 30;
  if (c.batch < 0 || c.time_steps < 0 || c.buffer_count < 2 || c.buffer_widths == nullptr ||
      c.buffer_steps == nullptr) {
    return bad;
  }
  const int64_t in_e = buffer_element_bytes(c, 0), out_e = buffer_element_bytes(c, c.buffer_count - 1);
  if (in_e == 0 || out_e == 0) return bad;
  const int64_t positions = static_cast<int64_t>(c.batch) * c.time_steps;
  const int64_t out_positions = c.buffer_steps[c.buffer_count - 1] == QLSTM_BUFFER_ONE_STEP ? c.batch : positions;
  const int64_t in_w = c.buffer_widths[0], out_w = c.buffer_widths[c.buffer_count - 1];
  if (in_w < 0 || out_w < 0 || positions > limit || in_w > limit || out_w > limit) return bad;
  CaseSizes n = {positions * in_w, 0, out_positions * out_w, positions * in_w * in_e, out_positions * out_w * out_e};
  for (int32_t k = 0; k < c.op_count; ++k) {
    const int64_t h = qlstm_op_state_size(&ops[k]);  // 0: no state
    if (h < 0 || h > limit) return bad;
    n.state += c.batch * h;
    if (n.state > limit) return bad;
  }
  return n;
}

// ---- The 16x8 kernel bundle: "QLSB", kS16BundleVersion, the case count, then per case its byte
// count and its record (visit_s16_case). A case is one call of qlstm_fc_s16 or qlstm_lstm_s16 (the
// 16x8 ops are not program ops yet), with its int16 data.
constexpr uint32_t kS16BundleVersion = 1;
enum S16Kind : int32_t { kS16Fc = 0, kS16Lstm = 1 };

struct S16CaseView {
  int32_t name_length;
  const char* name;
  int32_t flags;  // kFlagStateful (an LSTM case), kFlagExpected
  int32_t kind;   // an S16Kind
  qlstm_fc_s16_params fc;
  int32_t fc_has_bias;
  qlstm_lstm_s16_params lstm;
  const int16_t* input;     // FC [rows][I]; LSTM [B][T][I] in its layout
  const int16_t* h0;        // stateful: [B][H]
  const int16_t* c0;
  const int16_t* expected;  // FC [rows][O]; LSTM [B][T or 1][W]
  const int16_t* final_h;   // stateful and expected
  const int16_t* final_c;
};

// Element counts of a 16x8 case's data, bounded (-1 when the block's sizes are out of range; the
// kernel's validation judges the rest).
inline CaseSizes s16_case_sizes(const S16CaseView& c) {
  const CaseSizes bad = {-1, -1, -1, -1, -1};
  const int64_t limit = int64_t{1} << 28;
  if (c.kind == kS16Fc) {
    const int64_t rows = c.fc.rows, I = c.fc.input_size, O = c.fc.output_size;
    if (rows < 0 || I < 0 || O < 0 || rows > limit || I > limit || O > limit || rows * I > limit || rows * O > limit) {
      return bad;
    }
    return {rows * I, 0, rows * O, 2 * rows * I, 2 * rows * O};
  }
  if (c.kind != kS16Lstm) return bad;
  const qlstm_lstm_dims& d = c.lstm.dims;
  const int64_t B = d.batch, T = d.time_steps, I = d.input_size, H = d.hidden_size;
  const int64_t W = c.lstm.output_width > 0 ? c.lstm.output_width : H;
  const int64_t steps = c.lstm.output_steps == QLSTM_OUTPUT_FINAL ? 1 : T;
  if (B < 0 || T < 0 || I < 0 || H < 0 || W < 0 || B > limit || T > limit || I > limit || W > limit ||
      B * T > limit || B * T * I > limit || B * steps * W > limit || B * H > limit) {
    return bad;
  }
  return {B * T * I, B * H, B * steps * W, 2 * B * T * I, 2 * B * steps * W};
}

template <class C, class V>
void visit_s16_case(C& c, V& v) {
  v.i32("name_length", c.name_length);
  v.array("name", c.name, c.name_length < 0 || c.name_length > 256 ? -1 : c.name_length);
  v.i32("flags", c.flags);
  v.i32("kind", c.kind);
  if (c.kind == kS16Fc) {
    visit_fc_s16_fields(c.fc, v, c.fc_has_bias);
  } else if (c.kind == kS16Lstm) {
    visit_lstm_s16_fields(c.lstm, v);
  } else {
    v.array("kind", c.input, -1);  // an unknown kind stops the reading here
    return;
  }
  const CaseSizes n = s16_case_sizes(c);
  v.array("input", c.input, n.input);
  const bool stateful = c.kind == kS16Lstm && (c.flags & kFlagStateful) != 0;
  if (stateful) {
    v.array("h0", c.h0, n.state);
    v.array("c0", c.c0, n.state);
  }
  if ((c.flags & kFlagExpected) != 0) {
    v.array("expected", c.expected, n.output);
    if (stateful) {
      v.array("final_h", c.final_h, n.state);
      v.array("final_c", c.final_c, n.state);
    }
  }
}

}  // namespace bundle
}  // namespace qlstm

#endif  // QLSTM_TARGETS_BUNDLE_FORMAT_H_
