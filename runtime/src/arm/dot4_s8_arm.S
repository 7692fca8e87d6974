@ Four int8 dot products sharing one vector, for the Arm gate stage (lstm_s8_arm.cc):
@   acc[k] += sum_{j<n} v[j] * w[k * stride + j]   (mod 2^32), k = 0..3
@ void qlstm_arm_dot4_s8_thumb2(const int8_t* v, const int8_t* w, int32_t stride, int32_t n, int32_t acc[4]);
@ void qlstm_arm_dot4_s8_dsp(const int8_t* v, const int8_t* w, int32_t stride, int32_t n, int32_t acc[4]);
@ void qlstm_arm_dot4_s8_mve(const int8_t* v, const int8_t* w, int32_t stride, int32_t n, int32_t acc[4]);
@ In assembly because the instruction count is the product: GCC 12 spills and re-associates
@ these loops. No alignment is required (unaligned LDR is architectural on Armv7-M and
@ Armv8-M Mainline for normal memory).
#if defined(__ARM_ARCH_ISA_THUMB) && __ARM_ARCH_ISA_THUMB >= 2 && defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
    .syntax unified
    .thumb
    .text

@ One column: a load of v and, per row, a load and a multiply-accumulate.
.macro COLUMN_THUMB2
    ldrsb   r2, [r0], #1
    ldrsb   r11, [r1], #1
    mla     r4, r2, r11, r4
    ldrsb   r11, [r8], #1
    mla     r5, r2, r11, r5
    ldrsb   r11, [r9], #1
    mla     r6, r2, r11, r6
    ldrsb   r11, [r10], #1
    mla     r7, r2, r11, r7
.endm

@ Byte loads and MLA; four columns per loop pass, then the last 0..3 one at a time.
    .global qlstm_arm_dot4_s8_thumb2
    .type qlstm_arm_dot4_s8_thumb2, %function
    .thumb_func
    .p2align 2
qlstm_arm_dot4_s8_thumb2:
    push    {r4-r11, lr}
    ldr     r12, [sp, #36]          @ acc
    ldm     r12, {r4-r7}            @ the four accumulators
    add     r8, r1, r2              @ row 1
    add     r9, r8, r2              @ row 2
    add     r10, r9, r2             @ row 3
    subs    r3, r3, #4
    blt     2f
1:
    COLUMN_THUMB2
    COLUMN_THUMB2
    COLUMN_THUMB2
    COLUMN_THUMB2
    subs    r3, r3, #4
    bge     1b
2:
    adds    r3, r3, #4
    beq     4f
3:
    COLUMN_THUMB2
    subs    r3, r3, #1
    bne     3b
4:
    stm     r12, {r4-r7}
    pop     {r4-r11, pc}
    .size qlstm_arm_dot4_s8_thumb2, . - qlstm_arm_dot4_s8_thumb2

#if defined(__ARM_FEATURE_DSP)
@ Four columns: the v bytes become the int16 pairs (v0, v2) and (v1, v3) with SXTB16, each
@ row's four weights likewise, and SMLAD adds both products of a pair (wrapping, as the
@ reference does).
.macro QUAD_DSP
    ldr     r11, [r0], #4           @ v0..v3
    sxtb16  r2, r11                 @ (v0, v2)
    sxtb16  r11, r11, ror #8        @ (v1, v3)
    ldr     lr, [r1], #4
    sxtb16  r12, lr
    smlad   r4, r2, r12, r4
    sxtb16  lr, lr, ror #8
    smlad   r4, r11, lr, r4
    ldr     lr, [r8], #4
    sxtb16  r12, lr
    smlad   r5, r2, r12, r5
    sxtb16  lr, lr, ror #8
    smlad   r5, r11, lr, r5
    ldr     lr, [r9], #4
    sxtb16  r12, lr
    smlad   r6, r2, r12, r6
    sxtb16  lr, lr, ror #8
    smlad   r6, r11, lr, r6
    ldr     lr, [r10], #4
    sxtb16  r12, lr
    smlad   r7, r2, r12, r7
    sxtb16  lr, lr, ror #8
    smlad   r7, r11, lr, r7
.endm

@ Eight columns per loop pass, then four, then the last 0..3 one at a time.
    .global qlstm_arm_dot4_s8_dsp
    .type qlstm_arm_dot4_s8_dsp, %function
    .thumb_func
    .p2align 2
qlstm_arm_dot4_s8_dsp:
    push    {r4-r11, lr}
    ldr     r12, [sp, #36]          @ acc
    ldm     r12, {r4-r7}
    add     r8, r1, r2              @ row 1
    add     r9, r8, r2              @ row 2
    add     r10, r9, r2             @ row 3
    subs    r3, r3, #8
    blt     2f
1:
    QUAD_DSP
    QUAD_DSP
    subs    r3, r3, #8
    bge     1b
2:
    adds    r3, r3, #8
    cmp     r3, #4
    blt     3f
    QUAD_DSP
    subs    r3, r3, #4
3:
    cbz     r3, 5f
4:
    COLUMN_THUMB2
    subs    r3, r3, #1
    bne     4b
5:
    ldr     r12, [sp, #36]
    stm     r12, {r4-r7}
    pop     {r4-r11, pc}
    .size qlstm_arm_dot4_s8_dsp, . - qlstm_arm_dot4_s8_dsp
#endif  /* __ARM_FEATURE_DSP */
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
@ Helium: sixteen columns per pass in a tail-predicated loop (DLSTP/LETP predicate the last,
@ partial pass), VMLADAVA adds the sixteen products of a row into its 32-bit accumulator
@ (wrapping). VMLADAVA needs even accumulator registers: r4, r6, r8, r10. Only q0-q3 are
@ used: q4-q7 are callee-saved.
@ void qlstm_arm_dot4_s8_mve(const int8_t* v, const int8_t* w, int32_t stride, int32_t n, int32_t acc[4]);
    .syntax unified
    .thumb
    .text
    .global qlstm_arm_dot4_s8_mve
    .type qlstm_arm_dot4_s8_mve, %function
    .thumb_func
    .p2align 2
qlstm_arm_dot4_s8_mve:
    push    {r4-r10, lr}
    ldr     r12, [sp, #32]          @ acc
    ldr     r4, [r12]
    ldr     r6, [r12, #4]
    ldr     r8, [r12, #8]
    ldr     r10, [r12, #12]
    add     r5, r1, r2              @ row 1
    add     r7, r5, r2              @ row 2
    add     r9, r7, r2              @ row 3
    dlstp.8 lr, r3
1:
    vldrb.s8    q0, [r0], #16
    vldrb.s8    q1, [r1], #16
    vmladava.s8 r4, q0, q1
    vldrb.s8    q2, [r5], #16
    vmladava.s8 r6, q0, q2
    vldrb.s8    q3, [r7], #16
    vmladava.s8 r8, q0, q3
    vldrb.s8    q1, [r9], #16
    vmladava.s8 r10, q0, q1
    letp    lr, 1b
    str     r4, [r12]
    str     r6, [r12, #4]
    str     r8, [r12, #8]
    str     r10, [r12, #12]
    pop     {r4-r10, pc}
    .size qlstm_arm_dot4_s8_mve, . - qlstm_arm_dot4_s8_mve
#endif  /* MVE */

#endif  /* Thumb-2 M-profile */
