/* qlstm_icount: a QEMU TCG plugin that counts the guest instructions executed between a call of
 * qlstm_bench_begin() and the next call of qlstm_bench_end() (both in the firmware, one
 * instruction each). Exact and repeatable: TCG runs one vCPU deterministically.
 *
 *   qemu-system-arm ... -plugin libqlstm_icount.so,out=FILE[,cpu=cortex-m4][,profile=on]
 *
 * Each begin/end pair appends "instructions N" to FILE (to QEMU's log without out=). N counts the
 * instructions after the begin marker's and before the end marker's, so the markers themselves
 * and nothing outside them are counted; the call into qlstm_bench_end is.
 * With cpu=NAME (cortex-m3, cortex-m4, cortex-m33, cortex-m55), each pair also appends
 * "cycles C": the same instructions' estimated cycles on that CPU (cycle_model.h; the figures
 * and what the estimate leaves out are in docs/targets.md). Each instruction is decoded once, at
 * translation, and its cycles summed per block; a block that ends in a conditional branch
 * is charged the taken branch's refill when the next block executed does not start at its
 * fall-through address.
 * With profile=on, each pair also appends "symbol NAME N" lines: the instructions counted in
 * translation blocks that start in that function (a block lies within one function); with cpu=
 * too, "symbol NAME N C" (C: those blocks' estimated cycles, with the refills of the taken
 * branches that end them), and first "class NAME N C" lines: the pair's instructions and
 * estimated cycles per timing class (cycle_model.h; "refill" holds the refills of taken
 * conditional branches).
 *
 * Debian's QEMU 7.2 loads plugins but ships no qemu-plugin.h, so the few entry points used here
 * are declared below (plugin API version 1, as QEMU 7.2 exports it). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cycle_model.h"

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
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb* tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void* userdata);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb* tb);
const void* qemu_plugin_insn_data(const struct qemu_plugin_insn* insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn* insn);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn* insn);

#define QEMU_PLUGIN_EXPORT __attribute__((visibility("default")))
QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;

#define BEGIN_MARKER "qlstm_bench_begin"
#define END_MARKER "qlstm_bench_end"

/* Every executed translation block adds its instruction count here (inline, at block entry). */
static uint64_t g_executed;
static uint64_t g_begin;
static FILE* g_out;

/* The cycle estimate: per translated block, its instructions' cycles (prefix[k]: of the first
 * k), and whether it ends in a conditional branch whose refill is charged when taken. */
static int g_cycle_model;
static enum qlstm_cm_cpu g_cpu;
static uint64_t g_cycles;
static uint64_t g_cycles_begin;
struct Block;
struct CycleBlock {
  struct Block* prof; /* with profile=on: the block's profile counter */
  uint64_t start, fallthrough;
  int conditional_end;
  size_t n;
  uint8_t* cls;  /* with profile=on: each instruction's class and cycles */
  uint32_t* cyc;
  uint64_t cycles;
  uint64_t prefix[];
};
static const struct CycleBlock* g_last_block;
static int g_profile;
static int g_counting;
static void add_block_cycles(struct Block* b, uint64_t cycles);

/* With profile=on: instructions and cycles per class, summed over every block run (the pseudo
 * class REFILL: taken conditional branches' refills); each pair prints the difference. */
#define REFILL QLSTM_CM_CLASS_COUNT
static uint64_t g_class_insns[REFILL + 1], g_class_cycles[REFILL + 1];
static uint64_t g_class_insns_begin[REFILL + 1], g_class_cycles_begin[REFILL + 1];

static void on_cycle_block(unsigned int vcpu, void* udata) {
  (void)vcpu;
  const struct CycleBlock* b = udata;
  const struct CycleBlock* last = g_last_block;
  if (last != NULL && last->conditional_end && b->start != last->fallthrough) {
    g_cycles += qlstm_cm_taken_penalty(g_cpu);
    g_class_cycles[REFILL] += qlstm_cm_taken_penalty(g_cpu);
    if (g_counting && last->prof) add_block_cycles(last->prof, qlstm_cm_taken_penalty(g_cpu));
  }
  g_cycles += b->cycles;
  g_last_block = b;
  if (b->cls) {
    for (size_t i = 0; i < b->n; ++i) {
      ++g_class_insns[b->cls[i]];
      g_class_cycles[b->cls[i]] += b->cyc[i];
    }
  }
}

/* The per-class sums less the block's instructions from `from` on (run, but not yet counted). */
static void class_totals_before(const struct CycleBlock* b, size_t from, uint64_t* insns, uint64_t* cycles) {
  memcpy(insns, g_class_insns, sizeof g_class_insns);
  memcpy(cycles, g_class_cycles, sizeof g_class_cycles);
  for (size_t i = from; i < b->n; ++i) {
    --insns[b->cls[i]];
    cycles[b->cls[i]] -= b->cyc[i];
  }
}

/* Decodes the block's instructions and sums their cycles (NULL for an empty block). */
static struct CycleBlock* cycle_block(struct qemu_plugin_tb* tb, size_t n) {
  if (n == 0) return NULL;
  struct CycleBlock* b = malloc(sizeof *b + (n + 1) * sizeof b->prefix[0]);
  if (b == NULL) {
    fprintf(stderr, "qlstm_icount: out of memory\n");
    exit(1);
  }
  b->prof = NULL;
  b->start = qemu_plugin_tb_vaddr(tb);
  b->prefix[0] = 0;
  b->n = n;
  b->cls = NULL;
  b->cyc = NULL;
  if (g_profile) {
    b->cls = malloc(n * sizeof b->cls[0]);
    b->cyc = malloc(n * sizeof b->cyc[0]);
    if (b->cls == NULL || b->cyc == NULL) {
      fprintf(stderr, "qlstm_icount: out of memory\n");
      exit(1);
    }
  }
  struct qlstm_cm_insn prev, cur;
  unsigned it_left = 0; /* instructions still inside an IT block */
  int in_it = 0;
  for (size_t i = 0; i < n; ++i) {
    struct qemu_plugin_insn* insn = qemu_plugin_tb_get_insn(tb, i);
    const size_t size = qemu_plugin_insn_size(insn);
    uint8_t bytes[4] = {0, 0, 0, 0};
    memcpy(bytes, qemu_plugin_insn_data(insn), size < 4 ? size : 4);
    qlstm_cm_decode(bytes, size, &cur);
    in_it = it_left > 0;
    if (in_it) --it_left;
    if (cur.cls == QLSTM_CM_IT) it_left = cur.it_count;
    /* A B inside an IT block may fall through: charged as a conditional one. (BX, POP {pc} and
     * the other indirect branches inside one are charged as taken.) */
    if (in_it && cur.cls == QLSTM_CM_BRANCH) cur.conditional = 1;
    const unsigned c = qlstm_cm_cycles(g_cpu, &cur, i > 0 ? &prev : NULL);
    b->prefix[i + 1] = b->prefix[i] + c;
    if (b->cls) {
      b->cls[i] = (uint8_t)cur.cls;
      b->cyc[i] = c;
    }
    if (i + 1 == n) {
      const int branch = cur.cls == QLSTM_CM_BRANCH || cur.cls == QLSTM_CM_LOOP_END ||
                         cur.cls == QLSTM_CM_BRANCH_INDIRECT || cur.cls == QLSTM_CM_CALL ||
                         cur.writes_pc;
      b->conditional_end = branch && cur.conditional;
      b->fallthrough = qemu_plugin_insn_vaddr(insn) + size;
    }
    prev = cur;
  }
  b->cycles = b->prefix[n];
  return b;
}

/* The profile: one counter per translated block, grouped by function when printed. */
struct Block {
  const char* symbol;
  uint64_t insns, cycles; /* per run of the block (cycles: with cpu=, before any refill) */
  uint64_t executed;      /* instructions run between the markers */
  uint64_t executed_cycles;
};
static void add_block_cycles(struct Block* b, uint64_t cycles) { b->executed_cycles += cycles; }
#define MAX_BLOCKS 65536
static struct Block g_blocks[MAX_BLOCKS];
static size_t g_block_count;

static void on_block(unsigned int vcpu, void* udata) {
  (void)vcpu;
  struct Block* b = udata;
  if (g_counting) {
    b->executed += b->insns;
    b->executed_cycles += b->cycles;
  }
}

static int by_count(const void* a, const void* b) {
  const struct Block* x = a;
  const struct Block* y = b;
  return x->executed < y->executed ? 1 : x->executed > y->executed ? -1 : 0;
}

static void emit(const char* line) {
  if (g_out) {
    fputs(line, g_out);
  } else {
    qemu_plugin_outs(line);
  }
}

/* Totals per function name, largest first; resets the block counters. */
static void print_profile(void) {
  static struct Block sums[MAX_BLOCKS];
  size_t n = 0;
  for (size_t i = 0; i < g_block_count; ++i) {
    struct Block* b = &g_blocks[i];
    if (b->executed == 0) continue;
    size_t k = 0;
    while (k < n && strcmp(sums[k].symbol, b->symbol) != 0) ++k;
    if (k == n) sums[n++] = (struct Block){b->symbol, 0, 0, 0, 0};
    sums[k].executed += b->executed;
    sums[k].executed_cycles += b->executed_cycles;
    b->executed = 0;
    b->executed_cycles = 0;
  }
  qsort(sums, n, sizeof sums[0], by_count);
  for (size_t k = 0; k < n; ++k) {
    char line[512];
    if (g_cycle_model) {
      snprintf(line, sizeof line, "symbol %s %" PRIu64 " %" PRIu64 "\n", sums[k].symbol, sums[k].executed,
               sums[k].executed_cycles);
    } else {
      snprintf(line, sizeof line, "symbol %s %" PRIu64 "\n", sums[k].symbol, sums[k].executed);
    }
    emit(line);
  }
}

/* A marker instruction's place: its translated block has block_insns instructions, already added
 * at block entry, of which `index` precede the marker. `block` is that block's profile counter. */
#define MARKER_BEGIN 1u
#define MARKER_END 2u
struct Marker {
  unsigned kind;
  uint64_t block_insns, index;
  struct Block* block;
  const struct CycleBlock* cycles; /* with cpu=: the marker block's cycles */
};
#define MAX_MARKERS 4096
static struct Marker g_markers[MAX_MARKERS];
static size_t g_marker_count;

static void on_marker(unsigned int vcpu, void* udata) {
  (void)vcpu;
  const struct Marker* m = udata;
  const uint64_t before_marker = g_executed - m->block_insns + m->index;
  if (m->kind == MARKER_BEGIN) {
    g_begin = before_marker + 1; /* start after the marker instruction */
    g_counting = 1;
    if (m->cycles) g_cycles_begin = g_cycles - m->cycles->cycles + m->cycles->prefix[m->index + 1];
    if (m->cycles && m->cycles->cls) {
      class_totals_before(m->cycles, m->index + 1, g_class_insns_begin, g_class_cycles_begin);
    }
    /* The block was entered before counting began: credit the part of it after the marker. */
    if (m->block) m->block->executed += m->block_insns - m->index - 1;
    if (m->block && m->cycles) m->block->executed_cycles += m->cycles->cycles - m->cycles->prefix[m->index + 1];
  } else if (g_counting) {
    char line[128];
    snprintf(line, sizeof line, "instructions %" PRIu64 "\n", before_marker - g_begin);
    emit(line);
    if (m->cycles) {
      const uint64_t before = g_cycles - m->cycles->cycles + m->cycles->prefix[m->index];
      snprintf(line, sizeof line, "cycles %" PRIu64 "\n", before - g_cycles_begin);
      emit(line);
    }
    if (m->cycles && m->cycles->cls) {
      uint64_t insns[REFILL + 1], cycles[REFILL + 1];
      class_totals_before(m->cycles, m->index, insns, cycles);
      for (int k = 0; k <= REFILL; ++k) {
        const uint64_t ni = insns[k] - g_class_insns_begin[k], nc = cycles[k] - g_class_cycles_begin[k];
        if (ni == 0 && nc == 0) continue;
        snprintf(line, sizeof line, "class %s %" PRIu64 " %" PRIu64 "\n",
                 k == REFILL ? "refill" : qlstm_cm_class_name((enum qlstm_cm_class)k), ni, nc);
        emit(line);
      }
    }
    g_counting = 0;
    /* The block was credited in full at entry: take back the marker and what follows it. */
    if (m->block) m->block->executed -= m->block_insns - m->index;
    if (m->block && m->cycles) m->block->executed_cycles -= m->cycles->cycles - m->cycles->prefix[m->index];
    if (g_profile) print_profile();
    if (g_out) fflush(g_out);
  }
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
  (void)id;
  const size_t n = qemu_plugin_tb_n_insns(tb);
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &g_executed, n);
  struct CycleBlock* cb = NULL;
  if (g_cycle_model && n > 0) {
    cb = cycle_block(tb, n);
    qemu_plugin_register_vcpu_tb_exec_cb(tb, on_cycle_block, QEMU_PLUGIN_CB_NO_REGS, cb);
  }
  struct Block* b = NULL;
  if (g_profile && n > 0) {
    if (g_block_count == MAX_BLOCKS) {
      fprintf(stderr, "qlstm_icount: more than %d translated blocks to profile\n", MAX_BLOCKS);
      exit(1);
    }
    const char* sym = qemu_plugin_insn_symbol(qemu_plugin_tb_get_insn(tb, 0));
    b = &g_blocks[g_block_count++];
    *b = (struct Block){sym ? sym : "?", n, cb ? cb->cycles : 0, 0, 0};
    if (cb) cb->prof = b;
    qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, b);
  }
  for (size_t i = 0; i < n; ++i) {
    struct qemu_plugin_insn* insn = qemu_plugin_tb_get_insn(tb, i);
    const char* sym = qemu_plugin_insn_symbol(insn);
    if (sym == NULL) continue;
    const unsigned kind = strcmp(sym, BEGIN_MARKER) == 0 ? MARKER_BEGIN : strcmp(sym, END_MARKER) == 0 ? MARKER_END : 0u;
    if (kind != 0) {
      if (g_marker_count == MAX_MARKERS) {
        fprintf(stderr, "qlstm_icount: more than %d marker translations\n", MAX_MARKERS);
        exit(1);
      }
      struct Marker* m = &g_markers[g_marker_count++];
      *m = (struct Marker){kind, n, i, b, cb};
      qemu_plugin_register_vcpu_insn_exec_cb(insn, on_marker, QEMU_PLUGIN_CB_NO_REGS, m);
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
    } else if (strcmp(argv[i], "profile=on") == 0) {
      g_profile = 1;
    } else if (strncmp(argv[i], "cpu=", 4) == 0) {
      if (qlstm_cm_cpu_from_name(argv[i] + 4, &g_cpu) != 0) {
        fprintf(stderr, "qlstm_icount: no cycle model for cpu '%s' (cortex-m3, cortex-m4, cortex-m33, cortex-m55)\n",
                argv[i] + 4);
        return -1;
      }
      g_cycle_model = 1;
    } else {
      fprintf(stderr, "qlstm_icount: unknown argument '%s' (expected out=FILE, cpu=NAME or profile=on)\n", argv[i]);
      return -1;
    }
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, on_plugin_exit, NULL);
  return 0;
}
