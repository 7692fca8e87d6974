/* qlstm_icount: a QEMU TCG plugin that counts the guest instructions executed between a call of
 * qlstm_bench_begin() and the next call of qlstm_bench_end() (both in the firmware, one
 * instruction each). Exact and repeatable: TCG runs one vCPU deterministically.
 *
 *   qemu-system-arm ... -plugin libqlstm_icount.so,out=FILE
 *
 * Each begin/end pair appends "instructions N" to FILE (to QEMU's log without out=). N counts the
 * instructions after the begin marker's and before the end marker's, so the markers themselves
 * and nothing outside them are counted; the call into qlstm_bench_end is.
 *
 * Debian's QEMU 7.2 loads plugins but ships no qemu-plugin.h, so the few entry points used here
 * are declared below (plugin API version 1, as QEMU 7.2 exports it). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb* tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void* userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void* userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb* tb);
struct qemu_plugin_insn* qemu_plugin_tb_get_insn(const struct qemu_plugin_tb* tb, size_t idx);
const char* qemu_plugin_insn_symbol(const struct qemu_plugin_insn* insn);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb* tb, enum qemu_plugin_op op, void* ptr,
                                              uint64_t imm);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn* insn, qemu_plugin_vcpu_udata_cb_t cb,
                                            enum qemu_plugin_cb_flags flags, void* userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void* userdata);
void qemu_plugin_outs(const char* string);

#define QEMU_PLUGIN_EXPORT __attribute__((visibility("default")))
QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;

#define BEGIN_MARKER "qlstm_bench_begin"
#define END_MARKER "qlstm_bench_end"

/* Every executed translation block adds its instruction count here (inline, at block entry). */
static uint64_t g_executed;
static uint64_t g_begin;
static int g_counting;
static FILE* g_out;

/* A marker's position in its block: block_insns were already added at block entry, of which
 * `index` precede the marker instruction. Packed into the callback's pointer-sized udata. */
#define MARKER_BEGIN 1u
#define MARKER_END 2u
static void* pack(unsigned kind, size_t block_insns, size_t index) {
  return (void*)(uintptr_t)(kind | (block_insns << 2) | (index << 18));
}

static void on_marker(unsigned int vcpu, void* udata) {
  (void)vcpu;
  const uintptr_t u = (uintptr_t)udata;
  const uint64_t block_insns = (u >> 2) & 0xFFFFu, index = u >> 18;
  const uint64_t before_marker = g_executed - block_insns + index;
  if ((u & 3u) == MARKER_BEGIN) {
    g_begin = before_marker + 1; /* start after the marker instruction */
    g_counting = 1;
  } else if (g_counting) {
    char line[64];
    snprintf(line, sizeof line, "instructions %" PRIu64 "\n", before_marker - g_begin);
    if (g_out) {
      fputs(line, g_out);
      fflush(g_out);
    } else {
      qemu_plugin_outs(line);
    }
    g_counting = 0;
  }
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
  (void)id;
  const size_t n = qemu_plugin_tb_n_insns(tb);
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &g_executed, n);
  for (size_t i = 0; i < n; ++i) {
    struct qemu_plugin_insn* insn = qemu_plugin_tb_get_insn(tb, i);
    const char* sym = qemu_plugin_insn_symbol(insn);
    if (sym == NULL) continue;
    const unsigned kind = strcmp(sym, BEGIN_MARKER) == 0 ? MARKER_BEGIN : strcmp(sym, END_MARKER) == 0 ? MARKER_END : 0u;
    if (kind != 0 && n < 0x10000u) {
      qemu_plugin_register_vcpu_insn_exec_cb(insn, on_marker, QEMU_PLUGIN_CB_NO_REGS, pack(kind, n, i));
    }
  }
}

static void on_plugin_exit(qemu_plugin_id_t id, void* udata) {
  (void)id;
  (void)udata;
  if (g_out) fclose(g_out);
  g_out = NULL;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t* info, int argc, char** argv) {
  (void)info;
  for (int i = 0; i < argc; ++i) {
    if (strncmp(argv[i], "out=", 4) == 0) {
      g_out = fopen(argv[i] + 4, "w");
      if (g_out == NULL) {
        fprintf(stderr, "qlstm_icount: cannot write %s\n", argv[i] + 4);
        return -1;
      }
    } else {
      fprintf(stderr, "qlstm_icount: unknown argument '%s' (expected out=FILE)\n", argv[i]);
      return -1;
    }
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, on_plugin_exit, NULL);
  return 0;
}
