// The instruction counter's cycle estimate (tools/qemu_icount/cycle_model.c): the decoder's class
// for encodings taken from GNU as (arm-none-eabi-as 2.40, -mcpu=cortex-m4 and
// -march=armv8.1-m.main+mve.fp), and the cycles of short sequences counted by hand from the
// figures in docs/targets.md ("Estimated cycles").
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cycle_model.h"

namespace {

// One instruction as objdump prints it: the first halfword, and the second (0: a 16-bit one).
struct Enc {
  uint16_t h1, h2;
};

qlstm_cm_insn decode(Enc e) {
  const uint8_t bytes[4] = {static_cast<uint8_t>(e.h1), static_cast<uint8_t>(e.h1 >> 8),
                            static_cast<uint8_t>(e.h2), static_cast<uint8_t>(e.h2 >> 8)};
  qlstm_cm_insn i;
  qlstm_cm_decode(bytes, e.h1 >= 0xE800 ? 4 : 2, &i);
  return i;
}

// The cycles of a straight-line run (no taken branch), each instruction after the one before.
unsigned run(qlstm_cm_cpu cpu, const std::vector<Enc>& seq) {
  unsigned total = 0;
  qlstm_cm_insn prev{};
  for (size_t k = 0; k < seq.size(); ++k) {
    const qlstm_cm_insn i = decode(seq[k]);
    total += qlstm_cm_cycles(cpu, &i, k > 0 ? &prev : nullptr);
    prev = i;
  }
  return total;
}

// Encodings (objdump -d of the assembler's output).
constexpr Enc kAdds{0x1888, 0};               // adds r0, r1, r2
constexpr Enc kAddW{0xeb04, 0x0385};          // add.w r3, r4, r5, lsl #2
constexpr Enc kMovw{0xf240, 0x40d2};          // movw r0, #1234
constexpr Enc kLdrR0R1{0x6808, 0};            // ldr r0, [r1]
constexpr Enc kLdrR2R3{0x685a, 0};            // ldr r2, [r3, #4]
constexpr Enc kLdrWReg{0xf855, 0x4026};       // ldr.w r4, [r5, r6, lsl #2]
constexpr Enc kLdrsbReg{0x5688, 0};           // ldrsb r0, [r1, r2]
constexpr Enc kLdrbPost{0xf811, 0x0b01};      // ldrb.w r0, [r1], #1
constexpr Enc kLdrR0R0{0x6800, 0};            // ldr r0, [r0]
constexpr Enc kStrImm{0x6048, 0};             // str r0, [r1, #4]
constexpr Enc kStrReg{0x5088, 0};             // str r0, [r1, r2]
constexpr Enc kStrWPre{0xf841, 0x0d04};       // str.w r0, [r1, #-4]!
constexpr Enc kLdrd{0xe9d2, 0x0102};          // ldrd r0, r1, [r2, #8]
constexpr Enc kStrd{0xe8e2, 0x0102};          // strd r0, r1, [r2], #8
constexpr Enc kLdmia{0xc81e, 0};              // ldmia r0!, {r1-r4}
constexpr Enc kStmdb{0xe92d, 0x4ff0};         // stmdb sp!, {r4-r11, lr}
constexpr Enc kPush{0xb5f0, 0};               // push {r4-r7, lr}
constexpr Enc kPopPc{0xbdf0, 0};              // pop {r4-r7, pc}
constexpr Enc kPopWPc{0xe8bd, 0x8ff0};        // pop.w {r4-r11, pc}
constexpr Enc kLdrPc{0xf85d, 0xfb04};         // ldr.w pc, [sp], #4
constexpr Enc kMuls{0x4348, 0};               // muls r0, r1, r0
constexpr Enc kMulW{0xfb01, 0xf002};          // mul.w r0, r1, r2
constexpr Enc kMla{0xfb01, 0x3002};           // mla r0, r1, r2, r3
constexpr Enc kMls{0xfb01, 0x3012};           // mls r0, r1, r2, r3
constexpr Enc kSmlad{0xfb21, 0x3002};         // smlad r0, r1, r2, r3
constexpr Enc kSmuad{0xfb21, 0xf002};         // smuad r0, r1, r2
constexpr Enc kSmlabb{0xfb11, 0x3002};        // smlabb r0, r1, r2, r3
constexpr Enc kSmmul{0xfb51, 0xf002};         // smmul r0, r1, r2
constexpr Enc kSmull{0xfb82, 0x0103};         // smull r0, r1, r2, r3
constexpr Enc kUmull{0xfba2, 0x0103};         // umull r0, r1, r2, r3
constexpr Enc kSmlal{0xfbc2, 0x0103};         // smlal r0, r1, r2, r3
constexpr Enc kSmlald{0xfbc2, 0x01c3};        // smlald r0, r1, r2, r3
constexpr Enc kSdiv{0xfb91, 0xf0f2};          // sdiv r0, r1, r2
constexpr Enc kUdiv{0xfbb1, 0xf0f2};          // udiv r0, r1, r2
constexpr Enc kB{0xe7fe, 0};                  // b .
constexpr Enc kBne{0xd1fe, 0};                // bne .
constexpr Enc kBeqW{0xf000, 0x87fe};          // beq.w
constexpr Enc kBW{0xf000, 0xbffe};            // b.w
constexpr Enc kCbz{0xb110, 0};                // cbz r0, ...
constexpr Enc kBl{0xf000, 0xf87e};            // bl
constexpr Enc kBxLr{0x4770, 0};               // bx lr
constexpr Enc kBlx{0x4798, 0};                // blx r3
constexpr Enc kMovPc{0x4687, 0};              // mov pc, r0
constexpr Enc kTbb{0xe8d0, 0xf001};           // tbb [r0, r1]
constexpr Enc kTbh{0xe8d0, 0xf011};           // tbh [r0, r1, lsl #1]
constexpr Enc kItEq{0xbf08, 0};               // it eq
constexpr Enc kItteNe{0xbf1a, 0};             // itte ne
constexpr Enc kNop{0xbf00, 0};                // nop
constexpr Enc kNopW{0xf3af, 0x8000};          // nop.w
constexpr Enc kSsat{0xf301, 0x0007};          // ssat r0, #8, r1
constexpr Enc kSxtb{0xb248, 0};               // sxtb r0, r1
constexpr Enc kSxtab{0xfa41, 0xf082};         // sxtab r0, r1, r2
constexpr Enc kSadd16{0xfa91, 0xf002};        // sadd16 r0, r1, r2
constexpr Enc kCmpW{0xebb0, 0x0f01};          // cmp.w r0, r1
constexpr Enc kSubSp{0xb082, 0};              // sub sp, #8
constexpr Enc kLdrLit{0x4802, 0};             // ldr r0, [pc, #8]
constexpr Enc kLdrSp{0x9801, 0};              // ldr r0, [sp, #4]
constexpr Enc kPld{0xf890, 0xf000};           // pld [r0]
constexpr Enc kLdrex{0xe851, 0x0f00};         // ldrex r0, [r1]
constexpr Enc kDmb{0xf3bf, 0x8f5f};           // dmb sy
// Helium and the FPU.
constexpr Enc kVldrbS8{0xed90, 0x1e00};       // vldrb.s8 q0, [r0]
constexpr Enc kVldrbS8Post{0xecb0, 0x1e10};   // vldrb.s8 q0, [r0], #16
constexpr Enc kVldrbS32{0xed91, 0x2f04};      // vldrb.s32 q1, [r1, #4]
constexpr Enc kVldrhU32{0xfd9a, 0x4f00};      // vldrh.u32 q2, [r2]
constexpr Enc kVldrwPre{0xedb3, 0x7f04};      // vldrw.u32 q3, [r3, #16]!
constexpr Enc kVstrb8{0xed80, 0x1e00};        // vstrb.8 q0, [r0]
constexpr Enc kVstrh32Post{0xeca9, 0x2f04};   // vstrh.32 q1, [r1], #8
constexpr Enc kGatherB32{0xfc90, 0x0f02};     // vldrb.u32 q0, [r0, q1]
constexpr Enc kGatherB16{0xec90, 0x0e82};     // vldrb.s16 q0, [r0, q1]
constexpr Enc kGatherB8{0xfc90, 0x0e02};      // vldrb.u8 q0, [r0, q1]
constexpr Enc kGatherH32{0xfc90, 0x0f12};     // vldrh.u32 q0, [r0, q1]
constexpr Enc kGatherH16{0xfc90, 0x0e92};     // vldrh.u16 q0, [r0, q1]
constexpr Enc kGatherW{0xfc90, 0x0f42};       // vldrw.u32 q0, [r0, q1]
constexpr Enc kGatherD{0xfc90, 0x0fd2};       // vldrd.u64 q0, [r0, q1]
constexpr Enc kGatherQW{0xfd92, 0x1e02};      // vldrw.u32 q0, [q1, #8]
constexpr Enc kGatherQD{0xfd92, 0x1f01};      // vldrd.u64 q0, [q1, #8]
constexpr Enc kScatterB32{0xec80, 0x0f02};    // vstrb.32 q0, [r0, q1]
constexpr Enc kScatterB8{0xec80, 0x0e02};     // vstrb.8 q0, [r0, q1]
constexpr Enc kScatterQW{0xfd82, 0x1e02};     // vstrw.32 q0, [q1, #8]
constexpr Enc kVld20{0xfc90, 0x1f00};         // vld20.32 {q0, q1}, [r0]
constexpr Enc kVst40{0xfc80, 0x1f01};         // vst40.32 {q0-q3}, [r0]
constexpr Enc kVmladava{0xeef0, 0x0f22};      // vmladava.s8 r0, q0, q1
constexpr Enc kVmlaldava{0xee80, 0x0e22};     // vmlaldava.s16 r0, r1, q0, q1
constexpr Enc kVmulI32{0xef22, 0x0954};       // vmul.i32 q0, q1, q2
constexpr Enc kVqrdmulh{0xff22, 0x0b44};      // vqrdmulh.s32 q0, q1, q2
constexpr Enc kVqdmulhR{0xee23, 0x0e62};      // vqdmulh.s32 q0, q1, r2
constexpr Enc kVaddI32{0xef22, 0x0844};       // vadd.i32 q0, q1, q2
constexpr Enc kVshlR{0xee39, 0x1e62};         // vshl.s32 q0, r2
constexpr Enc kVmovnb{0xfe35, 0x0e83};        // vmovnb.i32 q0, q1
constexpr Enc kVdup{0xeea0, 0x1b10};          // vdup.32 q0, r1
constexpr Enc kVmovLane{0xee20, 0x1b10};      // vmov.32 q0[1], r1
constexpr Enc kVmov2Lanes{0xec01, 0x0f00};    // vmov r0, r1, q0[2], q0[0]
constexpr Enc kVpst{0xfe71, 0x0f4d};          // vpst
constexpr Enc kVaddv{0xeef9, 0x0f00};         // vaddv.s32 r0, q0
constexpr Enc kDlstp{0xf022, 0xe001};         // dlstp.32 lr, r2
constexpr Enc kVctp{0xf022, 0xe801};          // vctp.32 r2
constexpr Enc kLetp{0xf01f, 0xc003};          // letp lr, ...
constexpr Enc kLe{0xf00f, 0xc003};            // le lr, ...
constexpr Enc kWls{0xf042, 0xc003};           // wls lr, r2, ...
constexpr Enc kVpush{0xed2d, 0x8b04};         // vpush {d8-d9}
constexpr Enc kVpop{0xecbd, 0x8b04};          // vpop {d8-d9}
constexpr Enc kVldrS{0xed90, 0x0a00};         // vldr s0, [r0]
constexpr Enc kVstrS{0xed80, 0x0a00};         // vstr s0, [r0]
constexpr Enc kVaddF{0xee30, 0x0a81};         // vadd.f32 s0, s1, s2
constexpr Enc kVmulF{0xee20, 0x0a81};         // vmul.f32 s0, s1, s2
constexpr Enc kVmlaF{0xee00, 0x0a81};         // vmla.f32 s0, s1, s2
constexpr Enc kVdivF{0xee80, 0x0a81};         // vdiv.f32 s0, s1, s2
constexpr Enc kVmovSR{0xee00, 0x0a10};        // vmov s0, r0
constexpr Enc kVcvt{0xeebd, 0x0ac0};          // vcvt.s32.f32 s0, s0
constexpr Enc kAsrl{0xea50, 0x01ef};          // asrl r0, r1, #3
constexpr Enc kVmsr{0xeee1, 0x0a10};          // vmsr fpscr, r0

TEST(CycleModelDecode, Classes) {
  const struct {
    Enc e;
    qlstm_cm_class cls;
  } cases[] = {
      {kAdds, QLSTM_CM_ALU},       {kAddW, QLSTM_CM_ALU},         {kMovw, QLSTM_CM_ALU},
      {kLdrR0R1, QLSTM_CM_LOAD},   {kLdrWReg, QLSTM_CM_LOAD},     {kLdrsbReg, QLSTM_CM_LOAD},
      {kLdrbPost, QLSTM_CM_LOAD},  {kStrImm, QLSTM_CM_STORE},     {kStrReg, QLSTM_CM_STORE},
      {kStrWPre, QLSTM_CM_STORE},  {kLdrd, QLSTM_CM_LOAD_DUAL},   {kStrd, QLSTM_CM_STORE_DUAL},
      {kLdmia, QLSTM_CM_LOAD_MULTI}, {kStmdb, QLSTM_CM_STORE_MULTI}, {kPush, QLSTM_CM_STORE_MULTI},
      {kPopPc, QLSTM_CM_LOAD_MULTI}, {kPopWPc, QLSTM_CM_LOAD_MULTI}, {kLdrPc, QLSTM_CM_LOAD},
      {kMuls, QLSTM_CM_MUL},       {kMulW, QLSTM_CM_MUL},         {kMla, QLSTM_CM_MAC},
      {kMls, QLSTM_CM_MAC},        {kSmlad, QLSTM_CM_MAC},        {kSmuad, QLSTM_CM_MUL},
      {kSmlabb, QLSTM_CM_MAC},     {kSmmul, QLSTM_CM_MUL},        {kSmull, QLSTM_CM_LONG_MUL},
      {kUmull, QLSTM_CM_LONG_MUL}, {kSmlal, QLSTM_CM_LONG_MAC},   {kSmlald, QLSTM_CM_LONG_MAC},
      {kSdiv, QLSTM_CM_DIV},       {kUdiv, QLSTM_CM_DIV},         {kB, QLSTM_CM_BRANCH},
      {kBne, QLSTM_CM_BRANCH},     {kBeqW, QLSTM_CM_BRANCH},      {kBW, QLSTM_CM_BRANCH},
      {kCbz, QLSTM_CM_BRANCH},     {kBl, QLSTM_CM_CALL},          {kBxLr, QLSTM_CM_BRANCH_INDIRECT},
      {kBlx, QLSTM_CM_CALL},       {kMovPc, QLSTM_CM_BRANCH_INDIRECT}, {kTbb, QLSTM_CM_TABLE_BRANCH},
      {kTbh, QLSTM_CM_TABLE_BRANCH}, {kItEq, QLSTM_CM_IT},        {kNop, QLSTM_CM_ALU},
      {kNopW, QLSTM_CM_ALU},       {kSsat, QLSTM_CM_ALU},         {kSxtb, QLSTM_CM_ALU},
      {kSxtab, QLSTM_CM_ALU},      {kSadd16, QLSTM_CM_ALU},       {kCmpW, QLSTM_CM_ALU},
      {kSubSp, QLSTM_CM_ALU},      {kLdrLit, QLSTM_CM_LOAD},      {kLdrSp, QLSTM_CM_LOAD},
      {kPld, QLSTM_CM_LOAD},       {kLdrex, QLSTM_CM_LOAD},       {kDmb, QLSTM_CM_OTHER},
      {kVldrbS8, QLSTM_CM_MVE_LDST}, {kVldrbS8Post, QLSTM_CM_MVE_LDST}, {kVldrbS32, QLSTM_CM_MVE_LDST},
      {kVldrhU32, QLSTM_CM_MVE_LDST}, {kVldrwPre, QLSTM_CM_MVE_LDST}, {kVstrb8, QLSTM_CM_MVE_LDST},
      {kVstrh32Post, QLSTM_CM_MVE_LDST}, {kVld20, QLSTM_CM_MVE_LDST}, {kVst40, QLSTM_CM_MVE_LDST},
      {kGatherB32, QLSTM_CM_MVE_GATHER}, {kScatterQW, QLSTM_CM_MVE_GATHER},
      {kVmladava, QLSTM_CM_MVE},   {kVmlaldava, QLSTM_CM_MVE},    {kVmulI32, QLSTM_CM_MVE},
      {kVqrdmulh, QLSTM_CM_MVE},   {kVqdmulhR, QLSTM_CM_MVE},     {kVaddI32, QLSTM_CM_MVE},
      {kVshlR, QLSTM_CM_MVE},      {kVmovnb, QLSTM_CM_MVE},       {kVdup, QLSTM_CM_MVE},
      {kVmovLane, QLSTM_CM_FP},    {kVmov2Lanes, QLSTM_CM_MVE},   {kVpst, QLSTM_CM_ALU},
      {kVaddv, QLSTM_CM_MVE},      {kDlstp, QLSTM_CM_ALU},        {kVctp, QLSTM_CM_ALU},
      {kLetp, QLSTM_CM_LOOP_END},  {kLe, QLSTM_CM_LOOP_END},      {kWls, QLSTM_CM_BRANCH},
      {kVpush, QLSTM_CM_FP_MULTI}, {kVpop, QLSTM_CM_FP_MULTI},    {kVldrS, QLSTM_CM_FP_LOAD},
      {kVstrS, QLSTM_CM_FP_LOAD},  {kVaddF, QLSTM_CM_FP},         {kVmulF, QLSTM_CM_FP},
      {kVmlaF, QLSTM_CM_FP_MAC},   {kVdivF, QLSTM_CM_FP_DIV},     {kVmovSR, QLSTM_CM_FP},
      {kVcvt, QLSTM_CM_FP},        {kAsrl, QLSTM_CM_ALU},         {kVmsr, QLSTM_CM_FP},
  };
  for (const auto& c : cases) {
    const qlstm_cm_insn i = decode(c.e);
    EXPECT_EQ(i.cls, c.cls) << std::hex << c.e.h1 << " " << c.e.h2 << ": got " << qlstm_cm_class_name(i.cls)
                            << ", expected " << qlstm_cm_class_name(c.cls);
  }
}

TEST(CycleModelDecode, Details) {
  EXPECT_EQ(decode(kLdmia).nregs, 4u);
  EXPECT_EQ(decode(kStmdb).nregs, 9u);
  EXPECT_EQ(decode(kPush).nregs, 5u);
  EXPECT_EQ(decode(kPopPc).nregs, 5u);
  EXPECT_TRUE(decode(kPopPc).writes_pc);
  EXPECT_FALSE(decode(kPush).writes_pc);
  EXPECT_EQ(decode(kPopWPc).nregs, 9u);
  EXPECT_TRUE(decode(kPopWPc).writes_pc);
  EXPECT_TRUE(decode(kLdrPc).writes_pc);
  EXPECT_FALSE(decode(kPld).writes_pc);
  EXPECT_EQ(decode(kVpush).nregs, 4u);
  EXPECT_TRUE(decode(kBne).conditional);
  EXPECT_TRUE(decode(kBeqW).conditional);
  EXPECT_TRUE(decode(kCbz).conditional);
  EXPECT_TRUE(decode(kLetp).conditional);
  EXPECT_FALSE(decode(kB).conditional);
  EXPECT_FALSE(decode(kBW).conditional);
  EXPECT_EQ(decode(kItEq).it_count, 1u);
  EXPECT_EQ(decode(kItteNe).it_count, 3u);
  EXPECT_TRUE(decode(kStrReg).reg_offset);
  EXPECT_FALSE(decode(kStrImm).reg_offset);
  EXPECT_FALSE(decode(kStrWPre).reg_offset);
  EXPECT_EQ(decode(kLdrR0R1).dest, 0);
  EXPECT_EQ(decode(kLdrR0R1).addr_regs, 1u << 1);
  EXPECT_EQ(decode(kLdrWReg).addr_regs, (1u << 5) | (1u << 6));
  EXPECT_EQ(decode(kAddW).dest, 3);
  EXPECT_EQ(decode(kCmpW).dest, -1);
  // Elements of a gather or scatter: 128 bits over the destination's element size.
  EXPECT_EQ(decode(kGatherB32).elements, 4u);
  EXPECT_EQ(decode(kGatherB16).elements, 8u);
  EXPECT_EQ(decode(kGatherB8).elements, 16u);
  EXPECT_EQ(decode(kGatherH32).elements, 4u);
  EXPECT_EQ(decode(kGatherH16).elements, 8u);
  EXPECT_EQ(decode(kGatherW).elements, 4u);
  EXPECT_EQ(decode(kGatherD).elements, 2u);
  EXPECT_EQ(decode(kGatherQW).elements, 4u);
  EXPECT_EQ(decode(kGatherQD).elements, 2u);
  EXPECT_EQ(decode(kScatterB32).elements, 4u);
  EXPECT_EQ(decode(kScatterB8).elements, 16u);
}

TEST(CycleModel, SingleInstructionCycles) {
  const qlstm_cm_cpu M3 = QLSTM_CM_M3, M4 = QLSTM_CM_M4, M33 = QLSTM_CM_M33, M55 = QLSTM_CM_M55;
  for (qlstm_cm_cpu cpu : {M3, M4, M33}) {
    EXPECT_EQ(run(cpu, {kAdds}), 1u);
    EXPECT_EQ(run(cpu, {kLdrR0R1}), 2u);
    EXPECT_EQ(run(cpu, {kStrImm}), 1u);
    EXPECT_EQ(run(cpu, {kStrReg}), 2u);
    EXPECT_EQ(run(cpu, {kLdrd}), 3u);
    EXPECT_EQ(run(cpu, {kStrd}), 3u);
    EXPECT_EQ(run(cpu, {kLdmia}), 5u);         // 1 + N
    EXPECT_EQ(run(cpu, {kPush}), 6u);          // 1 + N
    EXPECT_EQ(run(cpu, {kPopPc}), 1u + 5u + 3u);  // 1 + N + P (indirect)
    EXPECT_EQ(run(cpu, {kLdrPc}), 2u + 3u);
    EXPECT_EQ(run(cpu, {kMuls}), 1u);
    EXPECT_EQ(run(cpu, {kSdiv}), 12u);
    EXPECT_EQ(run(cpu, {kB}), 3u);             // 1 + P
    EXPECT_EQ(run(cpu, {kBne}), 1u);           // + P when taken, by the plugin
    EXPECT_EQ(run(cpu, {kBl}), 3u);
    EXPECT_EQ(run(cpu, {kBxLr}), 4u);
    EXPECT_EQ(run(cpu, {kBlx}), 4u);
    EXPECT_EQ(run(cpu, {kTbb}), 5u);           // 2 + P
    EXPECT_EQ(run(cpu, {kItEq}), 1u);
    EXPECT_EQ(qlstm_cm_taken_penalty(cpu), 2u);
  }
  // Multiply-accumulate: two cycles on the M3, one with the M4's single-cycle MAC; long
  // multiplies at the M3's worst case.
  EXPECT_EQ(run(M3, {kMla}), 2u);
  EXPECT_EQ(run(M4, {kMla}), 1u);
  EXPECT_EQ(run(M33, {kMla}), 1u);
  EXPECT_EQ(run(M3, {kSmull}), 5u);
  EXPECT_EQ(run(M3, {kSmlal}), 7u);
  EXPECT_EQ(run(M4, {kSmull}), 1u);
  EXPECT_EQ(run(M4, {kSmlal}), 1u);
  EXPECT_EQ(run(M4, {kSmlad}), 1u);
  EXPECT_EQ(run(M4, {kVmlaF}), 3u);
  EXPECT_EQ(run(M4, {kVdivF}), 14u);
  EXPECT_EQ(run(M4, {kVpush}), 5u);
  // Cortex-M55: single-cycle loads and stores, two cycles per Helium instruction, one per element
  // of a gather or scatter.
  EXPECT_EQ(run(M55, {kLdrR0R1}), 1u);
  EXPECT_EQ(run(M55, {kStrReg}), 1u);
  EXPECT_EQ(run(M55, {kSmlad}), 1u);
  EXPECT_EQ(run(M55, {kVldrbS8}), 2u);
  EXPECT_EQ(run(M55, {kVmladava}), 2u);
  EXPECT_EQ(run(M55, {kGatherB32}), 4u);
  EXPECT_EQ(run(M55, {kGatherB16}), 8u);
  EXPECT_EQ(run(M55, {kGatherB8}), 16u);
  EXPECT_EQ(run(M55, {kScatterQW}), 4u);
  EXPECT_EQ(run(M55, {kVpst}), 1u);
  EXPECT_EQ(run(M55, {kLetp}), 1u);
}

TEST(CycleModel, PipelineRulesOfTheM3AndM4) {
  for (qlstm_cm_cpu cpu : {QLSTM_CM_M3, QLSTM_CM_M4, QLSTM_CM_M33}) {
    // Neighbouring loads pipeline: LDR; LDR = 3 cycles, three loads 4.
    EXPECT_EQ(run(cpu, {kLdrR0R1, kLdrR2R3}), 3u);
    EXPECT_EQ(run(cpu, {kLdrR0R1, kLdrR2R3, kLdrWReg}), 4u);
    // ... unless the second one's address is the first one's result.
    EXPECT_EQ(run(cpu, {kLdrR0R1, kLdrR0R0}), 4u);
    // A store after a load pipelines too: LDR; STR Rt, [Rn, Rm] = 3.
    EXPECT_EQ(run(cpu, {kLdrR0R1, kStrReg}), 3u);
    // An address computed by the instruction before stalls a cycle: ADDS r0; LDR [r0] = 1 + 3.
    EXPECT_EQ(run(cpu, {kAdds, kLdrR0R0}), 4u);
    // ... but not when the address does not use it.
    EXPECT_EQ(run(cpu, {kAdds, kLdrR2R3}), 3u);
    // LDRD does not pipeline.
    EXPECT_EQ(run(cpu, {kLdrR0R1, kLdrd}), 5u);
  }
  // A dot-product loop body on the M4: two loads (2 + 1), SMLAD, SUBS, BNE (not taken).
  EXPECT_EQ(run(QLSTM_CM_M4, {kLdrR0R1, kLdrR2R3, kSmlad, kAdds, kBne}), 6u);
  // The same with MLA on the M3 (2 cycles).
  EXPECT_EQ(run(QLSTM_CM_M3, {kLdrR0R1, kLdrR2R3, kMla, kAdds, kBne}), 7u);
}

TEST(CycleModel, HeliumOverlap) {
  const qlstm_cm_cpu M55 = QLSTM_CM_M55;
  // A load then an arithmetic instruction overlap by a cycle: 2 + 1.
  EXPECT_EQ(run(M55, {kVldrbS8, kVmladava}), 3u);
  // VLDR; VADD; VMUL; VSTR alternating memory and arithmetic: 2 + 1 + 2 + 1 = 6.
  EXPECT_EQ(run(M55, {kVldrbS8, kVaddI32, kVmulI32, kVstrb8}), 6u);
  // Two loads, or two arithmetic instructions, do not overlap.
  EXPECT_EQ(run(M55, {kVldrbS8, kVldrbS32}), 4u);
  EXPECT_EQ(run(M55, {kVaddI32, kVmulI32}), 4u);
  // A gather does not overlap: 2 + 4 (+ the arithmetic after it overlaps with the gather).
  EXPECT_EQ(run(M55, {kVldrbS8, kGatherW, kVaddI32}), 2u + 4u + 1u);
  // A tail-predicated loop body: VLDRB, VLDRB, VMLADAVA, LETP: 2 + 2 + 1 + 1.
  EXPECT_EQ(run(M55, {kVldrbS8Post, kVldrbS8, kVmladava, kLetp}), 6u);
}

TEST(CycleModel, CpuNames) {
  qlstm_cm_cpu cpu = QLSTM_CM_M3;
  EXPECT_EQ(qlstm_cm_cpu_from_name("cortex-m4", &cpu), 0);
  EXPECT_EQ(cpu, QLSTM_CM_M4);
  EXPECT_EQ(qlstm_cm_cpu_from_name("cortex-m55-nomve", &cpu), 0);
  EXPECT_EQ(cpu, QLSTM_CM_M55);
  EXPECT_EQ(qlstm_cm_cpu_from_name("cortex-m33", &cpu), 0);
  EXPECT_EQ(cpu, QLSTM_CM_M33);
  EXPECT_EQ(qlstm_cm_cpu_from_name("cortex-m3", &cpu), 0);
  EXPECT_EQ(cpu, QLSTM_CM_M3);
  EXPECT_NE(qlstm_cm_cpu_from_name("cortex-m0", &cpu), 0);
}

}  // namespace
