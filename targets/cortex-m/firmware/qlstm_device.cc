// The device side of `qlstm ... --target CPU`: one firmware per CPU, driven through semihosting.
//   qlstm_device verify BUNDLE [VARIANT|all]   every case against its expected values;
//                                             prints a FAIL line per mismatch, last "N passed, N failed"
//   qlstm_device run BUNDLE OUT [VARIANT]      every case's output (and final state) into OUT
//   qlstm_device bench BUNDLE VARIANT          case 0 once, between the instruction-count markers
//   qlstm_device variants                      the variants built for this CPU, one per line (the
//                                             fully connected op's as "fc NAME", the 16x8 kernels' as
//                                             "lstm_s16 NAME" and "fc_s16 NAME", pooling's as "pool NAME",
//                                             the elementwise ones' as "add NAME" and "mul NAME")
//   qlstm_device fc-bench I O per-tensor|per-channel VARIANT
//                                             one FC call between the instruction-count markers
//   qlstm_device elementwise-bench add|add_equal|mul N VARIANT
//                                             one elementwise call between the instruction-count markers
//   qlstm_device pool-bench max|avg H W C KH KW STRIDE PAD VARIANT
//                                             one pooling call between the instruction-count markers
//   qlstm_device lstm-s16-bench B T I H VARIANT [time-major]
//                                             one 16x8 LSTM call between the instruction-count markers
//   qlstm_device icount-self-test              a known count of instructions between the markers
//   qlstm_device cycle-self-test               a known sequence for the cycle estimate
//   qlstm_device variant-test [CASES]          every variant against the reference on random cases
//                                             (LSTM), then every FC variant over its edge sizes, then
//                                             every GRU variant on random cases, then every 16x8 LSTM
//                                             and FC variant, the pooling and the elementwise ones
//   qlstm_device --fault                       writes to an unmapped address (a fault fails the run)
// BUNDLE is written by the host (tools/qlstm/device.cc; layout in bundle_format.h and docs/targets.md):
// every case is a program (a kernel vector is a one-op program), validated and run by the runtime's
// program runner; or, in a "QLSB" bundle, one call of a 16x8 kernel (verify, run, and bench: case 0,
// the kernel call between the markers). Exit status: 0 all good, 1 a mismatch, 2 bad arguments or a malformed bundle,
// 3 a kernel error.
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle_format.h"
#include "qlstm/fully_connected_s16.h"
#include "qlstm/gru_s8.h"
#include "qlstm/kernels.h"
#include "qlstm/lstm_s16.h"
#include "qlstm/lstm_s8.h"
#include "qlstm/params_codec.h"
#include "qlstm/program_s8.h"

namespace {

constexpr int kExitMismatch = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitKernelError = 3;
constexpr int32_t kGruVariantCases = 600;  // variant-test's GRU cases

// All per-case memory comes from one arena, reset for every case: the record as read, then the
// scratch, the state and the output.
constexpr uint32_t kArenaBytes = 3u * 1024u * 1024u;
alignas(16) uint8_t g_arena[kArenaBytes];
uint32_t g_arena_used = 0;

void* arena_take(uint32_t bytes) {
  const uint32_t start = (g_arena_used + 15u) & ~15u;
  if (bytes > kArenaBytes || start > kArenaBytes - bytes) return nullptr;
  g_arena_used = start + bytes;
  return g_arena + start;
}

// A random case of the variant tester: one kernel call.
struct Case {
  qlstm_lstm_s8_params params;
  bool stateful;
  const int8_t* input;
  const int8_t* h0;
  const int16_t* c0;
};

// One program case of a bundle, read in place from its record.
struct ProgramCase {
  qlstm::bundle::CaseView view;
  qlstm_op* ops;
  qlstm::bundle::CaseSizes sizes;
};

// Reads one length-prefixed record into the arena and decodes it. 0 ok, -1 end of bundle,
// 1 truncated or too large, 2 malformed (*field names the first field that did not fit).
// Reads the next length-prefixed record into the arena: 0 ok, -1 end of bundle, 1 truncated or too
// large.
int read_record(FILE* f, uint8_t** rec, uint32_t* bytes) {
  if (fread(bytes, 4, 1, f) != 1) return -1;
  *rec = *bytes % 4 == 0 ? static_cast<uint8_t*>(arena_take(*bytes)) : nullptr;
  return *rec == nullptr || fread(*rec, 1, *bytes, f) != *bytes ? 1 : 0;
}

// Says why case n could not be read (read_case's status `got`, the field it stopped at) or, read
// (got 0) for verify, has no expected values.
void report_unread_case(uint32_t n, int got, const char* field) {
  if (got == 2) {
    printf("qlstm_device: case %lu: malformed record at field '%s'\n", (unsigned long)n, field);
  } else {
    printf("qlstm_device: case %lu: %s\n", (unsigned long)n,
           got == 0 ? "no expected values to verify" : "truncated, or larger than this firmware's arena");
  }
}

int read_case(FILE* f, ProgramCase* k, const char** field) {
  uint8_t* rec = nullptr;
  uint32_t bytes = 0;
  const int got = read_record(f, &rec, &bytes);
  if (got != 0) return got;
  memset(k, 0, sizeof *k);
  qlstm::RecordReader r(rec, bytes);
  qlstm::bundle::visit_case_header(k->view, r);
  for (int32_t b = 0; r.failed() == nullptr && b < k->view.buffer_count; ++b) {
    if (qlstm_element_bytes(k->view.buffer_types[b]) == 0) {
      *field = "buffer_types";
      return 2;
    }
  }
  const int32_t n = k->view.op_count;
  if (r.failed() == nullptr && (n < 1 || n > 64)) {
    *field = "op_count";
    return 2;
  }
  // Each op and, where its params point, its block.
  k->ops = r.failed() == nullptr ? static_cast<qlstm_op*>(arena_take(static_cast<uint32_t>(n) * sizeof(qlstm_op)))
                                 : nullptr;
  qlstm::OpBlock* blocks =
      k->ops != nullptr ? static_cast<qlstm::OpBlock*>(arena_take(static_cast<uint32_t>(n) * sizeof(qlstm::OpBlock)))
                        : nullptr;
  if (r.failed() == nullptr && (k->ops == nullptr || blocks == nullptr)) return 1;
  for (int32_t o = 0; o < n && r.failed() == nullptr; ++o) {
    memset(&k->ops[o], 0, sizeof k->ops[o]);
    memset(&blocks[o], 0, sizeof blocks[o]);
    qlstm::visit_op_fields(k->ops[o], blocks[o], r);
  }
  if (r.failed() == nullptr) {
    k->sizes = qlstm::bundle::case_sizes(k->view, k->ops);
    qlstm::bundle::visit_case_data(k->view, k->sizes, r);
  }
  if (!r.complete()) {
    *field = r.failed() != nullptr ? r.failed() : "(bytes after the last field)";
    return 2;
  }
  return 0;
}

struct Outputs {
  int8_t* output;
  int16_t* cell;
  int8_t* hidden;  // nullptr for a stateless case
  uint32_t output_bytes;
  uint32_t state_count;
};

bool alloc_outputs(const Case& k, Outputs* o, void** scratch, uint32_t* scratch_bytes) {
  const qlstm_lstm_dims& d = k.params.dims;
  o->state_count = static_cast<uint32_t>(d.batch * d.hidden_size);
  const int32_t steps = k.params.output_steps != QLSTM_OUTPUT_ALL_STEPS ? 1 : d.time_steps;
  o->output_bytes = static_cast<uint32_t>(d.batch * steps * d.hidden_size);
  *scratch_bytes = static_cast<uint32_t>(qlstm_lstm_s8_call_scratch_bytes(&k.params));
  *scratch = arena_take(*scratch_bytes);
  o->output = static_cast<int8_t*>(arena_take(o->output_bytes));
  o->cell = static_cast<int16_t*>(arena_take(o->state_count * 2u));
  o->hidden = k.stateful ? static_cast<int8_t*>(arena_take(o->state_count)) : nullptr;
  if (!*scratch || !o->output || !o->cell || (k.stateful && !o->hidden)) return false;
  if (k.stateful) {
    memcpy(o->hidden, k.h0, o->state_count);
    memcpy(o->cell, k.c0, o->state_count * 2u);
  }
  return true;
}

}  // namespace

// The instruction counter (tools/qemu_icount) counts what runs between these two calls (noipa: two
// empty functions must not be folded into one).
extern "C" __attribute__((noinline, noipa, used)) void qlstm_bench_begin(void) { __asm volatile("" ::: "memory"); }
extern "C" __attribute__((noinline, noipa, used)) void qlstm_bench_end(void) { __asm volatile("" ::: "memory"); }

namespace {

// The entry of a variant list with that name, or null.
template <class Variant>
const Variant* find_named(const Variant* const* all, size_t n, const char* name) {
  for (size_t i = 0; i < n; ++i) {
    if (strcmp(all[i]->name, name) == 0) return all[i];
  }
  return nullptr;
}

const qlstm::LstmS8Variant* find_variant(const char* name) {
  size_t n = 0;
  const qlstm::LstmS8Variant* const* all = qlstm::lstm_s8_variants(&n);
  if (strcmp(name, "default") == 0) return &qlstm::lstm_s8_default_variant();
  return find_named(all, n, name);
}

// The fully connected variant of that name, or null.
const qlstm::FcS8Variant* find_fc_variant(const char* name) {
  size_t n = 0;
  const qlstm::FcS8Variant* const* all = qlstm::fc_s8_variants(&n);
  return find_named(all, n, name);
}

// The GRU variant of that name (the LSTM variant's name for the same ISA), or null.
const qlstm::GruS8Variant* find_gru_variant(const char* name) {
  size_t n = 0;
  const qlstm::GruS8Variant* const* all = qlstm::gru_s8_variants(&n);
  return find_named(all, n, name);
}

// The RNN variant of that name (the LSTM variant's name for the same ISA), or null.
const qlstm::RnnS8Variant* find_rnn_variant(const char* name) {
  size_t n = 0;
  const qlstm::RnnS8Variant* const* all = qlstm::rnn_s8_variants(&n);
  return find_named(all, n, name);
}

// One run of a case: the LSTM, GRU, FC and RNN variants (nullptr: the runner's per-call dispatch),
// and the name it is reported (and, by bench, sized) as.
struct Run {
  const qlstm::LstmS8Variant* lstm;
  const qlstm::GruS8Variant* gru;
  const qlstm::FcS8Variant* fc;
  const char* name;
  const qlstm::RnnS8Variant* rnn;
};
constexpr size_t kMaxRuns = 16;
// The name of a run of ops that have one implementation each (as `qlstm verify-vectors` says).
constexpr const char* kOnlyImplementation = "reference";

// The runs of a case for `variant_name`: a program with an LSTM op runs the LSTM variants asked
// for (its GRU, RNN and FC ops the variants of the same name, else by dispatch), one with GRU ops
// and no LSTM the GRU variants, one with RNN ops only the RNN variants, one with FC ops and no
// recurrent op the FC variants, any other once (whatever the name).
// "default" is one run by dispatch, named as what it picks for the first LSTM (or GRU, or FC) op.
// 0: the name is not a variant of the case's ops.
size_t case_runs(const ProgramCase& k, const char* variant_name, Run runs[kMaxRuns]) {
  const qlstm_op* lstm_op = nullptr;
  const qlstm_op* gru_op = nullptr;
  const qlstm_op* fc_op = nullptr;
  const qlstm_op* lstm_s16_op = nullptr;
  const qlstm_op* rnn_op = nullptr;
  for (int32_t o = k.view.op_count - 1; o >= 0; --o) {
    if (k.ops[o].kind == QLSTM_OP_RNN_S8) rnn_op = &k.ops[o];
    if (k.ops[o].kind == QLSTM_OP_LSTM_S16) lstm_s16_op = &k.ops[o];
    if (k.ops[o].kind == QLSTM_OP_LSTM_S8) lstm_op = &k.ops[o];
    if (k.ops[o].kind == QLSTM_OP_GRU_S8) gru_op = &k.ops[o];
    if (k.ops[o].kind == QLSTM_OP_FULLY_CONNECTED_S8) fc_op = &k.ops[o];
  }
  size_t nlstm = 0, ngru = 0, nfc = 0;
  const qlstm::LstmS8Variant* const* lstm = qlstm::lstm_s8_variants(&nlstm);
  const qlstm::GruS8Variant* const* gru = qlstm::gru_s8_variants(&ngru);
  const qlstm::FcS8Variant* const* fc = qlstm::fc_s8_variants(&nfc);
  size_t n = 0;
  if (strcmp(variant_name, "default") == 0) {
    runs[0] = {nullptr, nullptr, nullptr, kOnlyImplementation, nullptr};
    const char* picked = nullptr;
    if (lstm_op != nullptr) {
      const qlstm::LstmS8Variant* v = qlstm::select_lstm_s8_variant(lstm, nlstm, qlstm::op_block<qlstm_lstm_s8_params>(*lstm_op));
      picked = v != nullptr ? v->name : nullptr;
    } else if (gru_op != nullptr) {
      const qlstm::GruS8Variant* v = qlstm::select_gru_s8_variant(gru, ngru, qlstm::op_block<qlstm_gru_s8_params>(*gru_op));
      picked = v != nullptr ? v->name : nullptr;
    } else if (rnn_op != nullptr) {
      size_t nrnn = 0;
      const qlstm::RnnS8Variant* const* rnn = qlstm::rnn_s8_variants(&nrnn);
      picked = nrnn > 0 ? rnn[0]->name : nullptr;  // its list's first: every RNN variant runs every call
    } else if (fc_op != nullptr) {
      const qlstm::FcS8Variant* v = qlstm::select_fc_s8_variant(fc, nfc, qlstm::op_block<qlstm_fc_s8_params>(*fc_op));
      picked = v != nullptr ? v->name : nullptr;
    } else if (lstm_s16_op != nullptr) {
      size_t ns16 = 0;
      const qlstm::LstmS16Variant* const* s16 = qlstm::lstm_s16_variants(&ns16);
      const qlstm::LstmS16Variant* v = qlstm::select_lstm_s16_variant(s16, ns16, qlstm::op_block<qlstm_lstm_s16_params>(*lstm_s16_op));
      picked = v != nullptr ? v->name : nullptr;
    }
    if (picked != nullptr) runs[0].name = picked;
    return 1;
  }
  const bool all = strcmp(variant_name, "all") == 0;
  if (lstm_op != nullptr) {
    for (size_t i = 0; i < nlstm && n < kMaxRuns; ++i) {
      if (all || strcmp(lstm[i]->name, variant_name) == 0) {
        runs[n++] = {lstm[i], find_gru_variant(lstm[i]->name), find_fc_variant(lstm[i]->name), lstm[i]->name,
                     find_rnn_variant(lstm[i]->name)};
      }
    }
  } else if (gru_op != nullptr) {
    for (size_t i = 0; i < ngru && n < kMaxRuns; ++i) {
      if (all || strcmp(gru[i]->name, variant_name) == 0) {
        runs[n++] = {nullptr, gru[i], find_fc_variant(gru[i]->name), gru[i]->name, find_rnn_variant(gru[i]->name)};
      }
    }
  } else if (rnn_op != nullptr) {
    size_t nrnn = 0;
    const qlstm::RnnS8Variant* const* rnn = qlstm::rnn_s8_variants(&nrnn);
    for (size_t i = 0; i < nrnn && n < kMaxRuns; ++i) {
      if (all || strcmp(rnn[i]->name, variant_name) == 0) {
        runs[n++] = {nullptr, nullptr, find_fc_variant(rnn[i]->name), rnn[i]->name, rnn[i]};
      }
    }
  } else if (fc_op != nullptr) {
    for (size_t i = 0; i < nfc && n < kMaxRuns; ++i) {
      if (all || strcmp(fc[i]->name, variant_name) == 0) runs[n++] = {nullptr, nullptr, fc[i], fc[i]->name, nullptr};
    }
  } else {
    runs[n++] = {nullptr, nullptr, nullptr, kOnlyImplementation, nullptr};  // softmax, table, selection
  }
  return n;
}

// The memory of one program call, from the arena: the runner's context, the output, the state.
struct ProgramMemory {
  qlstm_program_context ctx;
  int8_t* output;
  int8_t* hidden;
  int16_t* cell;
};

// For a validated program: only recurrent ops have scratch, only LSTM ops a cell; an intermediate buffer holds
// B x T positions of its width, or B for a one-step buffer.
bool alloc_program(const ProgramCase& k, ProgramMemory* m) {
  const qlstm::bundle::CaseView& v = k.view;
  size_t scratch = 0;
  int32_t max_h = 0;
  for (int32_t o = 0; o < v.op_count; ++o) {
    const size_t s = qlstm_op_scratch_bytes(&k.ops[o]);
    scratch = s > scratch ? s : scratch;
    // Only an LSTM op (int8 or 16x8) run statelessly needs a cell.
    const qlstm_op& op = k.ops[o];
    const int32_t h = op.kind == QLSTM_OP_LSTM_S8    ? qlstm::op_block<qlstm_lstm_s8_params>(op).dims.hidden_size
                      : op.kind == QLSTM_OP_LSTM_S16 ? qlstm::op_block<qlstm_lstm_s16_params>(op).dims.hidden_size
                                                     : 0;
    max_h = h > max_h ? h : max_h;
  }
  uint64_t area = 0;
  for (int32_t b = 1; b + 1 < v.buffer_count; ++b) {
    const uint64_t steps = v.buffer_steps[b] == QLSTM_BUFFER_ONE_STEP ? 1u : static_cast<uint64_t>(v.time_steps);
    const uint64_t bytes = static_cast<uint64_t>(v.batch) * steps * static_cast<uint64_t>(v.buffer_widths[b]) *
                           static_cast<uint64_t>(qlstm::bundle::buffer_element_bytes(v, b));
    area = bytes > area ? bytes : area;
  }
  const uint64_t cells = static_cast<uint64_t>(v.batch) * static_cast<uint64_t>(max_h);
  if (area > kArenaBytes || cells > kArenaBytes || static_cast<uint64_t>(k.sizes.state) > kArenaBytes) return false;
  m->ctx.scratch = arena_take(static_cast<uint32_t>(scratch));
  m->ctx.scratch_bytes = scratch;
  m->ctx.cell = static_cast<int16_t*>(arena_take(static_cast<uint32_t>(cells * 2u)));
  m->ctx.activation_bytes = static_cast<size_t>(area);
  m->ctx.activations[0] = area > 0 ? static_cast<int8_t*>(arena_take(static_cast<uint32_t>(area))) : nullptr;
  m->ctx.activations[1] = area > 0 ? static_cast<int8_t*>(arena_take(static_cast<uint32_t>(area))) : nullptr;
  m->output = static_cast<int8_t*>(arena_take(static_cast<uint32_t>(k.sizes.output_bytes)));  // 16-byte aligned
  const uint32_t state = static_cast<uint32_t>(k.sizes.state);
  const bool stateful = (v.flags & qlstm::bundle::kFlagStateful) != 0;
  m->hidden = stateful ? static_cast<int8_t*>(arena_take(state)) : nullptr;
  m->cell = stateful ? static_cast<int16_t*>(arena_take(state * 2u)) : nullptr;
  if (!m->ctx.scratch || !m->ctx.cell || (area > 0 && !m->ctx.activations[1]) ||
      (k.sizes.output_bytes > 0 && !m->output) || (stateful && (!m->hidden || !m->cell))) {
    return false;
  }
  if (stateful) {
    memcpy(m->hidden, v.h0, state);
    memcpy(m->cell, v.c0, state * 2u);
  }
  return true;
}

// First mismatch of case k, as "what[index]: expected E, got G", or false if it all matches.
bool mismatch(const ProgramCase& k, const ProgramMemory& m, char* msg, size_t msg_size) {
  const qlstm::bundle::CaseView& v = k.view;
  const bool wide = qlstm::bundle::buffer_element_bytes(v, v.buffer_count - 1) == 2;  // int16, aligned in place
  for (int64_t i = 0; i < k.sizes.output; ++i) {
    const int got = wide ? reinterpret_cast<const int16_t*>(m.output)[i] : m.output[i];
    const int want = wide ? reinterpret_cast<const int16_t*>(v.expected)[i] : v.expected[i];
    if (got != want) {
      snprintf(msg, msg_size, "output[%ld]: expected %d, got %d", (long)i, want, got);
      return true;
    }
  }
  for (int64_t i = 0; m.hidden != nullptr && i < k.sizes.state; ++i) {
    if (m.hidden[i] != v.final_h[i]) {
      snprintf(msg, msg_size, "final_hidden[%ld]: expected %d, got %d", (long)i, v.final_h[i], m.hidden[i]);
      return true;
    }
    if (m.cell[i] != v.final_c[i]) {
      snprintf(msg, msg_size, "final_cell[%ld]: expected %d, got %d", (long)i, v.final_c[i], m.cell[i]);
      return true;
    }
  }
  return false;
}

void bench_before_op(int32_t) { qlstm_bench_begin(); }
void bench_after_op(int32_t) { qlstm_bench_end(); }

enum class Mode { kVerify, kRun, kBench };

// ---- The 16x8 kernel bundle ("QLSB", bundle_format.h): each case one call of qlstm_fc_s16 or
// qlstm_lstm_s16, checked against its expected values or written out as run writes a program's.

// Reads one length-prefixed 16x8 record into the arena; as read_case.
int read_s16_case(FILE* f, qlstm::bundle::S16CaseView* k, const char** field) {
  uint8_t* rec = nullptr;
  uint32_t bytes = 0;
  const int got = read_record(f, &rec, &bytes);
  if (got != 0) return got;
  memset(k, 0, sizeof *k);
  qlstm::RecordReader r(rec, bytes);
  qlstm::bundle::visit_s16_case(*k, r);
  if (!r.complete()) {
    *field = r.failed() != nullptr ? r.failed() : "(bytes after the last field)";
    return 2;
  }
  return 0;
}

// The first differing int16 value of `what`, as "what[index]: expected E, got G"; false: none.
bool mismatch_s16(const char* what, const int16_t* want, const int16_t* got, int64_t n, char* msg, size_t msg_size) {
  for (int64_t i = 0; i < n; ++i) {
    if (got[i] != want[i]) {
      snprintf(msg, msg_size, "%s[%ld]: expected %d, got %d", what, (long)i, want[i], got[i]);
      return true;
    }
  }
  return false;
}

// One run of a validated 16x8 case: compared (verify) or written (run). The status as run_bundle's.
// One run of a 16x8 case: the variant of its kind (nullptr: the kernel's dispatch) and its name.
struct S16Run {
  const qlstm::LstmS16Variant* lstm;
  const qlstm::FcS16Variant* fc;
  const char* name;
};

// The runs of a 16x8 case for `variant_name`, as case_runs: "default" one by dispatch, named as what
// it picks; "all" every variant of the case's kind; else the one of that name. 0: none.
size_t s16_case_runs(const qlstm::bundle::S16CaseView& k, const char* variant_name, S16Run runs[kMaxRuns]) {
  size_t nlstm = 0, nfc = 0;
  const qlstm::LstmS16Variant* const* lstm = qlstm::lstm_s16_variants(&nlstm);
  const qlstm::FcS16Variant* const* fc = qlstm::fc_s16_variants(&nfc);
  const bool is_lstm = k.kind == qlstm::bundle::kS16Lstm;
  if (strcmp(variant_name, "default") == 0) {
    const char* picked = is_lstm ? qlstm::select_lstm_s16_variant(lstm, nlstm, k.lstm)->name
                                 : qlstm::select_fc_s16_variant(fc, nfc, k.fc)->name;
    runs[0] = {nullptr, nullptr, picked};
    return 1;
  }
  const bool all = strcmp(variant_name, "all") == 0;
  size_t n = 0;
  for (size_t i = 0; is_lstm && i < nlstm && n < kMaxRuns; ++i) {
    if (all || strcmp(lstm[i]->name, variant_name) == 0) runs[n++] = {lstm[i], nullptr, lstm[i]->name};
  }
  for (size_t i = 0; !is_lstm && i < nfc && n < kMaxRuns; ++i) {
    if (all || strcmp(fc[i]->name, variant_name) == 0) runs[n++] = {nullptr, fc[i], fc[i]->name};
  }
  return n;
}

int run_s16_case(Mode mode, const qlstm::bundle::S16CaseView& k, FILE* out, const S16Run& run, long* passed,
                 long* failed) {
  const char* run_name = run.name;
  const qlstm::bundle::CaseSizes n = qlstm::bundle::s16_case_sizes(k);
  const bool stateful = k.kind == qlstm::bundle::kS16Lstm && (k.flags & qlstm::bundle::kFlagStateful) != 0;
  int16_t* output = static_cast<int16_t*>(arena_take(static_cast<uint32_t>(n.output) * 2u));
  int16_t* cell = static_cast<int16_t*>(arena_take(static_cast<uint32_t>(n.state) * 2u));
  int16_t* hidden = stateful ? static_cast<int16_t*>(arena_take(static_cast<uint32_t>(n.state) * 2u)) : nullptr;
  const size_t scratch_bytes = k.kind == qlstm::bundle::kS16Lstm ? qlstm_lstm_s16_scratch_bytes(&k.lstm.dims) : 0;
  void* scratch = arena_take(static_cast<uint32_t>(scratch_bytes));
  if ((n.output > 0 && !output) || (n.state > 0 && !cell) || (stateful && !hidden) || !scratch) {
    printf("qlstm_device: case %.*s: does not fit in this firmware's %lu-byte arena\n", (int)k.name_length, k.name,
           (unsigned long)kArenaBytes);
    return kExitBadInput;
  }
  if (mode == Mode::kBench) {
    printf("variant: %s\n", run_name);
    qlstm_bench_begin();
  }
  qlstm_status st;
  if (k.kind == qlstm::bundle::kS16Fc) {
    st = run.fc != nullptr ? qlstm::run_fc_s16(*run.fc, &k.fc, k.input, output) : qlstm_fc_s16(&k.fc, k.input, output);
  } else {
    if (stateful) {
      memcpy(hidden, k.h0, static_cast<size_t>(n.state) * 2u);
      memcpy(cell, k.c0, static_cast<size_t>(n.state) * 2u);
    }
    qlstm_lstm_s16_context ctx{scratch, scratch_bytes, cell, hidden};
    st = run.lstm != nullptr ? qlstm::run_lstm_s16(*run.lstm, &k.lstm, &ctx, k.input, output)
                             : qlstm_lstm_s16(&k.lstm, &ctx, k.input, output);
  }
  if (mode == Mode::kBench) qlstm_bench_end();
  if (st != QLSTM_OK) {
    printf("qlstm_device: case %.*s [%s]: kernel error: %s\n", (int)k.name_length, k.name, run_name,
           qlstm_status_string(st));
    return kExitKernelError;
  }
  char msg[96];
  if ((k.flags & qlstm::bundle::kFlagExpected) != 0 &&
      (mismatch_s16("output", k.expected, output, n.output, msg, sizeof msg) ||
       (stateful && (mismatch_s16("final_hidden", k.final_h, hidden, n.state, msg, sizeof msg) ||
                     mismatch_s16("final_cell", k.final_c, cell, n.state, msg, sizeof msg))))) {
    ++*failed;
    printf("FAIL %.*s [%s]: %s\n", (int)k.name_length, k.name, run_name, msg);
  } else {
    ++*passed;
  }
  const size_t out_count = static_cast<size_t>(n.output), state = static_cast<size_t>(n.state);
  if (mode == Mode::kRun && (fwrite(output, 2, out_count, out) != out_count ||
                             (stateful && (fwrite(hidden, 2, state, out) != state ||
                                           fwrite(cell, 2, state, out) != state)))) {
    printf("qlstm_device: cannot write the output\n");
    return kExitBadInput;
  }
  return 0;
}

// The cases of an open "QLSB" bundle after its 12-byte header (count: its case count).
int run_s16_bundle(Mode mode, FILE* f, uint32_t count, const char* out_path, const char* variant_name) {
  if (mode == Mode::kBench && strcmp(variant_name, "all") == 0) {
    printf("qlstm_device: bench takes one variant\n");
    return kExitBadInput;
  }
  size_t nlstm = 0, nfc = 0;
  const qlstm::LstmS16Variant* const* lstm = qlstm::lstm_s16_variants(&nlstm);
  const qlstm::FcS16Variant* const* fc = qlstm::fc_s16_variants(&nfc);
  if (strcmp(variant_name, "default") != 0 && strcmp(variant_name, "all") != 0 &&
      find_named(lstm, nlstm, variant_name) == nullptr && find_named(fc, nfc, variant_name) == nullptr) {
    printf("qlstm_device: no 16x8 variant '%s' in this firmware\n", variant_name);
    return kExitBadInput;
  }
  FILE* out = nullptr;
  if (mode == Mode::kRun && (out = fopen(out_path, "wb")) == nullptr) {
    printf("qlstm_device: cannot create %s: %s\n", out_path, strerror(errno));
    return kExitBadInput;
  }
  long passed = 0, failed = 0;
  int rc = 0;
  for (uint32_t n = 0; n < count && rc == 0; ++n) {
    g_arena_used = 0;
    qlstm::bundle::S16CaseView k;
    const char* field = "?";
    const int got = read_s16_case(f, &k, &field);
    if (got != 0 || (mode == Mode::kVerify && (k.flags & qlstm::bundle::kFlagExpected) == 0)) {
      report_unread_case(n, got, field);
      rc = kExitBadInput;
      break;
    }
    const qlstm_status valid = k.kind == qlstm::bundle::kS16Fc ? qlstm_fc_s16_validate(&k.fc, &field)
                                                                : qlstm_lstm_s16_validate(&k.lstm, &field);
    if (valid != QLSTM_OK) {
      printf("qlstm_device: case %.*s: invalid parameters: %s: %s\n", (int)k.name_length, k.name, field ? field : "?",
             qlstm_status_string(valid));
      rc = kExitBadInput;
      break;
    }
    S16Run runs[kMaxRuns];
    const size_t nruns = s16_case_runs(k, variant_name, runs);
    if (nruns == 0) {
      printf("qlstm_device: case %.*s: variant '%s' cannot run its ops\n", (int)k.name_length, k.name, variant_name);
      rc = kExitBadInput;
      break;
    }
    const uint32_t case_mark = g_arena_used;
    for (size_t r = 0; r < nruns && rc == 0; ++r) {
      g_arena_used = case_mark;
      rc = run_s16_case(mode, k, out, runs[r], &passed, &failed);
    }
    if (mode == Mode::kBench) break;  // one call is the measurement
  }
  if (out && fclose(out) != 0 && rc == 0) rc = kExitBadInput;
  if (rc != 0) return rc;
  printf("%ld passed, %ld failed\n", passed, failed);
  return failed == 0 ? 0 : kExitMismatch;
}

int run_bundle(Mode mode, const char* path, const char* out_path, const char* variant_name) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    printf("qlstm_device: cannot open %s: %s\n", path, strerror(errno));
    return kExitBadInput;
  }
  uint32_t header[3];
  const bool has_header = fread(header, 4, 3, f) == 3;
  if (has_header && memcmp(header, "QLSB", 4) == 0 && header[1] == qlstm::bundle::kS16BundleVersion) {
    const int rc = run_s16_bundle(mode, f, header[2], out_path, variant_name);
    fclose(f);
    return rc;
  }
  if (has_header && memcmp(header, "QLVB", 4) == 0 && header[1] != qlstm::bundle::kBundleVersion) {
    printf("qlstm_device: %s is a version-%lu bundle, this firmware reads version %lu (rebuild the firmware and "
           "the qlstm tool together)\n",
           path, (unsigned long)header[1], (unsigned long)qlstm::bundle::kBundleVersion);
    fclose(f);
    return kExitBadInput;
  }
  if (!has_header || memcmp(header, "QLVB", 4) != 0) {
    printf("qlstm_device: %s is not a version-%lu bundle\n", path, (unsigned long)qlstm::bundle::kBundleVersion);
    fclose(f);
    return kExitBadInput;
  }
  // The variants to run: one by name (an LSTM, GRU or fully connected one), or every one built for
  // this CPU; case_runs picks them for each case.
  if (strcmp(variant_name, "all") != 0 && find_variant(variant_name) == nullptr &&
      find_gru_variant(variant_name) == nullptr && find_fc_variant(variant_name) == nullptr &&
      find_rnn_variant(variant_name) == nullptr) {
    printf("qlstm_device: no variant '%s' in this firmware\n", variant_name);
    fclose(f);
    return kExitBadInput;
  }
  FILE* out = nullptr;
  if (mode == Mode::kRun && (out = fopen(out_path, "wb")) == nullptr) {
    printf("qlstm_device: cannot create %s: %s\n", out_path, strerror(errno));
    fclose(f);
    return kExitBadInput;
  }
  long passed = 0, failed = 0;
  int rc = 0;
  for (uint32_t n = 0; n < header[2] && rc == 0; ++n) {
    g_arena_used = 0;
    ProgramCase k;
    const char* field = "?";
    const int got = read_case(f, &k, &field);
    const bool expected = got == 0 && (k.view.flags & qlstm::bundle::kFlagExpected) != 0;
    if (got != 0 || (mode == Mode::kVerify && !expected)) {
      report_unread_case(n, got, field);
      rc = kExitBadInput;
      break;
    }
    // buffer_types as the host's runtime_program sets them: NULL for an all-int8 program.
    bool all_s8 = true;
    for (int32_t b = 0; b < k.view.buffer_count; ++b) all_s8 = all_s8 && k.view.buffer_types[b] == QLSTM_ELEMENT_S8;
    const qlstm_program program = {k.ops, k.view.op_count, k.view.buffer_count, k.view.buffer_widths,
                                   static_cast<size_t>(k.sizes.state), k.view.buffer_steps, k.view.batch,
                                   k.view.layout, all_s8 ? nullptr : k.view.buffer_types};
    // The table is checked as a whole before anything runs: a crafted bundle is refused, named.
    int32_t bad_op = -1;
    const qlstm_status valid = qlstm_program_validate(&program, nullptr, k.view.time_steps, &field, &bad_op);
    if (valid != QLSTM_OK) {
      printf("qlstm_device: case %.*s: invalid program: ", (int)k.view.name_length, k.view.name);
      if (bad_op >= 0) printf("ops[%ld].", (long)bad_op);
      printf("%s: %s\n", field ? field : "?", qlstm_status_string(valid));
      rc = kExitBadInput;
      break;
    }
    const uint32_t case_mark = g_arena_used;
    Run runs[kMaxRuns];
    const size_t nruns = case_runs(k, variant_name, runs);
    if (nruns == 0) {
      printf("qlstm_device: case %.*s: variant '%s' cannot run its ops\n", (int)k.view.name_length, k.view.name,
             variant_name);
      rc = kExitBadInput;
      break;
    }
    for (size_t vi = 0; vi < nruns && rc == 0; ++vi) {
      const Run& run = runs[vi];
      g_arena_used = case_mark;
      ProgramMemory m;
      if (!alloc_program(k, &m)) {
        printf("qlstm_device: case %.*s: does not fit in this firmware's %lu-byte arena\n", (int)k.view.name_length,
               k.view.name, (unsigned long)kArenaBytes);
        rc = kExitBadInput;
        break;
      }
      qlstm::ProgramRunOptions options;
      options.variant = run.lstm;
      options.gru_variant = run.gru;
      options.fc_variant = run.fc;
      options.rnn_variant = run.rnn;
      if (mode == Mode::kBench) {
        printf("variant: %s\n", run.name);
        options.before_op = bench_before_op;
        options.after_op = bench_after_op;
      }
      const qlstm_status st = qlstm::run_program_s8(&program, &m.ctx, k.view.input, m.output, k.view.time_steps,
                                                    m.hidden, m.cell, options);
      if (st != QLSTM_OK) {
        printf("qlstm_device: case %.*s [%s]: kernel error: %s\n", (int)k.view.name_length, k.view.name,
               run.name, qlstm_status_string(st));
        rc = kExitKernelError;
        break;
      }
      char msg[96];
      if (expected && mismatch(k, m, msg, sizeof msg)) {
        ++failed;
        printf("FAIL %.*s [%s]: %s\n", (int)k.view.name_length, k.view.name, run.name, msg);
      } else {
        ++passed;
      }
      const size_t out_bytes = static_cast<size_t>(k.sizes.output_bytes), state = static_cast<size_t>(k.sizes.state);
      if (mode == Mode::kRun &&
          (fwrite(m.output, 1, out_bytes, out) != out_bytes ||
           (m.hidden != nullptr && (fwrite(m.hidden, 1, state, out) != state ||
                                    fwrite(m.cell, 2, state, out) != state)))) {
        printf("qlstm_device: cannot write %s\n", out_path);
        rc = kExitBadInput;
      }
    }
    if (mode == Mode::kBench) break;  // one call is the measurement
  }
  fclose(f);
  if (out && fclose(out) != 0 && rc == 0) rc = kExitBadInput;
  if (rc != 0) return rc;
  printf("%ld passed, %ld failed\n", passed, failed);
  return failed == 0 ? 0 : kExitMismatch;
}

// ---- variant-test: every variant built for this CPU against the reference, on random
// parameters generated here (the same three regimes as tests/support/random_lstm.h), over the
// edge sizes, both layouts, both time directions, stateless and stateful, every step or only the
// final state, a sequence or one step repeated; equal means equal.
struct Rng {
  uint64_t s;
  uint32_t next() {  // xorshift64*
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return static_cast<uint32_t>((s * 2685821657736338717ull) >> 32);
  }
  int32_t range(int32_t lo, int32_t hi) {  // inclusive
    return lo + static_cast<int32_t>(next() % static_cast<uint32_t>(hi - lo + 1));
  }
  int8_t s8() { return static_cast<int8_t>(next()); }
};

enum Regime { kTypical, kWide, kExtreme };

qlstm_requant random_requant(Rng& r, int32_t lo, int32_t hi) {
  return {static_cast<int32_t>((1u << 30) + (r.next() & 0x3FFFFFFFu)), r.range(lo, hi)};
}

// A gate's two matmuls (qlstm_gate_s8_params, qlstm_gru_gate_s8_params): random weights, biases
// (not extreme: the recurrent bias -zp_h * rowsum, as a converter folds it) and requantizations,
// in the arena. false: they do not fit.
template <class Gate>
bool random_gate_matmuls(Rng& r, int32_t I, int32_t H, int32_t output_zero_point, bool extreme, Gate* gp) {
  int8_t* wx = static_cast<int8_t*>(arena_take(static_cast<uint32_t>(H * I)));
  int8_t* wh = static_cast<int8_t*>(arena_take(static_cast<uint32_t>(H * H)));
  int32_t* bx = static_cast<int32_t*>(arena_take(static_cast<uint32_t>(H) * 4u));
  int32_t* bh = static_cast<int32_t*>(arena_take(static_cast<uint32_t>(H) * 4u));
  if (!wx || !wh || !bx || !bh) return false;
  for (int32_t j = 0; j < H * I; ++j) wx[j] = r.s8();
  for (int32_t j = 0; j < H * H; ++j) wh[j] = r.s8();
  for (int32_t j = 0; j < H; ++j) {
    bx[j] = extreme ? static_cast<int32_t>(r.next()) : r.range(-20000, 20000);
    int32_t rowsum = 0;
    for (int32_t c = 0; c < H; ++c) rowsum += wh[j * H + c];
    bh[j] = extreme ? static_cast<int32_t>(r.next()) : -output_zero_point * rowsum;
  }
  gp->input_to_q3_12 = extreme ? random_requant(r, -31, 31) : random_requant(r, -12, -5);
  gp->hidden_to_q3_12 = extreme ? random_requant(r, -31, 31) : random_requant(r, -12, -5);
  gp->input_weights = wx;
  gp->hidden_weights = wh;
  gp->input_effective_bias = bx;
  gp->hidden_effective_bias = bh;
  return true;
}

// Random parameters and input for dims, in the arena. false: it does not fit.
bool make_random_case(Rng& r, const qlstm_lstm_dims& d, bool time_major, Regime regime, Case* k) {
  memset(k, 0, sizeof *k);
  qlstm_lstm_s8_params& p = k->params;
  p.dims = d;
  p.layout = time_major ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
  const int32_t B = d.batch, T = d.time_steps, I = d.input_size, H = d.hidden_size;
  const bool extreme = regime == kExtreme;
  p.output_zero_point = r.s8();
  for (int g = 0; g < QLSTM_GATE_COUNT; ++g) {
    qlstm_gate_s8_params& gp = p.gates[g];
    if (!random_gate_matmuls(r, I, H, p.output_zero_point, extreme, &gp)) return false;
    gp.activation = g == QLSTM_GATE_CELL && r.range(0, 9) != 0 ? QLSTM_ACTIVATION_TANH : QLSTM_ACTIVATION_SIGMOID;
  }
  p.cell_scale_power = r.range(-16, -8);
  if (regime == kTypical) {
    p.forget_times_cell_to_cell = {1 << 30, -14};
    p.input_times_cell_gate_to_cell = {1 << 30, -29 - p.cell_scale_power};
    p.cell_clip = r.range(0, 1) ? 0 : 32767;
  } else {
    p.forget_times_cell_to_cell = random_requant(r, -20, extreme ? 10 : -10);
    p.input_times_cell_gate_to_cell = random_requant(r, -20, extreme ? 10 : -10);
    p.cell_clip = r.range(-5, 32767);
    if (extreme && r.range(0, 9) < 3) p.cell_scale_power = r.range(QLSTM_CELL_SCALE_POWER_MIN, QLSTM_CELL_SCALE_POWER_MAX);
  }
  p.output_times_tanh_cell_to_hidden = extreme ? random_requant(r, -31, 31) : random_requant(r, -24, -14);
  int8_t* x = static_cast<int8_t*>(arena_take(static_cast<uint32_t>(B * T * I)));
  int8_t* h0 = static_cast<int8_t*>(arena_take(static_cast<uint32_t>(B * H)));
  int16_t* c0 = static_cast<int16_t*>(arena_take(static_cast<uint32_t>(B * H) * 2u));
  if (!x || !h0 || !c0) return false;
  for (int32_t j = 0; j < B * T * I; ++j) x[j] = r.s8();
  for (int32_t j = 0; j < B * H; ++j) {
    h0[j] = r.s8();
    c0[j] = static_cast<int16_t>(r.next());
  }
  k->input = x;
  k->h0 = h0;
  k->c0 = c0;
  k->stateful = r.range(0, 1) != 0;
  return true;
}

// The sigmoid gates as HardSigmoid gates with random lines (docs/arithmetic.md §3.1): typical,
// near Keras' (slope 1.6, offset 0.5 in Q0.15); otherwise any shift and offset.
void make_hard_sigmoid_gates(Rng& r, Regime regime, qlstm_lstm_s8_params* p) {
  for (qlstm_gate_s8_params& gp : p->gates) {
    if (gp.activation != QLSTM_ACTIVATION_SIGMOID) continue;
    gp.activation = QLSTM_ACTIVATION_HARD_SIGMOID;
    constexpr int32_t kKerasOffset = 16384;
    gp.hard_sigmoid.slope = regime == kTypical ? random_requant(r, -1, 3) : random_requant(r, QLSTM_SHIFT_MIN, QLSTM_SHIFT_MAX);
    gp.hard_sigmoid.offset_q0_15 = regime == kTypical ? kKerasOffset + r.range(-2048, 2048) : static_cast<int32_t>(r.next());
  }
}

// A [B][T][I] (or [T][B][I]) input as T copies of its first step (the sequence a repeated input
// stands for), in *input, and that step of each batch row, [B][I], in *one_step. false: it does
// not fit.
bool repeat_first_step(int32_t B, int32_t T, int32_t I, bool time_major, const int8_t** input,
                       const int8_t** one_step) {
  int8_t* one = static_cast<int8_t*>(arena_take(static_cast<uint32_t>(B * I)));
  int8_t* copies = static_cast<int8_t*>(arena_take(static_cast<uint32_t>(B * T * I)));
  if (!one || (T > 0 && !copies)) return false;
  for (int32_t b = 0; b < B; ++b) memcpy(one + b * I, *input + (time_major ? b * I : b * T * I), static_cast<size_t>(I));
  for (int32_t t = 0; t < T; ++t) {
    for (int32_t b = 0; b < B; ++b) {
      memcpy(copies + (time_major ? (t * B + b) * I : (b * T + t) * I), one + b * I, static_cast<size_t>(I));
    }
  }
  *input = copies;
  *one_step = one;
  return true;
}
bool repeat_first_step(Case* k, const int8_t** one_step) {
  const qlstm_lstm_dims& d = k->params.dims;
  return repeat_first_step(d.batch, d.time_steps, d.input_size, k->params.layout == QLSTM_LAYOUT_TIME_MAJOR, &k->input,
                           one_step);
}

int variant_test(int32_t cases) {
  static const int32_t kEdge[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65};
  constexpr int32_t kLongRow = 257;
  constexpr int32_t kEdgeCount = sizeof kEdge / sizeof kEdge[0];
  size_t nvar = 0;
  const qlstm::LstmS8Variant* const* all = qlstm::lstm_s8_variants(&nvar);
  const qlstm::LstmS8Variant& ref = qlstm::lstm_s8_reference_variant();
  Rng r{0x9E3779B97F4A7C15ull};
  long runs = 0, mismatches = 0, declined = 0;
  for (int32_t n = 0; n < cases; ++n) {
    g_arena_used = 0;
    qlstm_lstm_dims d = {r.range(1, 3), r.range(1, 4), kEdge[r.range(0, kEdgeCount - 1)],
                         kEdge[r.range(0, kEdgeCount - 1)]};
    // Every 50th case has a long input row: more than 256 columns (past the DSP variant's
    // expanded operand, its byte-wise dot products, and 256-column rows) or one that ends in each
    // kind of part block after whole 64-column ones (the Helium rows4 holds v 64 columns at a
    // time: a last block of 1 to 3 whole vectors and a part one, or of whole vectors alone).
    // Every 200th has more than 256 hidden units.
    static const int32_t kLongInput[] = {kLongRow, kLongRow + 43, 84, 96, 127, 128, 161};
    constexpr int32_t kLongInputCount = sizeof kLongInput / sizeof kLongInput[0];
    if (n % 50 == 49) d.input_size = kLongInput[(n / 50) % kLongInputCount];
    if (n % 200 == 99) d.hidden_size = kLongRow;
    Case k;
    if (!make_random_case(r, d, r.range(0, 1) != 0, static_cast<Regime>(n % 3), &k)) return kExitBadInput;
    // A seventh have HardSigmoid gates.
    const bool hard_sigmoid = n % 7 == 6;
    if (hard_sigmoid) make_hard_sigmoid_gates(r, static_cast<Regime>(n % 3), &k.params);
    // A quarter of the cases walk time backwards (ONNX direction "reverse").
    const bool reverse = n % 4 == 3;
    k.params.time_direction = reverse ? QLSTM_TIME_REVERSE : QLSTM_TIME_FORWARD;
    // A fifth write only the final state (time stride 0 in the shared driver), a fifth run the
    // first step alone (QLSTM_OUTPUT_FIRST).
    const bool final_only = n % 5 == 2, first_only = n % 5 == 4;
    k.params.output_steps = final_only ? QLSTM_OUTPUT_FINAL : first_only ? QLSTM_OUTPUT_FIRST : QLSTM_OUTPUT_ALL_STEPS;
    const uint32_t mark = g_arena_used;
    // Every sixth reads its first step repeated (input_repeated): the reference's run on the
    // sequence of T copies of it is the expectation; every variant, the reference too, then runs
    // on the one step.
    const bool repeated = n % 6 == 1;
    const int8_t* one_step = nullptr;
    if (repeated && !repeat_first_step(&k, &one_step)) return kExitBadInput;
    Outputs want;
    void* scratch = nullptr;
    uint32_t scratch_bytes = 0;
    if (!alloc_outputs(k, &want, &scratch, &scratch_bytes)) return kExitBadInput;
    if (!k.stateful) memset(want.cell, 0x5A, want.state_count * 2u);  // a stateless call must clear it
    qlstm_lstm_s8_context ctx{scratch, scratch_bytes, want.cell, want.hidden};
    const qlstm_status want_st = qlstm::run_lstm_s8(ref, &k.params, &ctx, k.input, want.output);
    if (repeated) {
      k.input = one_step;
      k.params.input_repeated = 1;
    }
    const uint32_t after_ref = g_arena_used;
    for (size_t v = 0; v < nvar; ++v) {
      if (all[v] == &ref && !repeated) continue;
      // A variant with both a whole call of its own and stages runs twice: that call, then its
      // stages by the shared walk.
      qlstm::LstmS8Variant staged = *all[v];
      staged.sequence = nullptr;
      const qlstm::LstmS8Variant* const forms[] = {all[v], &staged};
      const int nforms = all[v]->sequence != nullptr && all[v]->gate != nullptr ? 2 : 1;
      for (int f = 0; f < nforms; ++f) {
        const qlstm::LstmS8Variant& var = *forms[f];
        const char* const form = f == 0 ? "" : " (stages)";
        g_arena_used = after_ref;
        Outputs got;
        if (!alloc_outputs(k, &got, &scratch, &scratch_bytes)) return kExitBadInput;
        if (!k.stateful) memset(got.cell, 0xA5, got.state_count * 2u);
        qlstm_lstm_s8_context c2{scratch, scratch_bytes, got.cell, got.hidden};
        const qlstm_status st = qlstm::run_lstm_s8(var, &k.params, &c2, k.input, got.output);
        if (var.can_run != nullptr && !var.can_run(k.params)) {
          // Declined (e.g. the CMSIS-NN backend given a reverse call): it must say so.
          ++declined;
          if (st == QLSTM_ERROR_NO_VARIANT) continue;
          ++mismatches;
          printf("FAIL variant %s%s, case %ld: declined the call but returned %s\n", var.name, form, (long)n,
                 qlstm_status_string(st));
          continue;
        }
        ++runs;
        bool same = st == want_st && memcmp(got.output, want.output, want.output_bytes) == 0 &&
                    memcmp(got.cell, want.cell, want.state_count * 2u) == 0 &&
                    (!k.stateful || memcmp(got.hidden, want.hidden, want.state_count) == 0);
        if (!same) {
          ++mismatches;
          printf("FAIL variant %s%s, case %ld: B=%ld T=%ld I=%ld H=%ld %s %s %s%s%s%s regime %ld\n", var.name, form,
                 (long)n, (long)d.batch, (long)d.time_steps, (long)d.input_size, (long)d.hidden_size,
                 k.params.layout == QLSTM_LAYOUT_TIME_MAJOR ? "time-major" : "batch-major",
                 k.stateful ? "stateful" : "stateless", reverse ? "reverse" : "forward",
                 final_only ? " final-state" : first_only ? " first-step" : "", hard_sigmoid ? " HardSigmoid" : "",
                 repeated ? " repeated-input" : "", (long)(n % 3));
        }
      }
    }
    (void)mark;
  }
  if (declined > 0) printf("variant-test: %ld calls declined by a variant (can_run), each with QLSTM_ERROR_NO_VARIANT\n", declined);
  printf("variant-test: %ld cases, %ld variant runs against the reference, %ld mismatches\n", (long)cases, runs,
         mismatches);
  return mismatches == 0 ? 0 : kExitMismatch;
}

// The GRU variants the same way (tests/support/random_gru.h's regimes): every input and hidden
// size from 1 to 33 and larger ones, 1 to 5 batch rows, both layouts, both directions, every step
// or only the final state, dense or wider output rows, stateless and stateful; the output buffer
// (with the positions the call does not write) and the final state equal the reference's.
constexpr qlstm_requant kQ0_15ProductRequant = {1 << 30, -14};  // a Q0.15 product back to the other format

struct GruCase {
  qlstm_gru_s8_params params;
  const int8_t* input;
  const int16_t* h0;  // nullptr: stateless
};

bool make_random_gru(Rng& r, const qlstm_gru_dims& d, Regime regime, GruCase* k) {
  memset(k, 0, sizeof *k);
  qlstm_gru_s8_params& p = k->params;
  p.dims = d;
  p.layout = r.range(0, 1) != 0 ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
  const int32_t B = d.batch, T = d.time_steps, I = d.input_size, H = d.hidden_size;
  const bool extreme = regime == kExtreme;
  p.output_zero_point = r.s8();
  for (int g = 0; g < QLSTM_GRU_GATE_COUNT; ++g) {
    if (!random_gate_matmuls(r, I, H, p.output_zero_point, extreme, &p.gates[g])) return false;
  }
  // b_hn on the recurrent side of n (multiplied by r), and a zero state's accumulator of n
  // (extreme: any; otherwise b_hn, consistent with the recurrent side).
  int32_t* zero_state_bias = static_cast<int32_t*>(arena_take(static_cast<uint32_t>(H) * 4u));
  if (!zero_state_bias) return false;
  int32_t* bh = const_cast<int32_t*>(p.gates[QLSTM_GRU_GATE_NEW].hidden_effective_bias);
  for (int32_t j = 0; j < H; ++j) {
    if (extreme) {
      zero_state_bias[j] = static_cast<int32_t>(r.next());
    } else {
      zero_state_bias[j] = r.range(-20000, 20000);
      bh[j] += zero_state_bias[j];
    }
  }
  p.new_gate_zero_state_bias = zero_state_bias;
  if (regime == kTypical) {
    p.reset_times_hidden_to_q3_12 = kQ0_15ProductRequant;
    p.update_times_difference_to_q0_15 = kQ0_15ProductRequant;
    p.hidden_q0_15_to_output = random_requant(r, -9, -6);
  } else {
    p.reset_times_hidden_to_q3_12 = random_requant(r, extreme ? -31 : -16, extreme ? 31 : -12);
    p.update_times_difference_to_q0_15 = random_requant(r, extreme ? -31 : -16, extreme ? 31 : -12);
    p.hidden_q0_15_to_output = extreme ? random_requant(r, -31, 31) : random_requant(r, -12, -4);
  }
  int8_t* x = static_cast<int8_t*>(arena_take(static_cast<uint32_t>(B * T * I)));
  int16_t* h0 = static_cast<int16_t*>(arena_take(static_cast<uint32_t>(B * H) * 2u));
  if (!x || !h0) return false;
  for (int32_t j = 0; j < B * T * I; ++j) x[j] = r.s8();
  for (int32_t j = 0; j < B * H; ++j) h0[j] = static_cast<int16_t>(r.next());
  k->input = x;
  k->h0 = r.range(0, 1) != 0 ? h0 : nullptr;
  return true;
}

// One GRU call into fresh arena memory: the output (filled with kGruUntouched first) and the
// final state. false: it does not fit.
constexpr int8_t kGruUntouched = 0x5A;
struct GruRun {
  qlstm_status status;
  int8_t* output;
  int16_t* state;
};
bool run_gru(const qlstm::GruS8Variant& v, const GruCase& k, uint32_t output_bytes, GruRun* run) {
  const qlstm_gru_dims& d = k.params.dims;
  const uint32_t state_bytes = static_cast<uint32_t>(d.batch * d.hidden_size) * 2u;
  const uint32_t scratch_bytes = static_cast<uint32_t>(qlstm_gru_s8_call_scratch_bytes(&k.params));
  void* scratch = arena_take(scratch_bytes);
  run->output = static_cast<int8_t*>(arena_take(output_bytes));
  run->state = static_cast<int16_t*>(arena_take(state_bytes));
  if (!scratch || !run->output || !run->state) return false;
  memset(run->output, kGruUntouched, output_bytes);
  if (k.h0 != nullptr) memcpy(run->state, k.h0, state_bytes);
  qlstm_gru_s8_context ctx{scratch, scratch_bytes, k.h0 != nullptr ? run->state : nullptr};
  run->status = qlstm::run_gru_s8(v, &k.params, &ctx, k.input, run->output);
  return true;
}

// Returns the mismatches (-1: a case does not fit the arena), after a FAIL line for each and the
// summary.
long gru_variant_test(int32_t cases) {
  static const int32_t kLarge[] = {63, 64, 65, 127, 128, 129};
  constexpr int32_t kSmallMax = 33;
  constexpr int32_t kLargeCount = sizeof kLarge / sizeof kLarge[0];
  size_t nvar = 0;
  const qlstm::GruS8Variant* const* all = qlstm::gru_s8_variants(&nvar);
  const qlstm::GruS8Variant& ref = qlstm::kGruS8ReferenceVariant;
  Rng r{0xA0761D6478BD642Full};
  const auto size = [&r]() { return r.range(0, 3) == 0 ? kLarge[r.range(0, kLargeCount - 1)] : r.range(1, kSmallMax); };
  long runs = 0, mismatches = 0, declined = 0;
  for (int32_t n = 0; n < cases; ++n) {
    g_arena_used = 0;
    // Every size from 1 to 33 in turn for I (even cases) or H (odd cases), the other random.
    const int32_t swept = 1 + (n / 2) % kSmallMax;
    const qlstm_gru_dims d = {r.range(1, 5), r.range(0, 4), n % 2 == 0 ? swept : size(), n % 2 == 1 ? swept : size()};
    GruCase k;
    if (!make_random_gru(r, d, static_cast<Regime>(n % 3), &k)) return -1;
    qlstm_gru_s8_params& p = k.params;
    const bool reverse = n % 4 == 3, final_only = n % 5 == 2, first_only = n % 5 == 4;
    p.time_direction = reverse ? QLSTM_TIME_REVERSE : QLSTM_TIME_FORWARD;
    p.output_steps = final_only ? QLSTM_OUTPUT_FINAL : first_only ? QLSTM_OUTPUT_FIRST : QLSTM_OUTPUT_ALL_STEPS;
    p.output_width = n % 7 == 1 ? d.hidden_size + r.range(1, 7) : 0;
    const int32_t W = p.output_width > 0 ? p.output_width : d.hidden_size;
    const uint32_t output_bytes = static_cast<uint32_t>(d.batch * (final_only || first_only ? 1 : d.time_steps) * W);
    const uint32_t state_bytes = static_cast<uint32_t>(d.batch * d.hidden_size) * 2u;
    // Every sixth reads its first step repeated (input_repeated): the reference's run on T copies
    // of it is the expectation, every variant (the reference too) then runs on the one step.
    const bool repeated = n % 6 == 1;
    const int8_t* one_step = nullptr;
    if (repeated && !repeat_first_step(d.batch, d.time_steps, d.input_size, p.layout == QLSTM_LAYOUT_TIME_MAJOR,
                                       &k.input, &one_step)) {
      return -1;
    }
    GruRun want;
    if (!run_gru(ref, k, output_bytes, &want)) return -1;
    if (repeated) {
      k.input = one_step;
      p.input_repeated = 1;
    }
    const uint32_t after_ref = g_arena_used;
    for (size_t v = 0; v < nvar; ++v) {
      if (all[v] == &ref && !repeated) continue;
      // A variant with a whole call of its own runs twice: that call, then its stages by the
      // shared walk (which run on their own nowhere else on the device).
      qlstm::GruS8Variant staged = *all[v];
      staged.sequence = nullptr;
      const qlstm::GruS8Variant* const forms[] = {all[v], &staged};
      const int nforms = all[v]->sequence != nullptr ? 2 : 1;
      for (int f = 0; f < nforms; ++f) {
        const qlstm::GruS8Variant& var = *forms[f];
        const char* const form = f == 0 ? "" : " (stages)";
        g_arena_used = after_ref;
        GruRun got;
        if (!run_gru(var, k, output_bytes, &got)) return -1;
        if (var.can_run != nullptr && !var.can_run(p)) {
          ++declined;
          if (got.status == QLSTM_ERROR_NO_VARIANT) continue;
          ++mismatches;
          printf("FAIL GRU variant %s%s, case %ld: declined the call but returned %s\n", var.name, form, (long)n,
                 qlstm_status_string(got.status));
          continue;
        }
        ++runs;
        const bool same = got.status == QLSTM_OK && want.status == QLSTM_OK &&
                          memcmp(got.output, want.output, output_bytes) == 0 &&
                          (k.h0 == nullptr || memcmp(got.state, want.state, state_bytes) == 0);
        if (!same) {
          ++mismatches;
          printf("FAIL GRU variant %s%s, case %ld: B=%ld T=%ld I=%ld H=%ld W=%ld %s %s %s%s%s regime %ld (status %s)\n",
                 var.name, form, (long)n, (long)d.batch, (long)d.time_steps, (long)d.input_size,
                 (long)d.hidden_size, (long)W, p.layout == QLSTM_LAYOUT_TIME_MAJOR ? "time-major" : "batch-major",
                 k.h0 != nullptr ? "stateful" : "stateless", reverse ? "reverse" : "forward",
                 final_only ? " final-state" : first_only ? " first-step" : "", repeated ? " repeated-input" : "",
                 (long)(n % 3), qlstm_status_string(got.status));
        }
      }
    }
  }
  if (declined > 0) printf("variant-test: gru: %ld calls declined by a variant (can_run), each with QLSTM_ERROR_NO_VARIANT\n", declined);
  printf("variant-test: gru: %ld cases, %ld variant runs against the reference, %ld mismatches\n", (long)cases, runs,
         mismatches);
  return mismatches;
}

// The fully connected variants the same way: every one built for this CPU against the
// reference, over the edge sizes of I and O, 0, 1 and 3 rows, one multiplier or one per output,
// typical and extreme values (weights, inputs and zero points at the int8 ends, biases over all
// of int32, shifts over [QLSTM_SHIFT_MIN, QLSTM_SHIFT_MAX]) and clamps (none, ReLU, narrow).
bool make_random_fc(Rng& r, int32_t rows, int32_t I, int32_t O, bool per_channel, bool extreme,
                    qlstm_fc_s8_params* p, const int8_t** input) {
  const auto value = [&r, extreme]() -> int8_t {
    if (extreme && r.range(0, 1) == 0) return r.range(0, 1) ? int8_t{127} : int8_t{-128};
    return r.s8();
  };
  const int32_t requants = per_channel ? O : 1;
  int8_t* w = static_cast<int8_t*>(arena_take(static_cast<uint32_t>(O * I)));
  int32_t* bias = static_cast<int32_t*>(arena_take(static_cast<uint32_t>(O) * 4u));
  int32_t* mult = static_cast<int32_t*>(arena_take(static_cast<uint32_t>(requants) * 4u));
  int32_t* shift = static_cast<int32_t*>(arena_take(static_cast<uint32_t>(requants) * 4u));
  int8_t* x = static_cast<int8_t*>(arena_take(static_cast<uint32_t>(rows * I) + 1u));
  if (!w || !bias || !mult || !shift || !x) return false;
  for (int32_t j = 0; j < O * I; ++j) w[j] = value();
  for (int32_t j = 0; j < O; ++j) bias[j] = extreme ? static_cast<int32_t>(r.next()) : r.range(-20000, 20000);
  for (int32_t j = 0; j < requants; ++j) {
    mult[j] = extreme && r.range(0, 3) == 0 ? (r.range(0, 1) ? INT32_MAX : 0) : random_requant(r, 0, 0).multiplier;
    shift[j] = extreme ? r.range(QLSTM_SHIFT_MIN, QLSTM_SHIFT_MAX) : r.range(-12, 2);
  }
  for (int32_t j = 0; j < rows * I + 1; ++j) x[j] = value();
  memset(p, 0, sizeof *p);
  p->rows = rows;
  p->input_size = I;
  p->output_size = O;
  p->per_channel = per_channel ? 1 : 0;
  p->multipliers = mult;
  p->shifts = shift;
  p->weights = w;
  p->effective_bias = bias;
  p->output_zero_point = extreme ? (r.range(0, 1) ? 127 : -128) : r.range(-128, 127);
  const int32_t clamp = r.range(0, 2);
  p->activation_min = clamp == 0 ? -128 : clamp == 1 ? p->output_zero_point : r.range(-128, 127);
  p->activation_max = clamp == 2 ? r.range(p->activation_min, p->activation_min + 20 < 127 ? p->activation_min + 20 : 127)
                                 : 127;
  *input = x + 1;  // unaligned rows
  return true;
}

// Returns the mismatches, after printing a FAIL line for each and the summary.
long fc_variant_test() {
  static const int32_t kSizes[] = {1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 33, 64, 127};
  static const int32_t kRows[] = {0, 1, 3};
  constexpr uint32_t kGuardBytes = 8;
  constexpr uint8_t kGuard = 0x5A;
  size_t nvar = 0;
  const qlstm::FcS8Variant* const* all = qlstm::fc_s8_variants(&nvar);
  Rng r{0xD1B54A32D192ED03ull};
  long cases = 0, runs = 0, mismatches = 0, declined = 0;
  for (int32_t I : kSizes) {
    for (int32_t O : kSizes) {
      for (int32_t rows : kRows) {
        for (int32_t quant = 0; quant < 4; ++quant) {  // per-tensor / per-channel x typical / extreme
          g_arena_used = 0;
          qlstm_fc_s8_params p;
          const int8_t* x = nullptr;
          if (!make_random_fc(r, rows, I, O, quant % 2 == 1, quant >= 2, &p, &x)) {
            printf("FAIL FC case I=%ld O=%ld does not fit the arena\n", (long)I, (long)O);
            return 1;
          }
          ++cases;
          const uint32_t out_bytes = static_cast<uint32_t>(rows * O) + kGuardBytes;
          int8_t* want = static_cast<int8_t*>(arena_take(out_bytes));
          int8_t* got = static_cast<int8_t*>(arena_take(out_bytes));
          if (!want || !got) {
            printf("FAIL FC case I=%ld O=%ld does not fit the arena\n", (long)I, (long)O);
            return 1;
          }
          memset(want, kGuard, out_bytes);
          const qlstm_status want_st = qlstm::run_fc_s8(qlstm::kFcS8ReferenceVariant, &p, x, want);
          for (size_t v = 0; v < nvar; ++v) {
            if (all[v] == &qlstm::kFcS8ReferenceVariant) continue;
            memset(got, kGuard, out_bytes);
            const qlstm_status st = qlstm::run_fc_s8(*all[v], &p, x, got);
            if (all[v]->can_run != nullptr && !all[v]->can_run(p)) {
              ++declined;
              if (st == QLSTM_ERROR_NO_VARIANT) continue;
              ++mismatches;
              printf("FAIL FC variant %s: declined the call but returned %s\n", all[v]->name, qlstm_status_string(st));
              continue;
            }
            ++runs;
            if (st != QLSTM_OK || want_st != QLSTM_OK || memcmp(got, want, out_bytes) != 0) {
              ++mismatches;
              printf("FAIL FC variant %s: rows=%ld I=%ld O=%ld %s %s (status %s)\n", all[v]->name, (long)rows, (long)I,
                     (long)O, quant % 2 ? "per-channel" : "per-tensor", quant >= 2 ? "extreme" : "typical",
                     qlstm_status_string(st));
            }
          }
        }
      }
    }
  }
  if (declined > 0) printf("variant-test: fc: %ld calls declined by a variant (can_run), each with QLSTM_ERROR_NO_VARIANT\n", declined);
  printf("variant-test: fc: %ld cases, %ld variant runs against the reference, %ld mismatches\n", cases, runs,
         mismatches);
  return mismatches;
}

// ---- The pooling variants (pool_s8_variants) the same way: images of every channel count at the
// block widths and their neighbours with random windows, strides, padding and clamps, and
// sequences pooled over up to 600 steps (past the 16-bit sums' 256 positions), all -128 included.
bool pool_case(Rng& r, int32_t n, const qlstm_pool_s8_params& p, uint32_t* mismatches, long* runs) {
  constexpr uint32_t kGuardBytes = 8;
  constexpr uint8_t kGuard = 0x5A;
  g_arena_used = 0;
  const uint32_t in_bytes = static_cast<uint32_t>(p.batch * p.input_height * p.input_width * p.channels) + 1;
  const uint32_t out_bytes = static_cast<uint32_t>(p.batch * p.output_height * p.output_width * p.channels) + kGuardBytes;
  int8_t* x = static_cast<int8_t*>(arena_take(in_bytes));
  int8_t* want = static_cast<int8_t*>(arena_take(out_bytes));
  int8_t* got = static_cast<int8_t*>(arena_take(out_bytes));
  if (!x || !want || !got) return false;
  for (uint32_t k = 0; k < in_bytes; ++k) x[k] = n == 1 ? int8_t{-128} : r.s8();
  memset(want, kGuard, out_bytes);
  const qlstm_status want_st = qlstm::run_pool_s8(qlstm::kPoolS8ReferenceVariant, &p, x + 1, want);
  size_t nvar = 0;
  const qlstm::PoolS8Variant* const* all = qlstm::pool_s8_variants(&nvar);
  for (size_t v = 0; v < nvar; ++v) {
    if (all[v] == &qlstm::kPoolS8ReferenceVariant) continue;
    memset(got, kGuard, out_bytes);
    const qlstm_status st = qlstm::run_pool_s8(*all[v], &p, x + 1, got);  // unaligned input
    ++*runs;
    if (st != QLSTM_OK || want_st != QLSTM_OK || memcmp(got, want, out_bytes) != 0) {
      ++*mismatches;
      printf("FAIL pool variant %s: %s in %ldx%ldx%ld window %ldx%ld (status %s)\n", all[v]->name,
             p.kind == QLSTM_POOL_MAX ? "max" : "average", (long)p.input_height, (long)p.input_width,
             (long)p.channels, (long)p.window_height, (long)p.window_width, qlstm_status_string(st));
    }
  }
  return true;
}

long pool_variant_test() {
  static const int32_t kChannels[] = {1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 65};
  static const int32_t kSteps[] = {1, 2, 3, 5, 7, 100, 127, 128, 129, 200, 254, 255, 256, 257, 600};
  Rng r{0x9E3779B97F4A7C15ull};
  long cases = 0, runs = 0;
  uint32_t mismatches = 0;
  for (int32_t C : kChannels) {
    for (int32_t kind = 0; kind < 2; ++kind) {
      qlstm_pool_s8_params p{};
      p.kind = kind;
      p.batch = r.range(1, 2);
      p.channels = C;
      p.input_height = r.range(1, 6);
      p.input_width = r.range(1, 6);
      p.window_height = r.range(1, 4);
      p.window_width = r.range(1, 4);
      p.stride_height = r.range(1, 3);
      p.stride_width = r.range(1, 3);
      p.padding_height = r.range(0, p.window_height - 1);
      p.padding_width = r.range(0, p.window_width - 1);
      p.output_height = (p.input_height - 1 + p.padding_height) / p.stride_height + 1;
      p.output_width = (p.input_width - 1 + p.padding_width) / p.stride_width + 1;
      p.activation_min = r.range(0, 2) == 0 ? r.range(-128, 0) : -128;
      p.activation_max = 127;
      for (int32_t values = 0; values < 2; ++values) {
        if (!pool_case(r, values, p, &mismatches, &runs)) return -1;
        ++cases;
      }
      for (int32_t T : kSteps) {
        qlstm_pool_s8_params t{};
        t.kind = kind;
        t.batch = 2;
        t.channels = C;
        t.input_height = t.window_height = T;
        t.input_width = t.window_width = t.stride_height = t.stride_width = t.output_height = t.output_width = 1;
        t.activation_min = -128;
        t.activation_max = 127;
        for (int32_t values = 0; values < 2; ++values) {
          if (!pool_case(r, values, t, &mismatches, &runs)) return -1;
          ++cases;
        }
      }
    }
  }
  printf("variant-test: pool: %ld cases, %ld variant runs against the reference, %ld mismatches\n", cases, runs,
         (long)mismatches);
  return mismatches;
}

// ---- The elementwise add and multiply variants (add_s8_variants, mul_s8_variants) the same way:
// parameters as TFLite prepares them (the add's larger-scale operand at multiplier 2^30, either
// operand; both at times; the output's shift where a calibrated sum puts it), which every variant
// must run, and raw random ones, which a variant may decline (counted); lengths at the vector
// widths and their neighbours; narrow clamps; unaligned operands; guard bytes after the output.
constexpr int32_t kOneHalfQ0_31 = 1 << 30;  // TFLite's multiplier of the add's larger-scale operand

// What the add's and the multiply's random parameters share: the zero points, at times a narrow
// clamp, and the output's requantization with its shift in [lo, hi].
template <class P>
void random_elementwise_output(Rng& r, int32_t lo, int32_t hi, P* p) {
  p->input1_zero_point = r.range(-128, 127);
  p->input2_zero_point = r.range(-128, 127);
  p->output_zero_point = r.range(-128, 127);
  p->activation_min = r.range(0, 3) == 0 ? r.range(-128, 0) : -128;
  p->activation_max = r.range(0, 3) == 0 ? r.range(p->activation_min, 127) : 127;
  const qlstm_requant o = random_requant(r, lo, hi);
  p->output_multiplier = o.multiplier;
  p->output_shift = o.shift;
}

// The add's forms: raw random fields, or TFLite's preparation with the operands' scales equal or
// not (drawn at random, or fixed for elementwise-bench).
enum class AddScales { kRaw, kTfliteEither, kTfliteDistinct, kTfliteEqual };

void random_add_params(Rng& r, AddScales form, qlstm_add_s8_params* p) {
  *p = qlstm_add_s8_params{};
  if (form == AddScales::kRaw) {
    random_elementwise_output(r, -31, 2, p);
    p->left_shift = r.range(0, QLSTM_ADD_S8_LEFT_SHIFT_MAX);
    const qlstm_requant a = random_requant(r, -31, 1), b = random_requant(r, -31, 1);
    p->input1_multiplier = r.range(0, 1) ? kOneHalfQ0_31 : a.multiplier;
    p->input1_shift = a.shift;
    p->input2_multiplier = r.range(0, 1) ? kOneHalfQ0_31 : b.multiplier;
    p->input2_shift = b.shift;
    return;
  }
  random_elementwise_output(r, -21, -17, p);
  constexpr int32_t kTfliteLeftShift = 20;
  p->left_shift = kTfliteLeftShift;
  const bool same_scale = form == AddScales::kTfliteEither ? r.range(0, 3) == 0 : form == AddScales::kTfliteEqual;
  const qlstm_requant other = same_scale ? qlstm_requant{kOneHalfQ0_31, 0} : random_requant(r, -12, -1);
  const bool first_larger = r.range(0, 1) == 0;
  p->input1_multiplier = first_larger ? kOneHalfQ0_31 : other.multiplier;
  p->input1_shift = first_larger ? 0 : other.shift;
  p->input2_multiplier = first_larger ? other.multiplier : kOneHalfQ0_31;
  p->input2_shift = first_larger ? other.shift : 0;
}

void random_mul_params(Rng& r, bool tflite, qlstm_mul_s8_params* p) {
  *p = qlstm_mul_s8_params{};
  if (tflite) {
    random_elementwise_output(r, -12, 4, p);
  } else {
    random_elementwise_output(r, -31, 16, p);
  }
}

// One case: each variant but the reference against the reference (a decline counted, a failure
// where TFLite's parameters are declined).
template <class P, class Variant>
bool elementwise_case(Rng& r, const char* kind, const P& p, const Variant* const* all, size_t nvar,
                      const Variant& reference,
                      qlstm_status (*run)(const Variant&, const P*, const int8_t*, const int8_t*, int8_t*),
                      bool tflite, uint32_t* mismatches, long* runs, long* declined) {
  constexpr uint32_t kGuardBytes = 8;
  constexpr uint8_t kGuard = 0x5A;
  g_arena_used = 0;
  const uint32_t n = static_cast<uint32_t>(p.shape.rows * p.shape.row_size);
  int8_t* a = static_cast<int8_t*>(arena_take(n + 1));
  int8_t* b = static_cast<int8_t*>(arena_take(n + 1));
  int8_t* want = static_cast<int8_t*>(arena_take(n + kGuardBytes));
  int8_t* got = static_cast<int8_t*>(arena_take(n + kGuardBytes));
  if (!a || !b || !want || !got) return false;
  for (uint32_t k = 0; k <= n; ++k) {
    a[k] = r.s8();
    b[k] = r.s8();
  }
  memset(want, kGuard, n + kGuardBytes);
  const qlstm_status want_st = run(reference, &p, a + 1, b + 1, want);  // unaligned operands
  for (size_t v = 0; v < nvar; ++v) {
    if (all[v] == &reference) continue;
    memset(got, kGuard, n + kGuardBytes);
    const qlstm_status st = run(*all[v], &p, a + 1, b + 1, got);
    ++*runs;
    if (st == QLSTM_ERROR_NO_VARIANT && !tflite) {
      ++*declined;
      continue;
    }
    if (st != QLSTM_OK || want_st != QLSTM_OK || memcmp(got, want, n + kGuardBytes) != 0) {
      ++*mismatches;
      printf("FAIL %s variant %s: %lu values (status %s)\n", kind, all[v]->name, (unsigned long)n,
             qlstm_status_string(st));
    }
  }
  return true;
}

long elementwise_variant_test() {
  static const int32_t kLengths[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 65, 127, 128, 1000};
  Rng r{0xD1B54A32D192ED03ull};
  long cases = 0, runs = 0, declined = 0;
  uint32_t mismatches = 0;
  size_t n_add = 0, n_mul = 0;
  const qlstm::AddS8Variant* const* add = qlstm::add_s8_variants(&n_add);
  const qlstm::MulS8Variant* const* mul = qlstm::mul_s8_variants(&n_mul);
  for (int32_t n : kLengths) {
    for (int32_t rep = 0; rep < 8; ++rep) {
      const bool tflite = rep < 6;
      const int32_t row_size = rep % 2 == 0 ? n : 1;
      qlstm_add_s8_params pa;
      random_add_params(r, tflite ? AddScales::kTfliteEither : AddScales::kRaw, &pa);
      pa.shape = {n / row_size, row_size, 0, 0};
      qlstm_mul_s8_params pm;
      random_mul_params(r, tflite, &pm);
      pm.shape = pa.shape;
      if (!elementwise_case(r, "add", pa, add, n_add, qlstm::kAddS8ReferenceVariant, qlstm::run_add_s8, tflite,
                            &mismatches, &runs, &declined) ||
          !elementwise_case(r, "mul", pm, mul, n_mul, qlstm::kMulS8ReferenceVariant, qlstm::run_mul_s8, tflite,
                            &mismatches, &runs, &declined)) {
        return -1;
      }
      cases += 2;
    }
  }
  if (declined > 0) printf("variant-test: elementwise: %ld raw-parameter calls declined by a variant (can_run)\n", declined);
  printf("variant-test: elementwise: %ld cases, %ld variant runs against the reference, %ld mismatches\n", cases, runs,
         (long)mismatches);
  return mismatches;
}

// ---- The 16x8 variants (lstm_s16_variants, fc_s16_variants) the same way, each against the 16x8
// reference: edge sizes past 256 columns too (where the DSP variant's 32-bit partial sums hand over
// to int64 and its x operand is no longer expanded), typical and extreme values (int16 and int8
// ends, int64 biases over their whole range, every accepted shift), both layouts and directions,
// every step or the final state, wider output rows, stateless and stateful.
constexpr int32_t kS16Edge[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 255, 256, 257, 300};
constexpr int32_t kS16EdgeCount = sizeof kS16Edge / sizeof kS16Edge[0];

int16_t random_s16(Rng& r, bool extreme) {
  if (extreme && r.range(0, 1) == 0) return r.range(0, 1) ? int16_t{32767} : int16_t{-32768};
  return static_cast<int16_t>(r.next());
}
int8_t random_s8_value(Rng& r, bool extreme) {
  if (extreme && r.range(0, 1) == 0) return r.range(0, 1) ? int8_t{127} : int8_t{-128};
  return r.s8();
}
int64_t random_s64(Rng& r) { return static_cast<int64_t>((static_cast<uint64_t>(r.next()) << 32) | r.next()); }
qlstm_requant random_s16_gate_requant(Rng& r, bool extreme) {
  if (!extreme) return random_requant(r, -20, -8);
  qlstm_requant q = random_requant(r, QLSTM_SHIFT_MIN, QLSTM_S16_SHIFT_MAX);
  if (r.range(0, 3) == 0) q.multiplier = r.range(0, 1) ? INT32_MAX : 0;
  return q;
}

// An array of n random values in the arena (nullptr: it does not fit).
template <class T, class Make>
T* random_array(int32_t n, Make make) {
  T* a = static_cast<T*>(arena_take(static_cast<uint32_t>(n) * sizeof(T)));
  for (int32_t k = 0; a != nullptr && k < n; ++k) a[k] = make();
  return a;
}

struct S16LstmCase {
  qlstm_lstm_s16_params p;
  const int16_t* input;
  const int16_t* h0;
  const int16_t* c0;
  bool stateful;
};

// The gates (weights, biases, requantizations, activations) and the cell's parameters of p for
// its dims, in the arena: false if they do not fit.
bool random_lstm_s16_gates_and_cell(Rng& r, bool extreme, qlstm_lstm_s16_params& p) {
  const int32_t I = p.dims.input_size, H = p.dims.hidden_size;
  const auto weight = [&r, extreme] { return random_s8_value(r, extreme); };
  const auto bias = [&r, extreme] { return extreme ? random_s64(r) : static_cast<int64_t>(r.range(-2000000, 2000000)); };
  for (int g = 0; g < QLSTM_GATE_COUNT; ++g) {
    qlstm_gate_s16_params& gp = p.gates[g];
    gp.input_weights = random_array<int8_t>(H * I, weight);
    gp.hidden_weights = random_array<int8_t>(H * H, weight);
    gp.input_effective_bias = random_array<int64_t>(H, bias);
    gp.hidden_effective_bias = random_array<int64_t>(H, bias);
    if (!gp.input_weights || !gp.hidden_weights || !gp.input_effective_bias || !gp.hidden_effective_bias) return false;
    gp.input_to_q3_12 = random_s16_gate_requant(r, extreme);
    gp.hidden_to_q3_12 = random_s16_gate_requant(r, extreme);
    gp.activation = g == QLSTM_GATE_CELL && r.range(0, 9) != 0 ? QLSTM_ACTIVATION_TANH : QLSTM_ACTIVATION_SIGMOID;
  }
  p.cell_scale_power = r.range(-16, -8);
  p.forget_times_cell_to_cell = random_requant(r, -20, -10);
  p.input_times_cell_gate_to_cell = random_requant(r, -20, -10);
  p.output_times_tanh_cell_to_hidden = extreme ? random_requant(r, -31, 31) : random_requant(r, -16, -1);
  p.cell_clip = r.range(0, 1) ? 0 : r.range(1, 32767);
  return true;
}

// The input, h0 and c0 of k for its dims, in the arena: false if they do not fit.
bool random_lstm_s16_data(Rng& r, bool extreme, S16LstmCase* k) {
  const int32_t B = k->p.dims.batch, T = k->p.dims.time_steps, I = k->p.dims.input_size, H = k->p.dims.hidden_size;
  k->input = random_array<int16_t>(B * T * I, [&r, extreme] { return random_s16(r, extreme); });
  k->h0 = random_array<int16_t>(B * H, [&r, extreme] { return random_s16(r, extreme); });
  k->c0 = random_array<int16_t>(B * H, [&r] { return static_cast<int16_t>(r.next()); });
  return k->input != nullptr && k->h0 != nullptr && k->c0 != nullptr;
}

bool make_random_lstm_s16(Rng& r, int32_t n, S16LstmCase* k) {
  memset(k, 0, sizeof *k);
  const bool extreme = n % 3 == 2;
  qlstm_lstm_s16_params& p = k->p;
  const int32_t I = n % 2 == 0 ? kS16Edge[(n / 2) % kS16EdgeCount] : r.range(1, 20);
  const int32_t H = n % 2 == 1 ? kS16Edge[(n / 2) % kS16EdgeCount] : r.range(1, 20);
  const int32_t B = r.range(1, 3), T = r.range(0, 3);
  p.dims = {B, T, I, H};
  p.layout = r.range(0, 1) ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
  if (!random_lstm_s16_gates_and_cell(r, extreme, p)) return false;
  p.time_direction = n % 4 == 3 ? QLSTM_TIME_REVERSE : QLSTM_TIME_FORWARD;
  p.output_steps = n % 5 == 2 ? QLSTM_OUTPUT_FINAL : n % 5 == 4 ? QLSTM_OUTPUT_FIRST : QLSTM_OUTPUT_ALL_STEPS;
  p.output_width = n % 7 == 1 ? H + r.range(1, 5) : 0;
  if (!random_lstm_s16_data(r, extreme, k)) return false;
  k->stateful = r.range(0, 1) != 0;
  return true;
}

// One 16x8 LSTM call into fresh arena memory (output filled with 0x5A5A first, a stateless cell
// with 0x1234): false if it does not fit.
struct S16LstmRun {
  qlstm_status status;
  int16_t* output;
  int16_t* h;
  int16_t* c;
};
bool run_lstm_s16_variant(const qlstm::LstmS16Variant& v, const S16LstmCase& k, uint32_t out_count, S16LstmRun* run) {
  const qlstm_lstm_dims& d = k.p.dims;
  const uint32_t state = static_cast<uint32_t>(d.batch * d.hidden_size);
  const uint32_t scratch_bytes = static_cast<uint32_t>(qlstm_lstm_s16_scratch_bytes(&d));
  void* scratch = arena_take(scratch_bytes);
  run->output = static_cast<int16_t*>(arena_take(out_count * 2u));
  run->h = static_cast<int16_t*>(arena_take(state * 2u));
  run->c = static_cast<int16_t*>(arena_take(state * 2u));
  if (!scratch || !run->output || !run->h || !run->c) return false;
  for (uint32_t j = 0; j < out_count; ++j) run->output[j] = 0x5A5A;
  memcpy(run->h, k.h0, state * 2u);
  if (k.stateful) {
    memcpy(run->c, k.c0, state * 2u);
  } else {
    for (uint32_t j = 0; j < state; ++j) run->c[j] = 0x1234;
  }
  qlstm_lstm_s16_context ctx{scratch, scratch_bytes, run->c, k.stateful ? run->h : nullptr};
  run->status = qlstm::run_lstm_s16(v, &k.p, &ctx, k.input, run->output);
  return true;
}

// Returns the mismatches (-1: a case does not fit the arena), after a FAIL line for each and the
// two summaries.
long s16_variant_test() {
  size_t nvar = 0;
  const qlstm::LstmS16Variant* const* lstm = qlstm::lstm_s16_variants(&nvar);
  Rng r{0xC2B2AE3D27D4EB4Full};
  const int32_t lstm_cases = 2 * kS16EdgeCount * 3;
  long runs = 0, mismatches = 0, declined = 0;
  for (int32_t n = 0; n < lstm_cases; ++n) {
    g_arena_used = 0;
    S16LstmCase k;
    if (!make_random_lstm_s16(r, n, &k)) return -1;
    const qlstm_lstm_dims& d = k.p.dims;
    const int32_t W = k.p.output_width > 0 ? k.p.output_width : d.hidden_size;
    const uint32_t out_count =
        static_cast<uint32_t>(d.batch * (k.p.output_steps != QLSTM_OUTPUT_ALL_STEPS ? 1 : d.time_steps) * W);
    const uint32_t state_bytes = static_cast<uint32_t>(d.batch * d.hidden_size) * 2u;
    S16LstmRun want;
    if (!run_lstm_s16_variant(qlstm::kLstmS16ReferenceVariant, k, out_count, &want)) return -1;
    const uint32_t after_ref = g_arena_used;
    for (size_t v = 0; v < nvar; ++v) {
      if (lstm[v] == &qlstm::kLstmS16ReferenceVariant) continue;
      g_arena_used = after_ref;
      S16LstmRun got;
      if (!run_lstm_s16_variant(*lstm[v], k, out_count, &got)) return -1;
      if (lstm[v]->can_run != nullptr && !lstm[v]->can_run(k.p)) {
        // Declined (the CMSIS-NN backend given a reverse, wider-row or final-state call): it must say so.
        ++declined;
        if (got.status == QLSTM_ERROR_NO_VARIANT) continue;
        ++mismatches;
        printf("FAIL 16x8 LSTM variant %s, case %ld: declined the call but returned %s\n", lstm[v]->name, (long)n,
               qlstm_status_string(got.status));
        continue;
      }
      ++runs;
      if (got.status != QLSTM_OK || want.status != QLSTM_OK || memcmp(got.output, want.output, out_count * 2u) != 0 ||
          memcmp(got.c, want.c, state_bytes) != 0 || memcmp(got.h, want.h, state_bytes) != 0) {
        ++mismatches;
        printf("FAIL 16x8 LSTM variant %s, case %ld: B=%ld T=%ld I=%ld H=%ld W=%ld %s%s (status %s)\n", lstm[v]->name,
               (long)n, (long)d.batch, (long)d.time_steps, (long)d.input_size, (long)d.hidden_size, (long)W,
               k.stateful ? "stateful" : "stateless", n % 3 == 2 ? " extreme" : "", qlstm_status_string(got.status));
      }
    }
  }
  if (declined > 0) {
    printf("variant-test: lstm_s16: %ld calls declined by a variant (can_run), each with QLSTM_ERROR_NO_VARIANT\n",
           declined);
  }
  printf("variant-test: lstm_s16: %ld cases, %ld variant runs against the reference, %ld mismatches\n",
         (long)lstm_cases, runs, mismatches);
  const long lstm_mismatches = mismatches;

  static const int32_t kFcSizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 257, 513};
  static const int32_t kRows[] = {0, 1, 3};
  const qlstm::FcS16Variant* const* fc = qlstm::fc_s16_variants(&nvar);
  long cases = 0;
  runs = 0;
  mismatches = 0;
  for (int32_t I : kFcSizes) {
    for (int32_t O : kFcSizes) {
      for (int32_t rows : kRows) {
        g_arena_used = 0;
        const bool extreme = (I + O + rows) % 2 == 1;
        qlstm_fc_s16_params p;
        memset(&p, 0, sizeof p);
        p.rows = rows;
        p.input_size = I;
        p.output_size = O;
        const qlstm_requant q = random_s16_gate_requant(r, extreme);
        p.multiplier = q.multiplier;
        p.shift = q.shift;
        p.weights = random_array<int8_t>(I * O, [&r, extreme] { return random_s8_value(r, extreme); });
        const int64_t* bias = random_array<int64_t>(O, [&r, extreme] {
          return extreme ? random_s64(r) : static_cast<int64_t>(r.range(-2000000, 2000000));
        });
        p.bias = r.range(0, 3) == 0 ? nullptr : bias;
        p.activation_min = r.range(0, 1) ? -32768 : r.range(-32768, 0);
        p.activation_max = r.range(0, 1) ? 32767 : r.range(p.activation_min, 32767);
        // One value before the rows: inputs at odd halfword addresses.
        const int16_t* x = random_array<int16_t>(rows * I + 1, [&r, extreme] { return random_s16(r, extreme); });
        const uint32_t out_count = static_cast<uint32_t>(rows * O) + 4u;
        int16_t* want = static_cast<int16_t*>(arena_take(out_count * 2u));
        int16_t* got = static_cast<int16_t*>(arena_take(out_count * 2u));
        if (!p.weights || !bias || !x || !want || !got) return -1;
        ++cases;
        for (uint32_t j = 0; j < out_count; ++j) want[j] = 0x5A5A;
        const qlstm_status want_st = qlstm::run_fc_s16(qlstm::kFcS16ReferenceVariant, &p, x + 1, want);
        for (size_t v = 0; v < nvar; ++v) {
          if (fc[v] == &qlstm::kFcS16ReferenceVariant) continue;
          for (uint32_t j = 0; j < out_count; ++j) got[j] = 0x5A5A;
          const qlstm_status st = qlstm::run_fc_s16(*fc[v], &p, x + 1, got);
          ++runs;
          if (st != QLSTM_OK || want_st != QLSTM_OK || memcmp(got, want, out_count * 2u) != 0) {
            ++mismatches;
            printf("FAIL 16x8 FC variant %s: rows=%ld I=%ld O=%ld%s%s (status %s)\n", fc[v]->name, (long)rows, (long)I,
                   (long)O, extreme ? " extreme" : "", p.bias == nullptr ? " no bias" : "", qlstm_status_string(st));
          }
        }
      }
    }
  }
  // The largest sums: every product 2^22 or -(2^22 - 2^15), rows of 512 columns and more, whose
  // sums leave int32; each variant must keep them exact, as the reference does in int64.
  static const int32_t kLongRows[] = {511, 512, 513, 1031};
  for (int32_t I : kLongRows) {
    for (int32_t sign = 0; sign < 2; ++sign) {
      g_arena_used = 0;
      constexpr int32_t O = 6;
      qlstm_fc_s16_params p;
      memset(&p, 0, sizeof p);
      p.rows = 1;
      p.input_size = I;
      p.output_size = O;
      p.multiplier = 1 << 30;
      p.shift = -12;
      p.weights = random_array<int8_t>(I * O, [] { return int8_t{-128}; });
      p.bias = random_array<int64_t>(O, [] { return int64_t{0}; });
      p.activation_min = -32768;
      p.activation_max = 32767;
      const int16_t x_value = sign ? int16_t{32767} : int16_t{-32768};
      const int16_t* x = random_array<int16_t>(I, [x_value] { return x_value; });
      int16_t* want = static_cast<int16_t*>(arena_take(O * 2u));
      int16_t* got = static_cast<int16_t*>(arena_take(O * 2u));
      if (!p.weights || !p.bias || !x || !want || !got) return -1;
      ++cases;
      const qlstm_status want_st = qlstm::run_fc_s16(qlstm::kFcS16ReferenceVariant, &p, x, want);
      for (size_t v = 0; v < nvar; ++v) {
        if (fc[v] == &qlstm::kFcS16ReferenceVariant) continue;
        const qlstm_status st = qlstm::run_fc_s16(*fc[v], &p, x, got);
        ++runs;
        if (st != QLSTM_OK || want_st != QLSTM_OK || memcmp(got, want, O * 2u) != 0) {
          ++mismatches;
          printf("FAIL 16x8 FC variant %s: I=%ld, every product %s (status %s)\n", fc[v]->name, (long)I,
                 sign ? "-(2^22 - 2^15)" : "2^22", qlstm_status_string(st));
        }
      }
    }
  }
  printf("variant-test: fc_s16: %ld cases, %ld variant runs against the reference, %ld mismatches\n", cases, runs,
         mismatches);
  return lstm_mismatches + mismatches;
}

// fc-bench: one fully connected call of the named variant between the instruction-count markers
// (docs/performance.md, bench/fc_table.py): random typical weights, inputs and biases (the same
// for every variant), one row, checked against the reference afterwards.
constexpr uint64_t kBenchSeed = 0x2545F4914F6CDD1Dull;  // fc-bench's and lstm-s16-bench's random parameters

// The variant of that name in all[0, n) for a bench subcommand, or null after saying so.
template <class Variant>
const Variant* bench_variant(const Variant* const* all, size_t n, const char* name, const char* what) {
  const Variant* v = find_named(all, n, name);
  if (v == nullptr) printf("qlstm_device: no %s variant '%s' in this firmware\n", what, name);
  return v;
}

int fc_bench(int32_t I, int32_t O, bool per_channel, const char* variant_name) {
  size_t n = 0;
  const qlstm::FcS8Variant* const* all = qlstm::fc_s8_variants(&n);
  const qlstm::FcS8Variant* variant = bench_variant(all, n, variant_name, "FC");
  if (variant == nullptr) return kExitBadInput;
  Rng r{kBenchSeed};
  g_arena_used = 0;
  qlstm_fc_s8_params p;
  const int8_t* x = nullptr;
  constexpr bool kTypical = false;
  if (I < 1 || O < 1 || !make_random_fc(r, 1, I, O, per_channel, kTypical, &p, &x)) {
    printf("qlstm_device: fc-bench: I and O must be positive and fit this firmware's arena\n");
    return kExitBadInput;
  }
  p.activation_min = -128;  // no clamp, as a Linear layer with nothing fused
  p.activation_max = 127;
  int8_t* got = static_cast<int8_t*>(arena_take(static_cast<uint32_t>(O)));
  int8_t* want = static_cast<int8_t*>(arena_take(static_cast<uint32_t>(O)));
  if (!got || !want || qlstm_fc_s8_validate(&p, nullptr) != QLSTM_OK) return kExitBadInput;
  printf("variant: %s\n", variant->name);
  qlstm_bench_begin();
  variant->run(p, x, got);
  qlstm_bench_end();
  const qlstm_status st = qlstm::run_fc_s8(qlstm::kFcS8ReferenceVariant, &p, x, want);
  if (st != QLSTM_OK || memcmp(got, want, static_cast<size_t>(O)) != 0) {
    printf("FAIL fc-bench %s: differs from the reference\n", variant->name);
    return kExitMismatch;
  }
  printf("fc-bench: I=%ld O=%ld %s: bit-exact with reference\n", (long)I, (long)O,
         per_channel ? "per-channel" : "per-tensor");
  return 0;
}

// pool-bench: one pooling call of the named variant between the instruction-count markers
// (docs/performance.md, bench/pool_table.py): one H x W x C image of random values (the same for
// every variant), a KH x KW window, the same stride and padding on both axes, no clamp; checked
// against the reference afterwards. A sequence pooled over time is H = KH = T, W = KW = 1.
int pool_bench(int32_t kind, const int32_t (&g)[7], const char* variant_name) {
  size_t n = 0;
  const qlstm::PoolS8Variant* const* all = qlstm::pool_s8_variants(&n);
  const qlstm::PoolS8Variant* variant = bench_variant(all, n, variant_name, "pooling");
  if (variant == nullptr) return kExitBadInput;
  qlstm_pool_s8_params p{};
  p.kind = kind;
  p.batch = 1;
  p.input_height = g[0];
  p.input_width = g[1];
  p.channels = g[2];
  p.window_height = g[3];
  p.window_width = g[4];
  p.stride_height = p.stride_width = g[5];
  p.padding_height = p.padding_width = g[6];
  p.output_height = p.stride_height > 0 ? (p.input_height + 2 * p.padding_height - p.window_height) / p.stride_height + 1 : 0;
  p.output_width = p.stride_width > 0 ? (p.input_width + 2 * p.padding_width - p.window_width) / p.stride_width + 1 : 0;
  p.activation_min = -128;
  p.activation_max = 127;
  Rng r{kBenchSeed};
  g_arena_used = 0;
  const uint32_t in_bytes = static_cast<uint32_t>(p.input_height * p.input_width * p.channels);
  const uint32_t out_bytes = static_cast<uint32_t>(p.output_height * p.output_width * p.channels);
  if (qlstm_pool_s8_validate(&p, nullptr) != QLSTM_OK) {
    printf("qlstm_device: pool-bench: invalid geometry\n");
    return kExitBadInput;
  }
  int8_t* x = static_cast<int8_t*>(arena_take(in_bytes));
  int8_t* got = static_cast<int8_t*>(arena_take(out_bytes));
  int8_t* want = static_cast<int8_t*>(arena_take(out_bytes));
  if (!x || !got || !want) {
    printf("qlstm_device: pool-bench: the image does not fit this firmware's arena\n");
    return kExitBadInput;
  }
  for (uint32_t k = 0; k < in_bytes; ++k) x[k] = r.s8();
  if (variant->can_run != nullptr && !variant->can_run(p)) {
    printf("qlstm_device: pool-bench: variant %s declines this call\n", variant->name);
    return kExitBadInput;
  }
  printf("variant: %s\n", variant->name);
  qlstm_bench_begin();
  variant->run(p, x, got);
  qlstm_bench_end();
  const qlstm_status st = qlstm::run_pool_s8(qlstm::kPoolS8ReferenceVariant, &p, x, want);
  if (st != QLSTM_OK || memcmp(got, want, out_bytes) != 0) {
    printf("FAIL pool-bench %s: differs from the reference\n", variant->name);
    return kExitMismatch;
  }
  printf("pool-bench: %s %ldx%ldx%ld window %ldx%ld stride %ld pad %ld: bit-exact with reference\n",
         kind == QLSTM_POOL_MAX ? "max" : "avg", (long)g[0], (long)g[1], (long)g[2], (long)g[3], (long)g[4],
         (long)g[5], (long)g[6]);
  return 0;
}

// elementwise-bench: one add or multiply call of the named variant between the instruction-count
// markers (docs/performance.md, bench/elementwise_table.py): N random values per operand and
// parameters as TFLite prepares them (random scales, the same for every variant; an add's operands
// at different scales, or at equal ones for "add_equal"), no clamp; checked against the reference
// afterwards.
template <class P, class Variant, class Make>
int elementwise_bench(const char* kind, const Variant* const* all, size_t n, const Variant& reference,
                      qlstm_status (*run)(const Variant&, const P*, const int8_t*, const int8_t*, int8_t*),
                      const Make& make, int32_t N, const char* variant_name) {
  const Variant* variant = bench_variant(all, n, variant_name, kind);
  if (variant == nullptr) return kExitBadInput;
  Rng r{kBenchSeed};
  g_arena_used = 0;
  P p;
  make(r, &p);
  p.activation_min = -128;
  p.activation_max = 127;
  p.shape = {1, N, 0, 0};
  const uint32_t bytes = N > 0 && static_cast<uint32_t>(N) <= kArenaBytes / 4 ? static_cast<uint32_t>(N) : 0;
  int8_t* a = static_cast<int8_t*>(arena_take(bytes));
  int8_t* b = static_cast<int8_t*>(arena_take(bytes));
  int8_t* got = static_cast<int8_t*>(arena_take(bytes));
  int8_t* want = static_cast<int8_t*>(arena_take(bytes));
  if (bytes == 0 || !a || !b || !got || !want) {
    printf("qlstm_device: elementwise-bench: N must be positive and fit this firmware's arena\n");
    return kExitBadInput;
  }
  for (uint32_t k = 0; k < bytes; ++k) {
    a[k] = r.s8();
    b[k] = r.s8();
  }
  if (variant->can_run != nullptr && !variant->can_run(p)) {
    printf("qlstm_device: elementwise-bench: variant %s declines this call\n", variant->name);
    return kExitBadInput;
  }
  printf("variant: %s\n", variant->name);
  qlstm_bench_begin();
  variant->run(p, a, b, got);
  qlstm_bench_end();
  const qlstm_status st = run(reference, &p, a, b, want);
  if (st != QLSTM_OK || memcmp(got, want, bytes) != 0) {
    printf("FAIL elementwise-bench %s %s: differs from the reference\n", kind, variant->name);
    return kExitMismatch;
  }
  printf("elementwise-bench: %s N=%ld: bit-exact with reference\n", kind, (long)N);
  return 0;
}

// lstm-s16-bench: one 16x8 LSTM call of the named variant between the instruction-count markers
// (docs/performance.md, bench/s16_table.py): a stateless forward call writing every step, with
// random parameters and input of the variant-test's typical regime (the same for every variant),
// checked bit for bit against the reference afterwards. Both are run by run_lstm_s16, so the
// count includes its parameter checks.
int lstm_s16_bench(const qlstm_lstm_dims& d, bool time_major, const char* variant_name) {
  size_t n = 0;
  const qlstm::LstmS16Variant* const* all = qlstm::lstm_s16_variants(&n);
  const qlstm::LstmS16Variant* variant = bench_variant(all, n, variant_name, "16x8 LSTM");
  if (variant == nullptr) return kExitBadInput;
  Rng r{kBenchSeed};
  g_arena_used = 0;
  S16LstmCase k;
  memset(&k, 0, sizeof k);
  k.p.dims = d;
  k.p.layout = time_major ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
  k.p.time_direction = QLSTM_TIME_FORWARD;
  k.p.output_steps = QLSTM_OUTPUT_ALL_STEPS;
  constexpr bool kTypical = false;
  constexpr int32_t kMaxDim = 4096;  // each size, and the input and output values below the arena's
  // bytes, so that no product of sizes below overflows; the arena bounds the total
  const bool sizes_ok = d.batch >= 1 && d.time_steps >= 1 && d.input_size >= 1 && d.hidden_size >= 1 &&
                        d.batch <= kMaxDim && d.time_steps <= kMaxDim && d.input_size <= kMaxDim &&
                        d.hidden_size <= kMaxDim &&
                        static_cast<int64_t>(d.batch) * d.time_steps * (d.input_size + d.hidden_size) <= kArenaBytes;
  const uint32_t out_count = sizes_ok ? static_cast<uint32_t>(d.batch * d.time_steps * d.hidden_size) : 0;
  const uint32_t state = sizes_ok ? static_cast<uint32_t>(d.batch * d.hidden_size) : 0;
  const uint32_t scratch_bytes = sizes_ok ? static_cast<uint32_t>(qlstm_lstm_s16_scratch_bytes(&d)) : 0;
  // Everything but the call itself before the first marker: the parameters, the buffers, the state.
  S16LstmRun got{};
  void* scratch = nullptr;
  if (sizes_ok && random_lstm_s16_gates_and_cell(r, kTypical, k.p) && random_lstm_s16_data(r, kTypical, &k)) {
    scratch = arena_take(scratch_bytes);
    got.output = static_cast<int16_t*>(arena_take(out_count * 2u));
    got.c = static_cast<int16_t*>(arena_take(state * 2u));
  }
  if (!scratch || !got.output || !got.c || qlstm_lstm_s16_validate(&k.p, nullptr) != QLSTM_OK) {
    printf("qlstm_device: lstm-s16-bench: B, T, I and H must be positive and fit this firmware's arena\n");
    return kExitBadInput;
  }
  printf("variant: %s\n", variant->name);
  qlstm_lstm_s16_context ctx{scratch, scratch_bytes, got.c, nullptr};
  qlstm_bench_begin();
  got.status = qlstm::run_lstm_s16(*variant, &k.p, &ctx, k.input, got.output);
  qlstm_bench_end();
  if (got.status != QLSTM_OK) {
    printf("qlstm_device: lstm-s16-bench %s: kernel error: %s\n", variant->name, qlstm_status_string(got.status));
    return kExitKernelError;
  }
  S16LstmRun want;
  if (!run_lstm_s16_variant(qlstm::kLstmS16ReferenceVariant, k, out_count, &want) || want.status != QLSTM_OK) {
    printf("qlstm_device: lstm-s16-bench: the reference failed\n");
    return kExitKernelError;
  }
  if (memcmp(got.output, want.output, out_count * 2u) != 0 || memcmp(got.c, want.c, state * 2u) != 0) {
    printf("FAIL lstm-s16-bench %s: differs from the reference\n", variant->name);
    return kExitMismatch;
  }
  printf("lstm-s16-bench: B=%ld T=%ld I=%ld H=%ld%s: bit-exact with reference\n", (long)d.batch, (long)d.time_steps,
         (long)d.input_size, (long)d.hidden_size, time_major ? " time-major" : "");
  return 0;
}

int usage() {
  printf("usage: qlstm_device verify BUNDLE [VARIANT|all] | run BUNDLE OUT [VARIANT|all] | bench BUNDLE VARIANT|all | variants | variant-test [CASES] | fc-bench I O per-tensor|per-channel VARIANT | pool-bench max|avg H W C KH KW STRIDE PAD VARIANT | elementwise-bench add|add_equal|mul N VARIANT | lstm-s16-bench B T I H VARIANT [time-major] | icount-self-test | cycle-self-test | --fault\n");
  return kExitBadInput;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const char* cmd = argv[1];
  if (strcmp(cmd, "--fault") == 0) {
    *reinterpret_cast<volatile uint32_t*>(0xFFFFFFF0u) = 1u;  // bus fault -> HardFault -> exit non-zero
    printf("no fault taken\n");
    return 0;
  }
  if (strcmp(cmd, "icount-self-test") == 0) {
    // A known sequence for the instruction counter: 100 NOPs and the call of the end marker.
    __asm volatile(
        "bl qlstm_bench_begin\n\t"
        ".rept 100\n\tnop\n\t.endr\n\t"
        "bl qlstm_bench_end\n\t" ::: "r0", "r1", "r2", "r3", "r12", "lr", "memory", "cc");
    printf("expected instructions: 101\n");
    return 0;
  }
  if (strcmp(cmd, "cycle-self-test") == 0) {
    // A known sequence for the cycle estimate (docs/targets.md): two neighbouring loads, a
    // multiply-accumulate, and a loop whose conditional branch is taken twice, then falls through.
    uint32_t words[2] = {1u, 2u};
    __asm volatile(
        "bl qlstm_bench_begin\n\t"
        "ldr r2, [%0]\n\t"
        "ldr r3, [%0, #4]\n\t"
        "mla r1, r2, r3, r2\n\t"
        "movs r0, #3\n"
        "1:\n\t"
        "subs r0, #1\n\t"
        "bne 1b\n\t"
        "bl qlstm_bench_end\n\t" ::"r"(words)
        : "r0", "r1", "r2", "r3", "r12", "lr", "memory", "cc");
    printf("expected instructions: 11\n");
    return 0;
  }
  if (strcmp(cmd, "variant-test") == 0 && (argc == 2 || argc == 3)) {
    const int lstm = variant_test(argc == 3 ? static_cast<int32_t>(strtol(argv[2], nullptr, 10)) : 300);
    if (lstm == kExitBadInput) return lstm;
    const long fc = fc_variant_test();
    const long gru = gru_variant_test(kGruVariantCases);
    if (gru < 0) return kExitBadInput;
    const long s16 = s16_variant_test();
    if (s16 < 0) return kExitBadInput;
    const long pool = pool_variant_test();
    if (pool < 0) {
      printf("FAIL pool case does not fit the arena\n");
      return kExitBadInput;
    }
    const long elementwise = elementwise_variant_test();
    if (elementwise < 0) {
      printf("FAIL elementwise case does not fit the arena\n");
      return kExitBadInput;
    }
    return lstm == 0 && fc == 0 && gru == 0 && s16 == 0 && pool == 0 && elementwise == 0 ? 0 : kExitMismatch;
  }
  if (strcmp(cmd, "fc-bench") == 0 && argc == 6) {
    return fc_bench(static_cast<int32_t>(strtol(argv[2], nullptr, 10)), static_cast<int32_t>(strtol(argv[3], nullptr, 10)),
                    strcmp(argv[4], "per-channel") == 0, argv[5]);
  }
  if (strcmp(cmd, "pool-bench") == 0 && argc == 11 && (strcmp(argv[2], "max") == 0 || strcmp(argv[2], "avg") == 0)) {
    int32_t g[7];
    for (int k = 0; k < 7; ++k) g[k] = static_cast<int32_t>(strtol(argv[3 + k], nullptr, 10));
    return pool_bench(strcmp(argv[2], "max") == 0 ? QLSTM_POOL_MAX : QLSTM_POOL_AVERAGE, g, argv[10]);
  }
  if (strcmp(cmd, "elementwise-bench") == 0 && argc == 5 && (strcmp(argv[2], "add") == 0 || strcmp(argv[2], "add_equal") == 0)) {
    size_t n = 0;
    const qlstm::AddS8Variant* const* all = qlstm::add_s8_variants(&n);
    const AddScales form = strcmp(argv[2], "add") == 0 ? AddScales::kTfliteDistinct : AddScales::kTfliteEqual;
    return elementwise_bench<qlstm_add_s8_params>(
        argv[2], all, n, qlstm::kAddS8ReferenceVariant, qlstm::run_add_s8,
        [form](Rng& r, qlstm_add_s8_params* p) { random_add_params(r, form, p); },
        static_cast<int32_t>(strtol(argv[3], nullptr, 10)), argv[4]);
  }
  if (strcmp(cmd, "elementwise-bench") == 0 && argc == 5 && strcmp(argv[2], "mul") == 0) {
    size_t n = 0;
    const qlstm::MulS8Variant* const* all = qlstm::mul_s8_variants(&n);
    return elementwise_bench<qlstm_mul_s8_params>(
        "mul", all, n, qlstm::kMulS8ReferenceVariant, qlstm::run_mul_s8,
        [](Rng& r, qlstm_mul_s8_params* p) { random_mul_params(r, true, p); },
        static_cast<int32_t>(strtol(argv[3], nullptr, 10)), argv[4]);
  }
  if (strcmp(cmd, "lstm-s16-bench") == 0 && (argc == 7 || (argc == 8 && strcmp(argv[7], "time-major") == 0))) {
    const auto dim = [&argv](int i) { return static_cast<int32_t>(strtol(argv[i], nullptr, 10)); };
    return lstm_s16_bench({dim(2), dim(3), dim(4), dim(5)}, argc == 8, argv[6]);
  }
  if (strcmp(cmd, "variants") == 0) {
    size_t n = 0;
    const qlstm::LstmS8Variant* const* all = qlstm::lstm_s8_variants(&n);
    for (size_t i = 0; i < n; ++i) printf("%s\n", all[i]->name);
    const qlstm::FcS8Variant* const* fc = qlstm::fc_s8_variants(&n);
    for (size_t i = 0; i < n; ++i) printf("fc %s\n", fc[i]->name);
    const qlstm::LstmS16Variant* const* lstm_s16 = qlstm::lstm_s16_variants(&n);
    for (size_t i = 0; i < n; ++i) printf("lstm_s16 %s\n", lstm_s16[i]->name);
    const qlstm::FcS16Variant* const* fc_s16 = qlstm::fc_s16_variants(&n);
    for (size_t i = 0; i < n; ++i) printf("fc_s16 %s\n", fc_s16[i]->name);
    const qlstm::PoolS8Variant* const* pool = qlstm::pool_s8_variants(&n);
    for (size_t i = 0; i < n; ++i) printf("pool %s\n", pool[i]->name);
    const qlstm::AddS8Variant* const* add = qlstm::add_s8_variants(&n);
    for (size_t i = 0; i < n; ++i) printf("add %s\n", add[i]->name);
    const qlstm::MulS8Variant* const* mul = qlstm::mul_s8_variants(&n);
    for (size_t i = 0; i < n; ++i) printf("mul %s\n", mul[i]->name);
    return 0;
  }
  if (strcmp(cmd, "verify") == 0 && (argc == 3 || argc == 4)) {
    return run_bundle(Mode::kVerify, argv[2], nullptr, argc == 4 ? argv[3] : "default");
  }
  if (strcmp(cmd, "run") == 0 && (argc == 4 || argc == 5)) {
    return run_bundle(Mode::kRun, argv[2], argv[3], argc == 5 ? argv[4] : "default");
  }
  if (strcmp(cmd, "bench") == 0 && argc == 4) {
    return run_bundle(Mode::kBench, argv[2], nullptr, argv[3]);
  }
  return usage();
}
