@ The 16x8 kernels' dot products in assembly (s16_arm.cc's arm_dsp): GCC 12 spills the row
@ pointers of the four-row block loop to the stack and reloads them every four columns.
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
