/* The cycle estimate: decode and cost (cycle_model.h; the figures and their sources are in
 * docs/targets.md, "Estimated cycles"). The decoder follows the Thumb encoding tables of the
 * Armv7-M and Armv8.1-M Architecture Reference Manuals, only as deep as timing needs. */
#include "cycle_model.h"

#include <string.h>

static unsigned popcount16(unsigned v) {
  unsigned n = 0;
  for (v &= 0xFFFFu; v != 0; v &= v - 1) ++n;
  return n;
}

static void set(struct qlstm_cm_insn* o, enum qlstm_cm_class cls, int32_t dest) {
  o->cls = cls;
  o->dest = dest;
}

static void mem(struct qlstm_cm_insn* o, int load, int32_t rt, uint32_t addr_regs) {
  o->cls = load ? QLSTM_CM_LOAD : QLSTM_CM_STORE;
  o->dest = load ? rt : -1;
  o->addr_regs = addr_regs;
}

static void decode16(unsigned h, struct qlstm_cm_insn* o) {
  if (h < 0x2000u) {  // shift by immediate, add/subtract register or 3-bit immediate
    set(o, QLSTM_CM_ALU, (int32_t)(h & 7u));
  } else if (h < 0x4000u) {  // MOV/CMP/ADD/SUB 8-bit immediate
    set(o, QLSTM_CM_ALU, ((h >> 11) & 3u) == 1u ? -1 : (int32_t)((h >> 8) & 7u));
  } else if (h < 0x4400u) {  // data processing on registers
    const unsigned op = (h >> 6) & 0xFu;
    if (op == 0xDu) {
      set(o, QLSTM_CM_MUL, (int32_t)(h & 7u));
    } else {
      set(o, QLSTM_CM_ALU, (op == 0x8u || op == 0xAu || op == 0xBu) ? -1 : (int32_t)(h & 7u));
    }
  } else if (h < 0x4800u) {  // high-register ADD/CMP/MOV, BX, BLX
    const unsigned op = (h >> 8) & 3u;
    const int32_t rdn = (int32_t)(((h >> 4) & 8u) | (h & 7u));
    if (op == 3u) {
      set(o, (h & 0x80u) ? QLSTM_CM_CALL : QLSTM_CM_BRANCH_INDIRECT, -1);
      o->indirect = 1;
    } else if (op == 1u) {
      set(o, QLSTM_CM_ALU, -1);
    } else if (rdn == 15) {
      set(o, QLSTM_CM_BRANCH_INDIRECT, -1);
      o->writes_pc = 1;
    } else {
      set(o, QLSTM_CM_ALU, rdn);
    }
  } else if (h < 0x5000u) {  // LDR (literal)
    mem(o, 1, (int32_t)((h >> 8) & 7u), 1u << 15);
  } else if (h < 0x6000u) {  // load/store with a register offset
    const unsigned op = (h >> 9) & 7u;
    mem(o, op >= 3u, (int32_t)(h & 7u), (1u << ((h >> 3) & 7u)) | (1u << ((h >> 6) & 7u)));
    o->reg_offset = 1;
  } else if (h < 0x9000u) {  // LDR/STR, LDRB/STRB, LDRH/STRH with a 5-bit immediate
    mem(o, (h >> 11) & 1u, (int32_t)(h & 7u), 1u << ((h >> 3) & 7u));
  } else if (h < 0xA000u) {  // SP-relative LDR/STR
    mem(o, (h >> 11) & 1u, (int32_t)((h >> 8) & 7u), 1u << 13);
  } else if (h < 0xB000u) {  // ADR, ADD Rd, SP, #imm
    set(o, QLSTM_CM_ALU, (int32_t)((h >> 8) & 7u));
  } else if (h < 0xC000u) {  // miscellaneous
    if ((h & 0xF500u) == 0xB100u) {  // CBZ, CBNZ
      set(o, QLSTM_CM_BRANCH, -1);
      o->conditional = 1;
    } else if ((h & 0xFE00u) == 0xB400u) {  // PUSH
      set(o, QLSTM_CM_STORE_MULTI, -1);
      o->nregs = popcount16(h & 0x1FFu);
      o->addr_regs = 1u << 13;
    } else if ((h & 0xFE00u) == 0xBC00u) {  // POP
      set(o, QLSTM_CM_LOAD_MULTI, -1);
      o->nregs = popcount16(h & 0x1FFu);
      o->writes_pc = (h >> 8) & 1u;
      o->addr_regs = 1u << 13;
    } else if ((h & 0xFF00u) == 0xBF00u) {  // IT, or a hint (NOP, YIELD, WFI, ...)
      if (h & 0xFu) {
        unsigned mask = h & 0xFu, trailing = 0;
        while (!(mask & 1u)) {
          mask >>= 1;
          ++trailing;
        }
        set(o, QLSTM_CM_IT, -1);
        o->it_count = 4u - trailing;
      } else {
        set(o, QLSTM_CM_ALU, -1);
      }
    } else if ((h & 0xFF00u) == 0xB000u) {  // ADD/SUB SP, SP, #imm
      set(o, QLSTM_CM_ALU, 13);
    } else if ((h & 0xFF00u) == 0xB200u || (h & 0xFF00u) == 0xBA00u) {  // extend, reverse
      set(o, QLSTM_CM_ALU, (int32_t)(h & 7u));
    } else {  // BKPT, CPS, ...
      set(o, QLSTM_CM_OTHER, -1);
    }
  } else if (h < 0xD000u) {  // LDM/STM
    const int load = (h >> 11) & 1u;
    set(o, load ? QLSTM_CM_LOAD_MULTI : QLSTM_CM_STORE_MULTI, -1);
    o->nregs = popcount16(h & 0xFFu);
    o->addr_regs = 1u << ((h >> 8) & 7u);
  } else if (h < 0xE000u) {  // B<cond>, UDF, SVC
    const unsigned cond = (h >> 8) & 0xFu;
    if (cond >= 0xEu) {
      set(o, QLSTM_CM_OTHER, -1);
    } else {
      set(o, QLSTM_CM_BRANCH, -1);
      o->conditional = 1;
    }
  } else {  // B
    set(o, QLSTM_CM_BRANCH, -1);
  }
}

/* Coprocessor space: the FPU (coprocessors 10, 11) and Helium (encodings with 14, 15). */
static void decode_coprocessor(unsigned h1, unsigned h2, struct qlstm_cm_insn* o) {
  const unsigned cp = (h2 >> 8) & 0xFu;
  const int fp = cp == 0xAu || cp == 0xBu, mve = cp == 0xEu || cp == 0xFu;
  if ((h1 & 0xEF00u) == 0xEF00u) {  // Helium data processing (the 0xEF/0xFF space)
    set(o, QLSTM_CM_MVE, -1);
  } else if ((h1 & 0xEE00u) == 0xEC00u) {  // loads and stores, two-register moves
    const int p = (h1 >> 8) & 1u, u = (h1 >> 7) & 1u, w = (h1 >> 5) & 1u;
    if (fp) {
      if ((h1 & 0xFFE0u) == 0xEC40u) {
        set(o, QLSTM_CM_FP, -1);  // VMOV between two core registers and S/D registers
      } else if (p && !w) {
        set(o, QLSTM_CM_FP_LOAD, -1);  // VLDR, VSTR
        o->addr_regs = 1u << (h1 & 0xFu);
      } else {
        set(o, QLSTM_CM_FP_MULTI, -1);  // VLDM, VSTM, VPUSH, VPOP
        o->nregs = h2 & 0xFFu;
        o->addr_regs = 1u << (h1 & 0xFu);
      }
    } else if (mve) {
      if (!p && !w && !u) {
        set(o, QLSTM_CM_MVE, -1);  // VMOV of two lanes to or from two core registers
      } else if (!p && !w) {
        if (!(h2 & 0x1000u)) {  // gather / scatter with a vector of offsets: [Rn, Qm]
          set(o, QLSTM_CM_MVE_GATHER, -1);
          o->elements = 16u >> ((h2 >> 7) & 3u);
        } else {
          set(o, QLSTM_CM_MVE_LDST, -1);  // VLD2x, VLD4x, VST2x, VST4x
        }
      } else if ((h1 & 0x1000u) && (h2 & 0x1000u)) {  // gather / scatter of addresses: [Qm, #imm]
        set(o, QLSTM_CM_MVE_GATHER, -1);
        o->elements = (h2 & 0x100u) ? 2u : 4u;
      } else {
        set(o, QLSTM_CM_MVE_LDST, -1);  // contiguous VLDRx / VSTRx, widening or not
      }
    } else {
      set(o, QLSTM_CM_OTHER, -1);
    }
  } else if ((h1 & 0xEF00u) == 0xEE00u) {  // data processing, register transfers
    if (fp) {
      if (h2 & 0x10u) {  // transfers: VMOV, VMRS, VMSR; VDUP (cp 11) writes a whole Q register
        set(o, ((h1 & 0xFF90u) == 0xEE80u && cp == 0xBu) ? QLSTM_CM_MVE : QLSTM_CM_FP, -1);
      } else {
        const unsigned opc = h1 & 0xB0u;
        if (opc == 0x00u || opc == 0x10u || opc == 0x90u || opc == 0xA0u) {
          set(o, QLSTM_CM_FP_MAC, -1);
        } else if (opc == 0x80u || ((h1 & 0xBFu) == 0xB1u && (h2 & 0xC0u) == 0xC0u)) {
          set(o, QLSTM_CM_FP_DIV, -1);  // VDIV, VSQRT
        } else {
          set(o, QLSTM_CM_FP, -1);
        }
      }
    } else if (mve) {
      if ((h1 & 0xFFB1u) == 0xFE31u && (h2 & 0x1FFFu) == 0x0F4Du) {
        set(o, QLSTM_CM_ALU, -1);  // VPST: sets the predicate, no vector beats
      } else {
        set(o, QLSTM_CM_MVE, -1);
      }
    } else {
      set(o, QLSTM_CM_OTHER, -1);
    }
  } else {
    set(o, QLSTM_CM_OTHER, -1);
  }
}

static void decode32(unsigned h1, unsigned h2, struct qlstm_cm_insn* o) {
  const int32_t rd = (int32_t)((h2 >> 8) & 0xFu);
  if ((h1 & 0xFE40u) == 0xE800u) {  // LDM / STM (IA, DB)
    const unsigned op = (h1 >> 7) & 3u;
    if (op == 1u || op == 2u) {
      const int load = (h1 >> 4) & 1u;
      set(o, load ? QLSTM_CM_LOAD_MULTI : QLSTM_CM_STORE_MULTI, -1);
      o->nregs = popcount16(h2);
      o->writes_pc = load && (h2 & 0x8000u);
      o->addr_regs = 1u << (h1 & 0xFu);
    } else {
      set(o, QLSTM_CM_OTHER, -1);
    }
  } else if ((h1 & 0xFE40u) == 0xE840u) {  // dual, exclusive, table branch
    const int p = (h1 >> 8) & 1u, w = (h1 >> 5) & 1u, load = (h1 >> 4) & 1u;
    if (!p && !w) {
      if ((h1 & 0xFFF0u) == 0xE8D0u && (h2 & 0xFFE0u) == 0xF000u) {
        set(o, QLSTM_CM_TABLE_BRANCH, -1);
      } else {
        mem(o, load, (int32_t)(h2 >> 12), 1u << (h1 & 0xFu));  // LDREX/STREX (B, H)
      }
    } else {
      set(o, load ? QLSTM_CM_LOAD_DUAL : QLSTM_CM_STORE_DUAL, -1);
      o->addr_regs = 1u << (h1 & 0xFu);
    }
  } else if ((h1 & 0xFE00u) == 0xEA00u) {  // data processing, shifted register (and MVE long shifts)
    set(o, QLSTM_CM_ALU, rd == 15 ? -1 : rd);
  } else if ((h1 & 0xEC00u) == 0xEC00u) {
    decode_coprocessor(h1, h2, o);
  } else if ((h1 & 0xF800u) == 0xF000u && (h2 & 0x8000u)) {  // branches, misc control
    const unsigned op = h2 & 0xD000u;
    if (op == 0xD000u) {
      set(o, QLSTM_CM_CALL, -1);  // BL
    } else if (op == 0x9000u) {
      set(o, QLSTM_CM_BRANCH, -1);  // B.W
    } else if (op == 0x8000u) {
      if (((h1 >> 7) & 7u) != 7u) {
        set(o, QLSTM_CM_BRANCH, -1);  // B<cond>.W
        o->conditional = 1;
      } else if ((h1 & 0xFFF0u) == 0xF3E0u) {
        set(o, QLSTM_CM_ALU, rd);  // MRS
      } else if (h1 == 0xF3AFu) {
        set(o, QLSTM_CM_ALU, -1);  // NOP.W and the other hints
      } else {
        set(o, QLSTM_CM_OTHER, -1);  // MSR, barriers, ...
      }
    } else if ((h2 & 0xF000u) == 0xE000u) {
      set(o, QLSTM_CM_ALU, -1);  // Armv8.1-M: DLS, DLSTP, VCTP, BF: no branch here
    } else if ((h1 & 0xFu) == 0xFu) {
      set(o, QLSTM_CM_LOOP_END, -1);  // LE, LETP
      o->conditional = 1;
    } else {
      set(o, QLSTM_CM_BRANCH, -1);  // WLS, WLSTP: skips the loop when the count is zero
      o->conditional = 1;
    }
  } else if ((h1 & 0xF800u) == 0xF000u) {  // data processing, immediate
    set(o, QLSTM_CM_ALU, rd == 15 ? -1 : rd);
  } else if ((h1 & 0xFE00u) == 0xF800u) {  // single loads and stores
    const unsigned rn = h1 & 0xFu, rt = h2 >> 12;
    const int load = (h1 >> 4) & 1u;
    const int reg_offset = rn != 15u && !(h1 & 0x80u) && (h2 & 0xFC0u) == 0u;
    mem(o, load, (int32_t)rt, (1u << rn) | (reg_offset ? 1u << (h2 & 0xFu) : 0u));
    o->reg_offset = reg_offset;
    if (load && rt == 15u) {
      if (((h1 >> 5) & 3u) == 2u) {
        o->writes_pc = 1;  // LDR PC, ...
      }
      o->dest = -1;  // or PLD / PLI
    }
  } else if ((h1 & 0xFF00u) == 0xFA00u) {  // data processing, register (shifts, extend, SIMD add)
    set(o, QLSTM_CM_ALU, rd);
  } else if ((h1 & 0xFF80u) == 0xFB00u) {  // multiply, multiply-accumulate, 32-bit result
    const unsigned op1 = (h1 >> 4) & 7u, ra = h2 >> 12;
    set(o, ra == 15u && !(op1 == 0u && (h2 & 0xF0u) == 0x10u) ? QLSTM_CM_MUL : QLSTM_CM_MAC, rd);
  } else if ((h1 & 0xFF80u) == 0xFB80u) {  // long multiply, long multiply-accumulate, divide
    const unsigned op1 = (h1 >> 4) & 7u;
    set(o, op1 == 1u || op1 == 3u ? QLSTM_CM_DIV : op1 == 0u || op1 == 2u ? QLSTM_CM_LONG_MUL : QLSTM_CM_LONG_MAC,
        -1);
  } else {
    set(o, QLSTM_CM_OTHER, -1);
  }
}

void qlstm_cm_decode(const uint8_t* bytes, size_t size, struct qlstm_cm_insn* out) {
  memset(out, 0, sizeof *out);
  out->dest = -1;
  const unsigned h1 = (unsigned)bytes[0] | (unsigned)bytes[1] << 8;
  if (size >= 4) {
    decode32(h1, (unsigned)bytes[2] | (unsigned)bytes[3] << 8, out);
  } else {
    decode16(h1, out);
  }
}

/* P for a direct branch (its target known at decode) and for one whose target comes from a
 * register or memory (docs/targets.md). */
static unsigned refill_direct(enum qlstm_cm_cpu cpu) {
  (void)cpu;
  return 2;
}
static unsigned refill_indirect(enum qlstm_cm_cpu cpu) {
  (void)cpu;
  return 3;
}

unsigned qlstm_cm_taken_penalty(enum qlstm_cm_cpu cpu) { return refill_direct(cpu); }

static int is_single_load(const struct qlstm_cm_insn* i) { return i && i->cls == QLSTM_CM_LOAD && !i->writes_pc; }

static int writes_address_reg(const struct qlstm_cm_insn* prev, const struct qlstm_cm_insn* i) {
  return prev && (prev->cls == QLSTM_CM_ALU || prev->cls == QLSTM_CM_MUL || prev->cls == QLSTM_CM_MAC) &&
         prev->dest >= 0 && (i->addr_regs >> prev->dest) & 1u;
}

static int is_mve_memory(const struct qlstm_cm_insn* i) {
  return i && (i->cls == QLSTM_CM_MVE_LDST || i->cls == QLSTM_CM_MVE_GATHER);
}

/* What every modelled core charges alike (the M4's table; on the M33 and M55 assumed the same):
 * multiple transfers, divides, branches and the FPU. Returns 0 for the other classes. */
static unsigned cycles_common(enum qlstm_cm_cpu cpu, const struct qlstm_cm_insn* i) {
  const unsigned pd = refill_direct(cpu), pi = refill_indirect(cpu);
  switch (i->cls) {
    case QLSTM_CM_LOAD_MULTI:
      return 1u + i->nregs + (i->writes_pc ? pi : 0u);
    case QLSTM_CM_STORE_MULTI:
      return 1u + i->nregs;
    case QLSTM_CM_DIV:
      return 12u;  // 2 to 12 by the operands; the worst case
    case QLSTM_CM_BRANCH:
      return i->conditional ? 1u : 1u + pd;  // a conditional one: + P when taken (the caller)
    case QLSTM_CM_BRANCH_INDIRECT:
      return 1u + pi;
    case QLSTM_CM_CALL:
      return 1u + (i->indirect ? pi : pd);
    case QLSTM_CM_TABLE_BRANCH:
      return 2u + pi;
    case QLSTM_CM_FP_MAC:
      return 3u;
    case QLSTM_CM_FP_DIV:
      return 14u;
    case QLSTM_CM_FP_LOAD:
      return 2u;
    case QLSTM_CM_FP_MULTI:
      return 1u + i->nregs;
    default:
      return 0u;
  }
}

/* Cortex-M3, M4 and (assumed the same pipeline) M33. */
static unsigned cycles_v7m(enum qlstm_cm_cpu cpu, const struct qlstm_cm_insn* i, const struct qlstm_cm_insn* prev) {
  const int m3 = cpu == QLSTM_CM_M3;
  /* A load or store whose address uses the result of the instruction before stalls a cycle. */
  const unsigned agu_stall = writes_address_reg(prev, i) ? 1u : 0u;
  switch (i->cls) {
    case QLSTM_CM_LOAD:
      if (i->writes_pc) return 2u + refill_indirect(cpu) + agu_stall;
      /* Neighbouring single loads pipeline: one cycle less unless the address needs the earlier
       * load's result. */
      if (is_single_load(prev) && !(prev->dest >= 0 && ((i->addr_regs >> prev->dest) & 1u))) return 1u;
      return 2u + agu_stall;
    case QLSTM_CM_STORE:
      if (!i->reg_offset) return 1u + agu_stall;  // immediate offset: one cycle (write buffer)
      return (is_single_load(prev) ? 1u : 2u) + agu_stall;
    case QLSTM_CM_LOAD_DUAL:
    case QLSTM_CM_STORE_DUAL:
      return 3u + agu_stall;  // 1 + N, N = 2; never pipelined with a neighbour
    case QLSTM_CM_LOAD_MULTI:
    case QLSTM_CM_STORE_MULTI:
      return cycles_common(cpu, i) + agu_stall;
    case QLSTM_CM_MAC:
      return m3 ? 2u : 1u;
    case QLSTM_CM_LONG_MUL:
      return m3 ? 5u : 1u;  // M3: 3 to 5 by the operands; the worst case
    case QLSTM_CM_LONG_MAC:
      return m3 ? 7u : 1u;  // M3: 4 to 7
    case QLSTM_CM_MVE_GATHER:
      return i->elements;
    case QLSTM_CM_MVE:
    case QLSTM_CM_MVE_LDST:
      return 2u;
    default: {
      const unsigned c = cycles_common(cpu, i);
      return c != 0u ? c : 1u;  // ALU, IT, MUL, LOOP_END, FP, OTHER: 1
    }
  }
}

/* Cortex-M55: the scalar pipeline issues a load, store or multiply each cycle; Helium runs each
 * 128-bit instruction as 4 beats, 2 per cycle, and overlaps a memory instruction with a
 * neighbouring arithmetic one by a cycle. */
static unsigned cycles_m55(const struct qlstm_cm_insn* i, const struct qlstm_cm_insn* prev) {
  switch (i->cls) {
    case QLSTM_CM_LOAD:
      return i->writes_pc ? 1u + refill_indirect(QLSTM_CM_M55) : 1u;
    case QLSTM_CM_LOAD_DUAL:
    case QLSTM_CM_STORE_DUAL:
      return 2u;
    case QLSTM_CM_MVE:
      return is_mve_memory(prev) ? 1u : 2u;
    case QLSTM_CM_MVE_LDST:
      return prev && prev->cls == QLSTM_CM_MVE ? 1u : 2u;
    case QLSTM_CM_MVE_GATHER:
      return i->elements > 2u ? i->elements : 2u;
    default: {
      const unsigned c = cycles_common(QLSTM_CM_M55, i);
      return c != 0u ? c : 1u;  // ALU, IT, STORE, MUL, MAC, LONG_MUL, LONG_MAC, LOOP_END, FP, OTHER: 1
    }
  }
}

unsigned qlstm_cm_cycles(enum qlstm_cm_cpu cpu, const struct qlstm_cm_insn* insn, const struct qlstm_cm_insn* prev) {
  return cpu == QLSTM_CM_M55 ? cycles_m55(insn, prev) : cycles_v7m(cpu, insn, prev);
}

int qlstm_cm_cpu_from_name(const char* name, enum qlstm_cm_cpu* cpu) {
  static const struct {
    const char* name;
    enum qlstm_cm_cpu cpu;
  } names[] = {{"cortex-m3", QLSTM_CM_M3},
               {"cortex-m4", QLSTM_CM_M4},
               {"cortex-m33", QLSTM_CM_M33},
               {"cortex-m55", QLSTM_CM_M55},
               {"cortex-m55-nomve", QLSTM_CM_M55}};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; ++k) {
    if (strcmp(name, names[k].name) == 0) {
      *cpu = names[k].cpu;
      return 0;
    }
  }
  return -1;
}

const char* qlstm_cm_class_name(enum qlstm_cm_class cls) {
  static const char* const names[QLSTM_CM_CLASS_COUNT] = {
      "alu",  "it",     "load",   "store",      "load_dual",     "store_dual", "load_multi",
      "store_multi", "mul", "mac", "long_mul", "long_mac", "div", "branch", "branch_indirect",
      "call", "table_branch", "loop_end", "fp", "fp_mac", "fp_div", "fp_load", "fp_multi",
      "mve",  "mve_ldst", "mve_gather", "other"};
  return (unsigned)cls < QLSTM_CM_CLASS_COUNT ? names[cls] : "?";
}
