/* The cycle estimate of the instruction counter: a decoder that sorts each Thumb / Thumb-2 / MVE
 * instruction into a timing class, and the cycles each class costs on one CPU model, from the
 * processors' published timing tables (docs/targets.md, "Estimated cycles", lists every figure
 * and its source). Plain C, no QEMU headers: the plugin (qlstm_icount.c) and the host unit test
 * (tests/unit/cycle_model_test.cc) link the same file. */
#ifndef QLSTM_CYCLE_MODEL_H
#define QLSTM_CYCLE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum qlstm_cm_cpu { QLSTM_CM_M3, QLSTM_CM_M4, QLSTM_CM_M33, QLSTM_CM_M55, QLSTM_CM_CPU_COUNT };

enum qlstm_cm_class {
  QLSTM_CM_ALU,          /* data processing, moves, shifts, extends, saturation, SIMD add, hints */
  QLSTM_CM_IT,           /* IT */
  QLSTM_CM_LOAD,         /* LDR/LDRB/LDRH/LDRSB/LDRSH/LDREX/PLD, one register */
  QLSTM_CM_STORE,        /* STR/STRB/STRH/STREX, one register */
  QLSTM_CM_LOAD_DUAL,    /* LDRD */
  QLSTM_CM_STORE_DUAL,   /* STRD */
  QLSTM_CM_LOAD_MULTI,   /* LDM, POP: nregs registers */
  QLSTM_CM_STORE_MULTI,  /* STM, PUSH: nregs registers */
  QLSTM_CM_MUL,          /* MUL, SMULxy, SMUAD, SMULWy, SMMUL, ... (32-bit result) */
  QLSTM_CM_MAC,          /* MLA, MLS, SMLAxy, SMLAD, SMLAWy, SMMLA, USADA8 (32-bit accumulate) */
  QLSTM_CM_LONG_MUL,     /* SMULL, UMULL */
  QLSTM_CM_LONG_MAC,     /* SMLAL, UMLAL, UMAAL, SMLALxy, SMLALD, SMLSLD */
  QLSTM_CM_DIV,          /* SDIV, UDIV (charged at their worst case) */
  QLSTM_CM_BRANCH,       /* B, B<cc>, CBZ/CBNZ, WLS: direct branches */
  QLSTM_CM_BRANCH_INDIRECT, /* BX, MOV/ADD to PC (LDR/POP/LDM to PC are loads with writes_pc) */
  QLSTM_CM_CALL,         /* BL, BLX */
  QLSTM_CM_TABLE_BRANCH, /* TBB, TBH */
  QLSTM_CM_LOOP_END,     /* LE, LETP (Armv8.1-M low-overhead loop end) */
  QLSTM_CM_FP,           /* VFP data processing, moves between core and FP registers */
  QLSTM_CM_FP_MAC,       /* VMLA/VMLS/VNMLA/VFMA/... (scalar FP multiply-accumulate) */
  QLSTM_CM_FP_DIV,       /* VDIV, VSQRT */
  QLSTM_CM_FP_LOAD,      /* VLDR/VSTR of an S or D register */
  QLSTM_CM_FP_MULTI,     /* VLDM/VSTM/VPUSH/VPOP: nregs words */
  QLSTM_CM_MVE,          /* a Helium data-processing instruction (one 128-bit vector, 4 beats) */
  QLSTM_CM_MVE_LDST,     /* a contiguous Helium load or store (VLDR/VSTR, VLD2/VLD4, VST2/VST4) */
  QLSTM_CM_MVE_GATHER,   /* a Helium gather load or scatter store: `elements` element accesses */
  QLSTM_CM_OTHER,        /* anything else (barriers, system): one cycle */
  QLSTM_CM_CLASS_COUNT
};

struct qlstm_cm_insn {
  enum qlstm_cm_class cls;
  unsigned nregs;         /* LOAD_MULTI / STORE_MULTI / FP_MULTI: registers (words) transferred */
  unsigned elements;      /* MVE_GATHER: elements accessed */
  int writes_pc;          /* loads PC (POP {..., pc}, LDR pc, LDM with pc) or writes it (MOV pc) */
  int conditional;        /* a branch that may fall through (B<cc>, CBZ, WLS, LE, or inside IT) */
  int reg_offset;         /* STORE: register offset (STR Rt, [Rn, Rm]) */
  int indirect;           /* CALL: BLX Rm (the target from a register) */
  int32_t dest;           /* LOAD: Rt; ALU/MUL: the register written; -1 none or unknown */
  uint32_t addr_regs;     /* LOAD/STORE: bit mask of the registers that form the address */
  unsigned it_count;      /* IT: instructions the IT block covers (1-4) */
};

/* Decodes one instruction from its bytes (little-endian halfwords, `size` 2 or 4). */
void qlstm_cm_decode(const uint8_t* bytes, size_t size, struct qlstm_cm_insn* out);

/* The cycles of `insn` on `cpu` when it follows `prev` in the same straight-line run (NULL: no
 * known predecessor), without the refill of a taken conditional branch, which the caller adds
 * with qlstm_cm_taken_penalty when the branch was taken. Unconditional branches include it. */
unsigned qlstm_cm_cycles(enum qlstm_cm_cpu cpu, const struct qlstm_cm_insn* insn, const struct qlstm_cm_insn* prev);

/* P: the pipeline refill of a taken branch on `cpu`. */
unsigned qlstm_cm_taken_penalty(enum qlstm_cm_cpu cpu);

/* "cortex-m3", "cortex-m4", "cortex-m33", "cortex-m55" (and "cortex-m55-nomve"): 0 and *cpu set;
 * anything else: -1. */
int qlstm_cm_cpu_from_name(const char* name, enum qlstm_cm_cpu* cpu);

const char* qlstm_cm_class_name(enum qlstm_cm_class cls);

#ifdef __cplusplus
}
#endif

#endif
