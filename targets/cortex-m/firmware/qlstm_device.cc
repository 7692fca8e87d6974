// The device side of `qlstm ... --target CPU`: one firmware per CPU, driven through semihosting.
//   qlstm_device verify BUNDLE [VARIANT|all]   every case against its expected values;
//                                             prints a FAIL line per mismatch, last "N passed, N failed"
//   qlstm_device run BUNDLE OUT [VARIANT]      every case's output (and final state) into OUT
//   qlstm_device bench BUNDLE VARIANT          case 0 once, between the instruction-count markers
//   qlstm_device variants                      the variants built for this CPU, one per line
//   qlstm_device icount-self-test              a known count of instructions between the markers
//   qlstm_device variant-test [CASES]          every variant against the reference on random cases
//   qlstm_device --fault                       writes to an unmapped address (a fault fails the run)
// BUNDLE is written by the host (tools/qlstm/device.cc; layout in docs/targets.md). Exit status:
// 0 all good, 1 a mismatch, 2 bad arguments or a malformed bundle, 3 a kernel error.
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qlstm/kernels.h"
#include "qlstm/lstm_s8.h"

namespace {

constexpr uint32_t kBundleVersion = 2;
constexpr int32_t kFlagStateful = 1;
constexpr int32_t kFlagExpected = 2;
constexpr int32_t kFlagReverse = 4;
constexpr int kExitMismatch = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitKernelError = 3;

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

struct Cursor {
  const uint8_t* p;
  const uint8_t* end;
  bool ok;

  int32_t i32() {
    int32_t v = 0;
    if (end - p < 4) {
      ok = false;
      return 0;
    }
    memcpy(&v, p, 4);
    p += 4;
    return v;
  }
  // n elements of `size` bytes, padded to 4.
  const void* array(int32_t n, uint32_t size) {
    if (n < 0) {
      ok = false;
      return nullptr;
    }
    const uint32_t bytes = static_cast<uint32_t>(n) * size;
    const uint32_t padded = (bytes + 3u) & ~3u;
    if (static_cast<uint32_t>(end - p) < padded) {
      ok = false;
      return nullptr;
    }
    const void* a = p;
    p += padded;
    return a;
  }
  void requant(qlstm_requant* q) {
    q->multiplier = i32();
    q->shift = i32();
  }
};

struct Case {
  const char* name;
  int32_t name_len;
  qlstm_lstm_s8_params params;
  bool stateful;
  bool has_expected;
  const int8_t* input;
  const int8_t* h0;
  const int16_t* c0;
  const int8_t* expected;
  const int8_t* final_h;
  const int16_t* final_c;
};

bool parse_case(Cursor* c, Case* k) {
  memset(k, 0, sizeof *k);
  k->name_len = c->i32();
  k->name = static_cast<const char*>(c->array(k->name_len, 1));
  qlstm_lstm_s8_params& p = k->params;
  p.layout = c->i32() ? QLSTM_LAYOUT_TIME_MAJOR : QLSTM_LAYOUT_BATCH_MAJOR;
  p.dims.batch = c->i32();
  p.dims.time_steps = c->i32();
  p.dims.input_size = c->i32();
  p.dims.hidden_size = c->i32();
  p.cell_scale_power = c->i32();
  p.cell_clip = c->i32();
  p.output_zero_point = c->i32();
  const int32_t flags = c->i32();
  k->stateful = (flags & kFlagStateful) != 0;
  k->has_expected = (flags & kFlagExpected) != 0;
  p.time_direction = (flags & kFlagReverse) != 0 ? QLSTM_TIME_REVERSE : QLSTM_TIME_FORWARD;
  c->requant(&p.forget_times_cell_to_cell);
  c->requant(&p.input_times_cell_gate_to_cell);
  c->requant(&p.output_times_tanh_cell_to_hidden);
  const int32_t B = p.dims.batch, T = p.dims.time_steps, I = p.dims.input_size, H = p.dims.hidden_size;
  // Sizes only bounded here so that the array lengths below cannot overflow; the kernel's own
  // validation judges them.
  if (!c->ok || B < 0 || T < 0 || I < 0 || H < 0 || H > (1 << 15) / 4 || I > (1 << 15) ||
      static_cast<int64_t>(B) * T * (I > H ? I : H) > (1 << 26)) {
    return false;
  }
  for (int g = 0; g < QLSTM_GATE_COUNT && c->ok; ++g) {
    qlstm_gate_s8_params* gp = &p.gates[g];
    gp->activation = static_cast<qlstm_activation>(c->i32());
    c->requant(&gp->input_to_q3_12);
    c->requant(&gp->hidden_to_q3_12);
    gp->input_weights = static_cast<const int8_t*>(c->array(H * I, 1));
    gp->input_effective_bias = static_cast<const int32_t*>(c->array(H, 4));
    gp->hidden_weights = static_cast<const int8_t*>(c->array(H * H, 1));
    gp->hidden_effective_bias = static_cast<const int32_t*>(c->array(H, 4));
  }
  k->input = static_cast<const int8_t*>(c->array(B * T * I, 1));
  if (k->stateful) {
    k->h0 = static_cast<const int8_t*>(c->array(B * H, 1));
    k->c0 = static_cast<const int16_t*>(c->array(B * H, 2));
  }
  if (k->has_expected) {
    k->expected = static_cast<const int8_t*>(c->array(B * T * H, 1));
    if (k->stateful) {
      k->final_h = static_cast<const int8_t*>(c->array(B * H, 1));
      k->final_c = static_cast<const int16_t*>(c->array(B * H, 2));
    }
  }
  return c->ok && c->p == c->end;
}

// Reads one length-prefixed record into the arena. 0 ok, -1 end of bundle, 1 error.
int read_record(FILE* f, Cursor* c) {
  uint32_t bytes = 0;
  if (fread(&bytes, 4, 1, f) != 1) return -1;
  uint8_t* rec = bytes % 4 == 0 ? static_cast<uint8_t*>(arena_take(bytes)) : nullptr;
  if (rec == nullptr || fread(rec, 1, bytes, f) != bytes) return 1;
  *c = Cursor{rec, rec + bytes, true};
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
  o->output_bytes = static_cast<uint32_t>(d.batch * d.time_steps * d.hidden_size);
  *scratch_bytes = static_cast<uint32_t>(qlstm_lstm_s8_scratch_bytes(&d));
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

// The instruction counter (tools/qemu_icount) counts what runs between these two calls.
extern "C" __attribute__((noinline, used)) void qlstm_bench_begin(void) { __asm volatile("" ::: "memory"); }
extern "C" __attribute__((noinline, used)) void qlstm_bench_end(void) { __asm volatile("" ::: "memory"); }

namespace {

const qlstm::LstmS8Variant* find_variant(const char* name) {
  size_t n = 0;
  const qlstm::LstmS8Variant* const* all = qlstm::lstm_s8_variants(&n);
  if (strcmp(name, "default") == 0) return &qlstm::lstm_s8_default_variant();
  for (size_t i = 0; i < n; ++i) {
    if (strcmp(all[i]->name, name) == 0) return all[i];
  }
  return nullptr;
}

// First mismatch of case k, as "what[index]: expected E, got G", or false if it all matches.
bool mismatch(const Case& k, const Outputs& o, char* msg, size_t msg_size) {
  for (uint32_t i = 0; i < o.output_bytes; ++i) {
    if (o.output[i] != k.expected[i]) {
      snprintf(msg, msg_size, "output[%lu]: expected %d, got %d", (unsigned long)i, k.expected[i], o.output[i]);
      return true;
    }
  }
  for (uint32_t i = 0; k.stateful && i < o.state_count; ++i) {
    if (o.hidden[i] != k.final_h[i]) {
      snprintf(msg, msg_size, "final_hidden[%lu]: expected %d, got %d", (unsigned long)i, k.final_h[i], o.hidden[i]);
      return true;
    }
    if (o.cell[i] != k.final_c[i]) {
      snprintf(msg, msg_size, "final_cell[%lu]: expected %d, got %d", (unsigned long)i, k.final_c[i], o.cell[i]);
      return true;
    }
  }
  return false;
}

enum class Mode { kVerify, kRun, kBench };

int run_bundle(Mode mode, const char* path, const char* out_path, const char* variant_name) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    printf("qlstm_device: cannot open %s: %s\n", path, strerror(errno));
    return kExitBadInput;
  }
  uint32_t header[3];
  if (fread(header, 4, 3, f) != 3 || memcmp(header, "QLVB", 4) != 0 || header[1] != kBundleVersion) {
    printf("qlstm_device: %s is not a version-%lu bundle\n", path, (unsigned long)kBundleVersion);
    return kExitBadInput;
  }
  // The variants to run: one by name, or every one built for this CPU.
  size_t nvar = 0;
  const qlstm::LstmS8Variant* const* all = qlstm::lstm_s8_variants(&nvar);
  const size_t nall = nvar;
  const qlstm::LstmS8Variant* one = nullptr;
  if (strcmp(variant_name, "all") != 0) {
    one = find_variant(variant_name);
    if (one == nullptr) {
      printf("qlstm_device: no variant '%s' in this firmware\n", variant_name);
      return kExitBadInput;
    }
    nvar = 1;
  }
  FILE* out = nullptr;
  if (mode == Mode::kRun && (out = fopen(out_path, "wb")) == nullptr) {
    printf("qlstm_device: cannot create %s: %s\n", out_path, strerror(errno));
    return kExitBadInput;
  }
  long passed = 0, failed = 0;
  int rc = 0;
  for (uint32_t n = 0; n < header[2] && rc == 0; ++n) {
    g_arena_used = 0;
    Cursor c{};
    Case k;
    const int got = read_record(f, &c);
    if (got != 0 || !parse_case(&c, &k) || ((mode == Mode::kVerify) && !k.has_expected)) {
      printf("qlstm_device: case %lu: %s\n", (unsigned long)n,
             got != 0 ? "truncated, or larger than this firmware's arena" : "malformed record");
      rc = kExitBadInput;
      break;
    }
    const uint32_t case_mark = g_arena_used;
    for (size_t v = 0; v < nvar && rc == 0; ++v) {
      const qlstm::LstmS8Variant* variant_ptr = one ? one : all[v];
      // "default": the variant that dispatch picks for this (valid) call, run and named as itself.
      if (one == &qlstm::lstm_s8_default_variant() && qlstm_lstm_s8_validate(&k.params, nullptr) == QLSTM_OK) {
        const qlstm::LstmS8Variant* picked = qlstm::select_lstm_s8_variant(all, nall, k.params);
        if (picked != nullptr) variant_ptr = picked;
      }
      const qlstm::LstmS8Variant& variant = *variant_ptr;
      g_arena_used = case_mark;
      Outputs o;
      void* scratch = nullptr;
      uint32_t scratch_bytes = 0;
      if (!alloc_outputs(k, &o, &scratch, &scratch_bytes)) {
        printf("qlstm_device: case %.*s: does not fit in this firmware's %lu-byte arena\n", (int)k.name_len,
               k.name, (unsigned long)kArenaBytes);
        rc = kExitBadInput;
        break;
      }
      qlstm_lstm_s8_context ctx{scratch, scratch_bytes, o.cell, o.hidden};
      if (mode == Mode::kBench) printf("variant: %s\n", variant.name);
      if (mode == Mode::kBench) qlstm_bench_begin();
      const qlstm_status st = qlstm::run_lstm_s8(variant, &k.params, &ctx, k.input, o.output);
      if (mode == Mode::kBench) qlstm_bench_end();
      if (st != QLSTM_OK) {
        printf("qlstm_device: case %.*s [%s]: kernel error: %s\n", (int)k.name_len, k.name, variant.name,
               qlstm_status_string(st));
        rc = kExitKernelError;
        break;
      }
      char msg[96];
      if (k.has_expected && mismatch(k, o, msg, sizeof msg)) {
        ++failed;
        printf("FAIL %.*s [%s]: %s\n", (int)k.name_len, k.name, variant.name, msg);
      } else {
        ++passed;
      }
      if (mode == Mode::kRun &&
          (fwrite(o.output, 1, o.output_bytes, out) != o.output_bytes ||
           (k.stateful && (fwrite(o.hidden, 1, o.state_count, out) != o.state_count ||
                           fwrite(o.cell, 2, o.state_count, out) != o.state_count)))) {
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
// edge sizes, both layouts, both time directions, stateless and stateful; equal means equal.
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
      bh[j] = extreme ? static_cast<int32_t>(r.next()) : -p.output_zero_point * rowsum;
    }
    qlstm_gate_s8_params& gp = p.gates[g];
    gp.input_to_q3_12 = extreme ? random_requant(r, -31, 31) : random_requant(r, -12, -5);
    gp.hidden_to_q3_12 = extreme ? random_requant(r, -31, 31) : random_requant(r, -12, -5);
    gp.input_weights = wx;
    gp.hidden_weights = wh;
    gp.input_effective_bias = bx;
    gp.hidden_effective_bias = bh;
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

int variant_test(int32_t cases) {
  static const int32_t kEdge[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65};
  constexpr int32_t kEdgeCount = sizeof kEdge / sizeof kEdge[0];
  size_t nvar = 0;
  const qlstm::LstmS8Variant* const* all = qlstm::lstm_s8_variants(&nvar);
  const qlstm::LstmS8Variant& ref = qlstm::lstm_s8_reference_variant();
  Rng r{0x9E3779B97F4A7C15ull};
  long runs = 0, mismatches = 0, declined = 0;
  for (int32_t n = 0; n < cases; ++n) {
    g_arena_used = 0;
    const qlstm_lstm_dims d = {r.range(1, 3), r.range(1, 4), kEdge[r.range(0, kEdgeCount - 1)],
                               kEdge[r.range(0, kEdgeCount - 1)]};
    Case k;
    if (!make_random_case(r, d, r.range(0, 1) != 0, static_cast<Regime>(n % 3), &k)) return kExitBadInput;
    // A quarter of the cases walk time backwards (ONNX direction "reverse").
    const bool reverse = n % 4 == 3;
    k.params.time_direction = reverse ? QLSTM_TIME_REVERSE : QLSTM_TIME_FORWARD;
    const uint32_t mark = g_arena_used;
    Outputs want;
    void* scratch = nullptr;
    uint32_t scratch_bytes = 0;
    if (!alloc_outputs(k, &want, &scratch, &scratch_bytes)) return kExitBadInput;
    if (!k.stateful) memset(want.cell, 0x5A, want.state_count * 2u);  // a stateless call must clear it
    qlstm_lstm_s8_context ctx{scratch, scratch_bytes, want.cell, want.hidden};
    const qlstm_status want_st = qlstm::run_lstm_s8(ref, &k.params, &ctx, k.input, want.output);
    const uint32_t after_ref = g_arena_used;
    for (size_t v = 0; v < nvar; ++v) {
      if (all[v] == &ref) continue;
      g_arena_used = after_ref;
      Outputs got;
      if (!alloc_outputs(k, &got, &scratch, &scratch_bytes)) return kExitBadInput;
      if (!k.stateful) memset(got.cell, 0xA5, got.state_count * 2u);
      qlstm_lstm_s8_context c2{scratch, scratch_bytes, got.cell, got.hidden};
      const qlstm_status st = qlstm::run_lstm_s8(*all[v], &k.params, &c2, k.input, got.output);
      if (all[v]->can_run != nullptr && !all[v]->can_run(k.params)) {
        // Declined (e.g. the CMSIS-NN backend given a reverse call): it must say so.
        ++declined;
        if (st == QLSTM_ERROR_NO_VARIANT) continue;
        ++mismatches;
        printf("FAIL variant %s, case %ld: declined the call but returned %s\n", all[v]->name, (long)n,
               qlstm_status_string(st));
        continue;
      }
      ++runs;
      bool same = st == want_st && memcmp(got.output, want.output, want.output_bytes) == 0 &&
                  memcmp(got.cell, want.cell, want.state_count * 2u) == 0 &&
                  (!k.stateful || memcmp(got.hidden, want.hidden, want.state_count) == 0);
      if (!same) {
        ++mismatches;
        printf("FAIL variant %s, case %ld: B=%ld T=%ld I=%ld H=%ld %s %s %s regime %ld\n", all[v]->name, (long)n,
               (long)d.batch, (long)d.time_steps, (long)d.input_size, (long)d.hidden_size,
               k.params.layout == QLSTM_LAYOUT_TIME_MAJOR ? "time-major" : "batch-major",
               k.stateful ? "stateful" : "stateless", reverse ? "reverse" : "forward", (long)(n % 3));
      }
    }
    (void)mark;
  }
  if (declined > 0) printf("variant-test: %ld calls declined by a variant (can_run), each with QLSTM_ERROR_NO_VARIANT\n", declined);
  printf("variant-test: %ld cases, %ld variant runs against the reference, %ld mismatches\n", (long)cases, runs,
         mismatches);
  return mismatches == 0 ? 0 : kExitMismatch;
}

int usage() {
  printf("usage: qlstm_device verify BUNDLE [VARIANT|all] | run BUNDLE OUT [VARIANT] | bench BUNDLE VARIANT | variants | variant-test [CASES] | icount-self-test | --fault\n");
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
  if (strcmp(cmd, "variant-test") == 0 && (argc == 2 || argc == 3)) {
    return variant_test(argc == 3 ? static_cast<int32_t>(strtol(argv[2], nullptr, 10)) : 300);
  }
  if (strcmp(cmd, "variants") == 0) {
    size_t n = 0;
    const qlstm::LstmS8Variant* const* all = qlstm::lstm_s8_variants(&n);
    for (size_t i = 0; i < n; ++i) printf("%s\n", all[i]->name);
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
