@ The 16x8 kernels' dot products in assembly (s16_arm.cc's arm_dsp, s16_arm_mve.cc's arm_mve):
@ GCC 12 spills the row pointers (and on Helium the 64-bit accumulators) of the four-row block
@ loop to the stack and reloads them every pass.
@ No alignment is required (unaligned LDR and LDRD of the int32 pairs are architectural on
@ Armv7-M and Armv8-M Mainline for normal memory; the pairs are word aligned anyway).
#if defined(__ARM_ARCH_ISA_THUMB) && __ARM_ARCH_ISA_THUMB >= 2 && defined(__ARM_ARCH_PROFILE) && \
    __ARM_ARCH_PROFILE == 'M' && defined(__ARM_FEATURE_DSP)
    .syntax unified
    .thumb

@ One row's four columns: the weight word at \w (moved on by 4) sign-extended in pairs by
@ SXTB16, (w0, w2) and (w1, w3), times the x pairs r2 = (x0, x2), r3 = (x1, x3) by SMLAD into \s.
.macro ROW_QUAD w, s
    ldr     r11, [\w], #4
    sxtb16  r12, r11
    smlad   \s, r12, r2, \s
    sxtb16  r11, r11, ror #8
    smlad   \s, r11, r3, \s
.endm

@ Four columns of four rows: the x pairs once (LDRD, r0 moved on by 8), then each row's word.
.macro QUAD
    ldrd    r2, r3, [r0], #8
    ROW_QUAD r1, r7
    ROW_QUAD r4, r8
    ROW_QUAD r5, r9
    ROW_QUAD r6, r10
.endm

@ Whole blocks of four rows, 32-bit sums over the columns of `quads` quads:
@   out[r] = sum_{j < 4 quads} x[j] * w[r * n + j]   (mod 2^32), r < 4 * blocks
@ with x as DspS16::Operand pairs it (pairs[2q] = (x[4q], x[4q + 2]), pairs[2q + 1] =
@ (x[4q + 1], x[4q + 3])) and w at row 0's first column, rows n bytes apart.
@ void qlstm_arm_s16_rows4_dsp(const int32_t* pairs, const int8_t* w, int32_t n, int32_t quads,
@                              int32_t blocks, int32_t* out);
@ The column loop takes every core register: pairs, n, quads and the block's w live on the stack
@ (below them the saved registers, then the arguments blocks and out).
    .section .text.qlstm_arm_s16_rows4_dsp, "ax", %progbits
    .global qlstm_arm_s16_rows4_dsp
    .type qlstm_arm_s16_rows4_dsp, %function
    .thumb_func
    .p2align 2
qlstm_arm_s16_rows4_dsp:
    push    {r4-r11, lr}
    sub     sp, sp, #16
    str     r0, [sp]                @ pairs
    str     r2, [sp, #4]            @ n
    str     r3, [sp, #8]            @ quads
    ldr     r12, [sp, #52]          @ blocks (16 bytes + 9 registers up)
    cmp     r12, #0
    ble     9f
1:
    str     r1, [sp, #12]           @ this block's row 0
    ldr     r2, [sp, #4]
    add     r4, r1, r2              @ row 1
    add     r5, r4, r2              @ row 2
    add     r6, r5, r2              @ row 3
    ldr     r0, [sp]
    ldr     lr, [sp, #8]
    movs    r7, #0
    movs    r8, #0
    movs    r9, #0
    movs    r10, #0
    lsrs    lr, lr, #1              @ pairs of quads; C: an odd one
    bcc     2f
    QUAD
2:
    cmp     lr, #0
    beq     4f
3:
    QUAD
    QUAD
    subs    lr, lr, #1
    bne     3b
4:
    ldr     r12, [sp, #56]          @ out
    stmia   r12!, {r7-r10}
    str     r12, [sp, #56]
    ldr     r1, [sp, #12]
    ldr     r2, [sp, #4]
    add     r1, r1, r2, lsl #2      @ the next block's row 0
    ldr     r12, [sp, #52]
    subs    r12, r12, #1
    str     r12, [sp, #52]
    bne     1b
9:
    add     sp, sp, #16
    pop     {r4-r11, pc}
    .size qlstm_arm_s16_rows4_dsp, . - qlstm_arm_s16_rows4_dsp

#endif  /* Thumb-2 M-profile with DSP */

#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
@ Helium: eight columns per pass in a tail-predicated loop (DLSTP/LETP predicate the last,
@ partial pass), the weights sign-extended to int16 lanes by their load (VLDRB.S16), VMLADAVA
@ adds the eight products of a row into its 32-bit sum (even registers: r4, r6, r8, r10). Only
@ q0-q3 are used: q4-q7 are callee-saved.
    .syntax unified
    .thumb

@ acc (r12, moved on by 8) = the int64 bias (r11, moved on by 8) plus the 32-bit sum \s
@ sign-extended; r3 and r5 scratch.
.macro BIAS_PLUS_SUM s
    ldrd    r3, r5, [r11], #8
    adds    r3, r3, \s
    adc     r5, r5, \s, asr #31
    strd    r3, r5, [r12], #8
.endm

@ Whole blocks of four rows of at most blocked::kS16ColumnsPer32BitSum columns (so that the
@ 32-bit sums cannot overflow), each sum then added into its row's int64 bias:
@   acc[r] = bias[r] + sum_{j<n} x[j] * w[r * n + j]   (mod 2^64), r < 4 * blocks
@ void qlstm_arm_s16_rows4_mve(const int16_t* x, const int8_t* w, int32_t n, int32_t blocks,
@                              const int64_t* bias, int64_t* acc);
@ The predicated loop advances the weight pointers by 8 * ceil(n / 8); the next block's row 0
@ starts n - 8 * ceil(n / 8) after where row 3's pointer ends. x and the end of acc live on the
@ stack.
    .section .text.qlstm_arm_s16_rows4_mve, "ax", %progbits
    .global qlstm_arm_s16_rows4_mve
    .type qlstm_arm_s16_rows4_mve, %function
    .thumb_func
    .p2align 2
qlstm_arm_s16_rows4_mve:
    push    {r4-r11, lr}
    cmp     r3, #0
    beq     3f
    ldr     r11, [sp, #36]          @ bias
    ldr     r12, [sp, #40]          @ acc
    add     r4, r12, r3, lsl #5     @ end of acc
    sub     sp, sp, #8
    str     r0, [sp]
    str     r4, [sp, #4]
    add     r0, r2, #7
    bic     r0, r0, #7
    sub     r0, r2, r0              @ n - 8 * ceil(n / 8)
1:
    ldr     r9, [sp]                @ x
    movs    r4, #0
    movs    r6, #0
    mov     r8, #0
    mov     r10, #0
    add     r3, r1, r2              @ row 1
    add     r5, r3, r2              @ row 2
    add     r7, r5, r2              @ row 3 (the widening loads take r0-r7 only)
    dlstp.16 lr, r2
2:
    vldrh.s16    q0, [r9], #16
    vldrb.s16    q1, [r1], #8
    vmladava.s16 r4, q0, q1
    vldrb.s16    q2, [r3], #8
    vmladava.s16 r6, q0, q2
    vldrb.s16    q3, [r5], #8
    vmladava.s16 r8, q0, q3
    vldrb.s16    q1, [r7], #8
    vmladava.s16 r10, q0, q1
    letp    lr, 2b
    BIAS_PLUS_SUM r4
    BIAS_PLUS_SUM r6
    BIAS_PLUS_SUM r8
    BIAS_PLUS_SUM r10
    add     r1, r7, r0              @ the next block's row 0
    ldr     lr, [sp, #4]
    cmp     r12, lr
    bne     1b
    add     sp, sp, #8
3:
    pop     {r4-r11, pc}
    .size qlstm_arm_s16_rows4_mve, . - qlstm_arm_s16_rows4_mve
#endif  /* MVE */
