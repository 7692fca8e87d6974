@ The Arm gate stages (lstm_s8_arm.cc, lstm_s8_arm_mve.cc; blocked::gate_chunked): the dot
@ products of whole blocks of four rows sharing one vector, then the requantization and the
@ activation of a chunk of rows. The fully connected op (fc_s8_arm*.cc) shares the dot products
@ and has its own finish here; the GRU (gru_s8_arm*.cc) shares both and has its update and output.
@ In assembly because the instruction count is the product: GCC 12 spills and re-associates
@ these loops. No alignment is required (unaligned LDR is architectural on Armv7-M and
@ Armv8-M Mainline for normal memory).
#if defined(__ARM_ARCH_ISA_THUMB) && __ARM_ARCH_ISA_THUMB >= 2 && defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
    .syntax unified
    .thumb
    .text

@ Each function in its own section, so that the linker's --gc-sections drops the ones a
@ firmware does not call (a Cortex-M55 build need not carry the DSP loops).
.macro FUNCTION name
    .section .text.\name, "ax", %progbits
    .global \name
    .type \name, %function
    .thumb_func
    .p2align 2
\name:
.endm

@ One column: a load of v and of the four rows' weights back to back (each load after the first
@ pipelines with the one before it: rows 1 and 3 by register offset from rows 0 and 2, r9 = the
@ row stride), then the four multiply-accumulates.
.macro COLUMN_THUMB2
    ldrsb   r2, [r0], #1
    ldrsb   r10, [r1, r9]
    ldrsb   r11, [r1], #1
    ldrsb   r12, [r8, r9]
    ldrsb   lr, [r8], #1
    mla     r4, r2, r11, r4
    mla     r5, r2, r10, r5
    mla     r6, r2, lr, r6
    mla     r7, r2, r12, r7
.endm

@ The four rows' dot products (r4-r7 += v . row k, rows 0 and 2 at r1 and r8, rows 1 and 3 r9
@ (the row stride n) after them, v at r0, r3 = n columns; r2, r10-r12 and lr scratch), by byte
@ loads and MLA: four columns per loop pass, then the last 0..3 one at a time.
.macro COLUMNS_THUMB2
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
.endm

@ Whole blocks of four rows in one call (the per-call cost is paid once per gate chunk):
@   acc[r] = bias[r] + sum_{j<n} v[j] * w[r * n + j]   (mod 2^32), r < 4 * blocks
@ void qlstm_arm_rows4_s8_{thumb2,dsp,mve}(const int8_t* v, const int8_t* w, int32_t n,
@                                          int32_t blocks, const int32_t* bias, int32_t* acc);
@ Every core register is taken by the column loop: v, n, the end of acc, bias and acc live on
@ the stack; r9 keeps n, the rows' stride.
.macro ROWS4 name, columns
    FUNCTION \name
    push    {r4-r11, lr}
    cmp     r3, #0
    beq     9f
    sub     sp, sp, #12
    str     r0, [sp]                @ v
    str     r2, [sp, #4]            @ n
    mov     r9, r2                  @ the row stride
    ldr     r12, [sp, #52]          @ acc (12 bytes + 9 registers up)
    add     r12, r12, r3, lsl #4
    str     r12, [sp, #8]           @ the end of acc
7:
    ldr     r12, [sp, #48]          @ bias (12 bytes + 9 registers up)
    ldm     r12!, {r4-r7}
    str     r12, [sp, #48]
    ldr     r0, [sp]
    mov     r3, r9
    add     r8, r1, r9, lsl #1      @ row 2
    \columns
    ldr     r12, [sp, #52]          @ acc
    stm     r12!, {r4-r7}
    str     r12, [sp, #52]
    add     r1, r8, r9              @ the next block's row 0: right after row 3 (r8 ends at row 3)
    ldr     r3, [sp, #8]
    cmp     r12, r3
    bne     7b
    add     sp, sp, #12
9:
    pop     {r4-r11, pc}
    .size \name, . - \name
.endm

    ROWS4 qlstm_arm_rows4_s8_thumb2, COLUMNS_THUMB2

@ The rest of a gate for n rows, one row per pass, any Thumb-2 core: requantize both
@ accumulators, add, saturate (docs/arithmetic.md §3), then sigmoid or tanh by the table (§4):
@   out[r] = act(sat16(sat16(rq_x(ax[r])) + rq_h(ah[r])))   in Q0.15,  ah = ax + CHUNK_ROWS
@ void qlstm_arm_gate_finish_{sigmoid,tanh}_thumb2(const int32_t* ax, int32_t n, int16_t* out,
@                                                  const qlstm_arm_gate_finish_t2_params* p);
@ p: x's and h's requantization (left shift, multiplier, right shift, remainder mask, half the
@ mask), the table's address and the address of its entry 1 (lstm_s8_arm.cc). All core
@ registers are live: the parameters are reloaded with one LDM per row.
    .equ    CHUNK_ROWS, 64          @ blocked::kChunkRows
    .equ    AH_AFTER_AX, 4 * CHUNK_ROWS - 4    @ ah[r] from ax + r + 1 (after the post-increment)

@ r9 = requantize(r9) with r4 left, r5 multiplier, r6 right, r7 mask, r8 half; r10 scratch.
@ SRDHM: the 64-bit x * m + 2^30, shifted right 31. Rounding divide: add 1 where the remainder
@ exceeds half the mask (plus 1 for negative values), i.e. where half + neg - remainder < 0.
.macro REQUANT_SCALAR
    lsl     r9, r9, r4
    smull   r10, r9, r9, r5         @ r10: low word, r9: high word
    adds    r10, r10, #0x40000000
    adc     r9, r9, #0
    lsl     r9, r9, #1
    orr     r9, r9, r10, lsr #31    @ SRDHM
    and     r10, r9, r7             @ remainder
    sub     r10, r8, r10
    add     r10, r10, r9, lsr #31
    asr     r9, r9, r6
    add     r9, r9, r10, lsr #31
.endm

@ The row at r0 (r0 advanced): r1 = sat16(rq_x(ax)), r9 = rq_h(ah).
.macro GATE_PARTS_SCALAR
    ldm     r12, {r4-r8}
    ldr     r9, [r0], #4
    REQUANT_SCALAR
    ssat    r1, #16, r9
    ldm     lr, {r4-r8}
    ldr     r9, [r0, #AH_AFTER_AX]
    REQUANT_SCALAR
.endm

@ r1 = sat16(r1 + r9), the Q3.12 pre-activation (the add wrapping); r5 = 3 * r1, r6 = |r5|,
@ r4 = the table, r10 = the table from entry 1.
.macro GATE_ADD_SCALAR
    add     r1, r1, r9
    ssat    r1, #16, r1
    ldrd    r4, r10, [lr, #20]
    add     r5, r1, r1, lsl #1      @ v = 3 x
    eor     r6, r5, r5, asr #31
    sub     r6, r6, r5, asr #31     @ |v|
.endm

@ The pre-activation of the row at r0 (r0 advanced), as GATE_ADD_SCALAR leaves it.
.macro GATE_PRE_SCALAR
    GATE_PARTS_SCALAR
    GATE_ADD_SCALAR
.endm

@ r8 = lo * 2^step + frac * (hi - lo): the table at index r7, frac the low step bits of r6.
.macro LERP_SCALAR step_bits
    ubfx    r6, r6, #0, #\step_bits
    ldrh    r8, [r4, r7, lsl #1]
    ldrh    r9, [r10, r7, lsl #1]
    sub     r9, r9, r8
    lsl     r8, r8, #\step_bits
    mla     r8, r9, r6, r8
.endm

@ result = tanh in Q0.15 of v (sign from v, |v| in absv): from index 255 on the saturated value
@ 65535 << 8, which the caller's out-of-line label 5 loads into result before branching back to 6;
@ y = (r - 2^23 + 2^7) >> 8, and for v < 0 the reference's result is exactly -y.
.macro TANH_SCALAR absv, index, result, tmp, table, table_from_1, v
    lsr     \index, \absv, #8
    cmp     \index, #255
    bge     5f
    ubfx    \absv, \absv, #0, #8
    ldrh    \result, [\table, \index, lsl #1]
    ldrh    \tmp, [\table_from_1, \index, lsl #1]
    sub     \tmp, \tmp, \result
    lsl     \result, \result, #8
    mla     \result, \tmp, \absv, \result
6:
    sub     \result, \result, #0x800000
    add     \result, \result, #128
    asr     \result, \result, #8
    cmp     \v, #0
    it      lt
    neglt   \result, \result
.endm

.macro TANH_EPILOGUE result
9:
    pop     {r4-r11, pc}
5:
    movw    \result, #0xff00
    movt    \result, #0x00ff        @ 65535 << 8
    b       6b
.endm

.macro GATE_FINISH_SCALAR_PROLOGUE
    push    {r4-r11, lr}
    cmp     r1, #0
    beq     9f
    mov     r12, r3                 @ x's parameters
    add     lr, r3, #20             @ h's, then the table
    mov     r3, r2                  @ out
    add     r2, r0, r1, lsl #2      @ the end of ax
.endm

@ Sigmoid: the index of 3 x stays below 193, inside the table; y = (r + 2^9) >> 10, and for
@ v < 0 the reference's result is exactly 2^15 - y.
@ SIGMOID_END: y from the interpolation r, the result stored, the loop's end and the return.
.macro SIGMOID_END r, v, loop
    add     \r, \r, #512
    lsr     \r, \r, #10
    cmp     \v, #0
    it      lt
    rsblt   \r, \r, #32768
    strh    \r, [r3], #2
    cmp     r0, r2
    bne     \loop
9:
    pop     {r4-r11, pc}
.endm

    FUNCTION qlstm_arm_gate_finish_sigmoid_thumb2
    GATE_FINISH_SCALAR_PROLOGUE
1:
    GATE_PRE_SCALAR
    lsr     r7, r6, #9              @ index
    LERP_SCALAR 9
    SIGMOID_END r8, r5, 1b
    .size qlstm_arm_gate_finish_sigmoid_thumb2, . - qlstm_arm_gate_finish_sigmoid_thumb2

@ Tanh: TANH_SCALAR of the pre-activation GATE_ADD_SCALAR leaves, stored; the loop's end and the
@ return.
.macro TANH_GATE_END
    TANH_SCALAR r6, r7, r8, r9, r4, r10, r5
    strh    r8, [r3], #2
    cmp     r0, r2
    bne     1b
    TANH_EPILOGUE r8
.endm

    FUNCTION qlstm_arm_gate_finish_tanh_thumb2
    GATE_FINISH_SCALAR_PROLOGUE
1:
    GATE_PRE_SCALAR
    TANH_GATE_END
    .size qlstm_arm_gate_finish_tanh_thumb2, . - qlstm_arm_gate_finish_tanh_thumb2

@ The gate finish again, for right shifts of at least 1 in both requantizations (the usual case:
@ lstm_s8_arm.cc picks it), in two passes over the chunk so that every constant stays in a
@ register: first ax[r] = sat16(rq_x(ax[r])) in place, then the recurrent part, the add and the
@ activation. The requantization folds the rounding divide into the SRDHM's 64-bit sum:
@ with Q = (x << left) * m + 2^30 (the SRDHM is Q >> 31) and c = 2^(right-1) - (Q < 0), the
@ reference's result floor((floor(Q / 2^31) + c) / 2^right) is floor((Q + c 2^31) / 2^(31+right)),
@ the high word of Q + c 2^31 shifted right by right - 1 (Q + c 2^31 < 2^63).
@ void qlstm_arm_gate_finish_{sigmoid,tanh}_fast_thumb2(const int32_t* ax, int32_t n, int16_t* out,
@                                                       const qlstm_arm_gate_finish_fast_params* p);
@ p: x's left shift, multiplier, 2^(right-1), right - 1; h's; the table (lstm_s8_arm.cc).

@ v = requantize(v) with r4 left, r5 multiplier, r6 2^(right-1), r7 right - 1; hi, lo scratch.
.macro REQUANT_FOLDED v=r9, hi=r8, lo=r10
    lsl     \v, \v, r4
    smull   \lo, \hi, \v, r5
    adds    \lo, \lo, #0x40000000
    adc     \hi, \hi, #0              @ Q
    sub     \v, r6, \hi, lsr #31      @ c
    adds    \lo, \lo, \v, lsl #31
    adc     \hi, \hi, \v, asr #1      @ the high word of Q + c 2^31 (c of either sign)
    asr     \v, \hi, r7
.endm

@ The first pass (qlstm_arm_x_part_folded); then r0 = ax, r2 = the end of ax, r3 = out, r4-r7
@ h's parameters, r11 the table, lr the table from entry 1.
.macro GATE_FINISH_FOLDED_PROLOGUE
    FOLDED_X_PASS
    ldm     r11, {r4-r7, r11}       @ h's parameters, the table
    add     lr, r11, #2
.endm

@ The registers saved, nothing done for n = 0, then the first pass: r0 = ax, r2 = the end of ax,
@ r3 = out, r11 = p after x's parameters.
.macro FOLDED_X_PASS
    push    {r4-r11, lr}
    cmp     r1, #0
    beq     9f
    mov     r11, r3                 @ p
    mov     r3, r2                  @ out
    add     r2, r0, r1, lsl #2      @ the end of ax
    ldm     r11!, {r4-r7}           @ x's parameters
    bl      qlstm_arm_x_part_folded
.endm

@ The folded finish's first pass, shared by both: ax[r] = sat16(rq_x(ax[r])) in place for ax at
@ r0 up to the end at r2 (n >= 1), r4-r7 x's parameters; two rows per loop pass (their loads
@ back to back). An odd n also requantizes ax[n], which a chunk of fewer than kChunkRows rows has
@ (gate_chunked's accumulators; its value is not used). Keeps r0, r2-r7 and r11.
    .section .text.qlstm_arm_x_part_folded, "ax", %progbits
    .type qlstm_arm_x_part_folded, %function
    .thumb_func
    .p2align 2
qlstm_arm_x_part_folded:
    push    {r3, lr}
    mov     r1, r0
1:
    ldr     r9, [r1], #8
    ldr     r3, [r1, #-4]
    REQUANT_FOLDED
    REQUANT_FOLDED r3, r12, lr
    ssat    r9, #16, r9
    ssat    r3, #16, r3
    str     r9, [r1, #-8]
    str     r3, [r1, #-4]
    cmp     r1, r2
    blo     1b
    pop     {r3, pc}
    .size qlstm_arm_x_part_folded, . - qlstm_arm_x_part_folded

@ r1 = sat16(x part + rq_h(ah)) of the row at r0 (r0 advanced), r9 = v = 3 r1, r10 = |v|.
.macro GATE_PRE_FOLDED
    ldr     r1, [r0], #4
    ldr     r9, [r0, #AH_AFTER_AX]
    REQUANT_FOLDED
    add     r1, r1, r9
    ssat    r1, #16, r1
    add     r9, r1, r1, lsl #1
    eor     r10, r9, r9, asr #31
    sub     r10, r10, r9, asr #31
.endm

    FUNCTION qlstm_arm_gate_finish_sigmoid_fast_thumb2
    GATE_FINISH_FOLDED_PROLOGUE
2:
    GATE_PRE_FOLDED
    lsr     r8, r10, #9             @ index (below 193)
    ubfx    r10, r10, #0, #9
    ldrh    r12, [r11, r8, lsl #1]
    ldrh    r1, [lr, r8, lsl #1]
    sub     r1, r1, r12
    lsl     r12, r12, #9
    mla     r12, r1, r10, r12
    SIGMOID_END r12, r9, 2b
    .size qlstm_arm_gate_finish_sigmoid_fast_thumb2, . - qlstm_arm_gate_finish_sigmoid_fast_thumb2

@ The folded tanh finish's second pass (r4-r7 h's parameters, r11 the table, lr the table from
@ entry 1) and the return.
.macro TANH_FOLDED_LOOP
2:
    GATE_PRE_FOLDED
    TANH_SCALAR r10, r8, r12, r1, r11, lr, r9
    strh    r12, [r3], #2
    cmp     r0, r2
    bne     2b
    TANH_EPILOGUE r12
.endm

    FUNCTION qlstm_arm_gate_finish_tanh_fast_thumb2
    GATE_FINISH_FOLDED_PROLOGUE
    TANH_FOLDED_LOOP
    .size qlstm_arm_gate_finish_tanh_fast_thumb2, . - qlstm_arm_gate_finish_tanh_fast_thumb2

@ The GRU's new gate for n rows (docs/arithmetic.md §13, gru_s8_arm.cc), one row per pass: the
@ gate's tanh finish with the reset product between the recurrent part and the add:
@   out[r] = tanh(sat16(sat16(rq_x(ax[r])) + rq_r(reset[r] * sat16(rq_h(ah[r])))))   in Q0.15
@ (|reset * sat16(.)| <= 2^30: exact in int32; the add wraps), ah = ax + CHUNK_ROWS.
@ void qlstm_arm_gru_new_gate_finish_thumb2(const int32_t* ax, int32_t n, int16_t* out,
@                                           const qlstm_arm_gru_new_gate_finish_params* p,
@                                           const int16_t* reset);
@ p: the gate finish's parameters (x's and h's requantization, the table, the table from entry
@ 1), then the reset product's requantization.
    .equ    RESET_AFTER_H, 28       @ p->reset from p->h (offsetof 48 - 20)
    FUNCTION qlstm_arm_gru_new_gate_finish_thumb2
    GATE_FINISH_SCALAR_PROLOGUE
    ldr     r11, [sp, #36]          @ reset (the fifth argument, above the nine pushed registers)
1:
    GATE_PARTS_SCALAR
    ssat    r9, #16, r9             @ h part
    ldrsh   r10, [r11], #2
    mul     r9, r9, r10             @ reset * h part
    add     r10, lr, #RESET_AFTER_H
    ldm     r10, {r4-r8}
    REQUANT_SCALAR                  @ gated
    GATE_ADD_SCALAR
    TANH_GATE_END
    .size qlstm_arm_gru_new_gate_finish_thumb2, . - qlstm_arm_gru_new_gate_finish_thumb2

@ The same when all three requantizations shift right by at least 1 (gru_s8_arm.cc picks it), in
@ three passes over the chunk with REQUANT_FOLDED, every constant in a register: ax[r] =
@ sat16(rq_x(ax[r])) (qlstm_arm_x_part_folded), ah[r] = reset[r] * sat16(rq_h(ah[r])), then the
@ tanh finish's second pass with rq_r as its h side.
@ void qlstm_arm_gru_new_gate_finish_fast_thumb2(int32_t* ax, int32_t n, int16_t* out,
@                                                const qlstm_arm_gru_new_gate_finish_fast_params* p,
@                                                const int16_t* reset);
@ p: x's, h's and the reset product's folded requantizations (left shift, multiplier,
@ 2^(right-1), right - 1 each), then the table. ax and ah are overwritten.
    FUNCTION qlstm_arm_gru_new_gate_finish_fast_thumb2
    FOLDED_X_PASS
    ldm     r11!, {r4-r7}           @ h's parameters
    ldr     r12, [sp, #36]          @ reset (the fifth argument, above the nine pushed registers)
    push    {r3}
    add     r1, r0, #(4 * CHUNK_ROWS)
    add     r3, r2, #(4 * CHUNK_ROWS)    @ the end of ah
1:
    ldr     r9, [r1]
    REQUANT_FOLDED
    ssat    r9, #16, r9             @ the recurrent part
    ldrsh   r10, [r12], #2
    mul     r9, r9, r10             @ reset * h part
    str     r9, [r1], #4
    cmp     r1, r3
    blo     1b
    pop     {r3}
    ldm     r11, {r4-r7, r11}       @ the reset product's parameters, the table
    add     lr, r11, #2
    TANH_FOLDED_LOOP
    .size qlstm_arm_gru_new_gate_finish_fast_thumb2, . - qlstm_arm_gru_new_gate_finish_fast_thumb2

@ The cell update, two passes over the units (docs/arithmetic.md §5):
@   cell = sat16(rq_fc(f * cell))                  (first pass, in place)
@   cell = clamp(cell + rq_ig(i * g), clip_min, clip_max)   (i * g unsaturated, the add wrapping)
@ void qlstm_arm_cell_update_thumb2(int32_t count, const int16_t* f, const int16_t* i, const int16_t* g,
@                                   int16_t* cell, const qlstm_arm_cell_params* p);
@ p: f*c's and i*g's requantization (5 words each, as the gate's), clip_min, clip_max.
@ CELL_UPDATE: requant the requantization of r9 (r4-r8 its parameters as loaded, r10 scratch),
@ fold what turns them into requant's after each load (arm_dsp's folded one).
.macro CELL_UPDATE name, requant, fold=
    FUNCTION \name
    push    {r4-r11, lr}
    cmp     r0, #0
    beq     9f
    ldr     r11, [sp, #36]          @ cell
    ldr     r12, [sp, #40]          @ p
    add     lr, r11, r0, lsl #1     @ the end of cell
    mov     r0, r1                  @ f
    mov     r1, r2                  @ i
    mov     r2, r3                  @ g
    mov     r3, r11
    ldm     r12!, {r4-r8}
    \fold
1:
    ldrsh   r9, [r0], #2
    ldrsh   r10, [r3]
    mul     r9, r9, r10
    \requant
    ssat    r9, #16, r9
    strh    r9, [r3], #2
    cmp     r3, lr
    bne     1b
    ldr     r3, [sp, #36]
    ldm     r12, {r4-r8, r11}       @ i*g's requantization, clip_min
    ldr     r12, [r12, #24]         @ clip_max
    \fold
2:
    ldrsh   r9, [r1], #2
    ldrsh   r10, [r2], #2
    ldrsh   r0, [r3]
    mul     r9, r9, r10
    \requant
    add     r9, r9, r0
    cmp     r9, r11
    it      lt
    movlt   r9, r11
    cmp     r9, r12
    it      gt
    movgt   r9, r12
    strh    r9, [r3], #2
    cmp     r3, lr
    bne     2b
9:
    pop     {r4-r11, pc}
    .size \name, . - \name
.endm

    CELL_UPDATE qlstm_arm_cell_update_thumb2, REQUANT_SCALAR

@ The hidden update of one batch row (§6): h = sat8(rq_ot(o * tanh(cell)) + zero point), tanh of
@ the cell (scale 2^P) with the pre-scale v = (3 cell * 2^left + round) >> right, then as the
@ gate's tanh.
@ void qlstm_arm_hidden_update_thumb2(int32_t count, const int16_t* o, const int16_t* cell, int8_t* h,
@                                     const qlstm_arm_hidden_params* p);
@ p: the pre-scale (multiplier 3 << left, rounding, right shift), the table and the table from
@ entry 1; o*tanh's requantization (5 words); the output zero point.
@ HIDDEN_UPDATE: out the output of r9 = o * tanh, lr its parameters (r4-r8, r10 scratch).
.macro HIDDEN_UPDATE name, out
    FUNCTION \name
    push    {r4-r11, lr}
    cmp     r0, #0
    beq     9f
    ldr     r12, [sp, #36]          @ p: the tanh part
    add     lr, r12, #20            @ the requantization, then the zero point
    add     r4, r2, r0, lsl #1      @ the end of cell
    mov     r0, r1                  @ o
    mov     r1, r2                  @ cell
    mov     r2, r3                  @ h
    mov     r3, r4
1:
    ldm     r12, {r4-r8}
    ldrsh   r9, [r1], #2
    mla     r9, r9, r4, r5
    asr     r9, r9, r6              @ v
    eor     r10, r9, r9, asr #31
    sub     r10, r10, r9, asr #31   @ |v|
    TANH_SCALAR r10, r11, r4, r5, r7, r8, r9   @ r4 = tanh(cell) in Q0.15
    ldrsh   r9, [r0], #2
    mul     r9, r9, r4
    \out
    ssat    r9, #8, r9
    strb    r9, [r2], #1
    cmp     r1, r3
    bne     1b
    TANH_EPILOGUE r4
    .size \name, . - \name
.endm

.macro HIDDEN_OUT_SCALAR
    ldm     lr, {r4-r8}
    REQUANT_SCALAR
    ldr     r10, [lr, #20]
    add     r9, r9, r10
.endm

    HIDDEN_UPDATE qlstm_arm_hidden_update_thumb2, HIDDEN_OUT_SCALAR

@ A requantization loaded as REQUANT_SCALAR takes it (r4-r8) turned into REQUANT_FOLDED's (r4-r7):
@ the right shift and the half mask become right - 1 and 2^(right-1) (a right shift of at least 1).
.macro FOLD_REQUANT_REGS
    sub     r7, r6, #1              @ right - 1
    add     r6, r8, #1              @ 2^(right-1)
.endm

#if defined(__ARM_FEATURE_DSP)
@ The cell and hidden updates again for right shifts of at least 1 (arm_dsp picks them,
@ lstm_s8_arm.cc), with REQUANT_FOLDED: the same arithmetic in fewer instructions per unit.
@ void qlstm_arm_cell_update_folded(int32_t count, const int16_t* f, const int16_t* i, const int16_t* g,
@                                   int16_t* cell, const qlstm_arm_cell_params* p);
@ p: as the Thumb-2 one's, its requantizations turned by FOLD_REQUANT_REGS.

    CELL_UPDATE qlstm_arm_cell_update_folded, REQUANT_FOLDED, FOLD_REQUANT_REGS

@ The hidden update with o*tanh's requantization folded and the output zero point z inside its
@ rounding constant: 2^(right-1) + z 2^right, so that c 2^31 adds z 2^(31+right) to the sum,
@ exactly z after the shift (right from 1 to 23: the constant fits in int32).
@ void qlstm_arm_hidden_update_folded(int32_t count, const int16_t* o, const int16_t* cell, int8_t* h,
@                                     const qlstm_arm_hidden_params* p);
@ p: as the Thumb-2 one's, but o*tanh's requantization as left shift, multiplier, that constant
@ and right - 1 (lstm_s8_arm.cc).
.macro HIDDEN_OUT_FOLDED
    ldm     lr, {r4-r7}
    REQUANT_FOLDED
.endm

    HIDDEN_UPDATE qlstm_arm_hidden_update_folded, HIDDEN_OUT_FOLDED
#endif  /* __ARM_FEATURE_DSP */

@ The GRU's update and output (docs/arithmetic.md §13; gru_s8_arm.cc), one unit per pass:
@   h = sat16(n + rq(z * (h - n)))   in place (|z * (h - n)| < 2^31, the add wrapping)
@   y = sat8(rq(h) + zero point)     (the add wrapping)
@ void qlstm_arm_gru_update_thumb2(int32_t count, const int16_t* z, const int16_t* n, int16_t* h,
@                                  const qlstm_arm_requant_params* q);
@ void qlstm_arm_gru_output_thumb2(int32_t count, const int16_t* h, int8_t* y,
@                                  const qlstm_arm_gru_output_params* p);
@ q: the requantization (5 words, as the gate's); p: the same, then the output zero point.

@ The end of a unit and of the loop: out = sat(rq(r9) + r11) stored at out_ptr (advanced), until
@ end_ptr reaches lr; then the return. requant: REQUANT_SCALAR, or REQUANT_FOLDED after
@ FOLD_REQUANT_REGS (the _folded functions below, for a right shift of at least 1).
.macro GRU_UNIT_END bits, store, out_ptr, size, end_ptr=, requant=REQUANT_SCALAR
    \requant
    add     r9, r9, r11
    ssat    r9, #\bits, r9
    \store  r9, [\out_ptr], #\size
    .ifb \end_ptr
    cmp     \out_ptr, lr
    .else
    cmp     \end_ptr, lr
    .endif
    bne     1b
9:
    pop     {r4-r11, pc}
.endm

.macro NO_FOLD
.endm

.macro GRU_UPDATE name, requant, fold
    FUNCTION \name
    push    {r4-r11, lr}
    cmp     r0, #0
    beq     9f
    ldr     r12, [sp, #36]          @ q
    ldm     r12, {r4-r8}
    \fold
    add     lr, r3, r0, lsl #1      @ the end of h
1:
    ldrsh   r11, [r2], #2           @ n
    ldrsh   r9, [r3]                @ h
    ldrsh   r12, [r1], #2           @ z
    sub     r9, r9, r11
    mul     r9, r9, r12
    GRU_UNIT_END 16, strh, r3, 2, , \requant
    .size \name, . - \name
.endm

.macro GRU_OUTPUT name, requant, fold
    FUNCTION \name
    push    {r4-r11, lr}
    cmp     r0, #0
    beq     9f
    ldm     r3, {r4-r8, r11}        @ the requantization, the zero point
    \fold
    add     lr, r1, r0, lsl #1      @ the end of h
1:
    ldrsh   r9, [r1], #2
    GRU_UNIT_END 8, strb, r2, 1, r1, \requant
    .size \name, . - \name
.endm

    GRU_UPDATE qlstm_arm_gru_update_thumb2, REQUANT_SCALAR, NO_FOLD
    GRU_OUTPUT qlstm_arm_gru_output_thumb2, REQUANT_SCALAR, NO_FOLD
@ The same with the requantization folded (its right shift at least 1; gru_s8_arm.cc picks them).
    GRU_UPDATE qlstm_arm_gru_update_folded, REQUANT_FOLDED, FOLD_REQUANT_REGS
    GRU_OUTPUT qlstm_arm_gru_output_folded, REQUANT_FOLDED, FOLD_REQUANT_REGS

@ The fully connected op's finish (fc_s8_arm.cc, blocked/fc_rows.h), one output per pass, any
@ Thumb-2 core: y[k] = clamp(requantize(acc[k]) + zero point, min, max), k < n, the add wrapping
@ as the reference's (fully_connected/fc_s8.cc).
@ void qlstm_arm_fc_finish_thumb2(const int32_t* acc, int32_t n, int8_t* y, const qlstm_arm_fc_finish_params* p);
@ void qlstm_arm_fc_finish_per_channel_thumb2(const int32_t* acc, int32_t n, int8_t* y,
@                                             const qlstm_arm_fc_finish_params* p, int32_t first);
@ p: the one requantization (5 words, as the gate's), the output zero point, activation_min and
@ _max, then the per-channel multipliers and shifts (of output 0; the outputs start at `first`).

@ r1 = the end of acc; n = 0 returns at once (label 9, in FC_OUTPUT).
.macro FC_FINISH_PROLOGUE
    push    {r4-r11, lr}
    cmp     r1, #0
    beq     9f
    add     r1, r0, r1, lsl #2      @ the end of acc
.endm

@ y = clamp(r9 + zp, lo, hi), the next output until the end of acc (loop label 1), then return.
.macro FC_OUTPUT zp, lo, hi
    add     r9, r9, \zp
    cmp     r9, \lo
    it      lt
    movlt   r9, \lo
    cmp     r9, \hi
    it      gt
    movgt   r9, \hi
    strb    r9, [r2], #1
    cmp     r0, r1
    bne     1b
9:
    pop     {r4-r11, pc}
.endm

    FUNCTION qlstm_arm_fc_finish_thumb2
    FC_FINISH_PROLOGUE
    ldm     r3, {r4-r8}             @ the requantization
    ldr     r11, [r3, #24]          @ activation_min
    ldr     r12, [r3, #28]          @ activation_max
    ldr     r3, [r3, #20]           @ the output zero point
1:
    ldr     r9, [r0], #4
    REQUANT_SCALAR
    FC_OUTPUT r3, r11, r12
    .size qlstm_arm_fc_finish_thumb2, . - qlstm_arm_fc_finish_thumb2

@ Per channel: each output's left shift max(shift, 0), right shift max(-shift, 0), remainder mask
@ 2^right - 1 and half of it from its shift (fxp::RequantDoubleRounding::make), then as above.
    FUNCTION qlstm_arm_fc_finish_per_channel_thumb2
    FC_FINISH_PROLOGUE
    ldr     r10, [sp, #36]          @ first (9 registers up)
    add     lr, r3, #20             @ zero point, activation_min, activation_max
    ldr     r12, [r3, #36]          @ shifts
    ldr     r3, [r3, #32]           @ multipliers
    add     r3, r3, r10, lsl #2
    add     r12, r12, r10, lsl #2
1:
    ldr     r10, [r12], #4          @ shift
    ldr     r5, [r3], #4            @ multiplier
    bic     r4, r10, r10, asr #31   @ left
    rsb     r6, r10, #0
    bic     r6, r6, r6, asr #31     @ right
    mov     r7, #1
    lsl     r7, r7, r6
    sub     r7, r7, #1              @ mask
    lsr     r8, r7, #1              @ half
    ldr     r9, [r0], #4
    REQUANT_SCALAR
    ldm     lr, {r4-r6}             @ zero point, activation_min, activation_max
    FC_OUTPUT r4, r5, r6
    .size qlstm_arm_fc_finish_per_channel_thumb2, . - qlstm_arm_fc_finish_per_channel_thumb2

#if defined(__ARM_FEATURE_DSP)
@ Four columns: the v bytes become the int16 pairs (v0, v2) and (v1, v3) with SXTB16, each
@ row's four weights likewise, and SMLAD adds both products of a pair (wrapping, as the
@ reference does). The loads go two rows at a time right after each other (pipelined), rows 1
@ and 3 by register offset (r9 = the row stride) from rows 0 and 2 (r1, r8).
.macro ROW_DSP acc, word
    sxtb16  r12, \word
    smlad   \acc, r2, r12, \acc
    sxtb16  \word, \word, ror #8
    smlad   \acc, r11, \word, \acc
.endm

@ Rows 0 and 1 loaded (r10, lr): the four rows' products, rows 2 and 3 loaded in between.
.macro ROWS_DSP
    ROW_DSP r4, r10
    ROW_DSP r5, lr
    ldr     lr, [r8, r9]
    ldr     r10, [r8], #4
    ROW_DSP r6, r10
    ROW_DSP r7, lr
.endm

.macro QUAD_DSP
    ldr     r11, [r0], #4           @ v0..v3
    ldr     lr, [r1, r9]
    ldr     r10, [r1], #4
    sxtb16  r2, r11                 @ (v0, v2)
    sxtb16  r11, r11, ror #8        @ (v1, v3)
    ROWS_DSP
.endm

@ Whole blocks of four rows by SMLAD (as ROWS4, with the columns as COLUMNS_THUMB2 takes them):
@ eight quads of columns per loop pass, the first pass entered part-way (Duff's device) so that
@ it runs the quads modulo 8, then the last 0..3 columns one at a time (out of line). The entry
@ into the first pass and the pass count are worked out once per call; each block then jumps to
@ the entry (BX, 4 cycles, where tests of the count's bits cost 8 to 16). Every instruction of a
@ quad is 32-bit, so that the entry is the loop's top plus a multiple of the quad's size.
@ Stack: v, the entry (Thumb bit set), the passes, the end of acc; above the nine pushed
@ registers bias, acc and (rows4_s8_dspx) the bytes of the last 0..3 columns of v.
@ align: the loop's top on a 2^align-byte boundary. QEMU ends a translated block at every 1 KiB
@ page, and the counter charges a block's first instruction as if nothing ran before it
@ (docs/targets.md), so a load there loses its pipelining: about 1 cycle per pass wherever a page
@ boundary falls on one of a quad's pipelined loads. With the top on 128 bytes, those boundaries
@ fall on a multiple of 128 bytes into the loop: an SXTB16, an SMLAD or a quad's first load for
@ both quads (88 and 92 bytes), whose charge is the same either way, as on the core itself.
    .equ    DSP_FRAME, 16
    .equ    DSP_BIAS, DSP_FRAME + 36
    .equ    DSP_ACC, DSP_FRAME + 40
    .equ    DSP_V_TAIL, DSP_FRAME + 44
.macro ROWS4_DSP name, quad, quad_bytes, align, tail_v=
    FUNCTION \name
    push    {r4-r11, lr}
    cmp     r3, #0
    beq     9f
    sub     sp, sp, #DSP_FRAME
    mov     r9, r2                  @ the row stride
    str     r0, [sp]                @ v
    ldr     r12, [sp, #DSP_ACC]
    add     r12, r12, r3, lsl #4
    str     r12, [sp, #12]          @ the end of acc
    adr     r10, 5f                 @ no whole quad: straight to the last columns
    lsrs    r12, r2, #2             @ quads
    beq     6f
    add     r11, r12, #7
    lsr     r11, r11, #3
    str     r11, [sp, #8]           @ passes: ceil(quads / 8)
    rsb     r12, r12, #0
    and     r12, r12, #7            @ the quads the first pass skips
    adr     r10, 1f
    mov     r11, #\quad_bytes
    mla     r10, r12, r11, r10
6:
    orr     r10, r10, #1
    str     r10, [sp, #4]           @ the entry
7:
    ldr     r0, [sp]
    ldr     r3, [sp, #8]
    ldr     r12, [sp, #4]
    ldr     r10, [sp, #DSP_BIAS]
    ldm     r10!, {r4-r7}
    str     r10, [sp, #DSP_BIAS]
    add     r8, r1, r9, lsl #1      @ row 2
    bx      r12
    .p2align \align
1:
    .rept 8
    \quad
    .endr
2:
    .if (2b - 1b) != 8 * \quad_bytes
    .error "a quad is not \quad_bytes bytes"
    .endif
    subs    r3, r3, #1
    bne     1b
5:
    ands    r3, r9, #3
    bne     4f                      @ the last 0..3 columns
8:
    ldr     r12, [sp, #DSP_ACC]
    ldr     r3, [sp, #12]
    stm     r12!, {r4-r7}
    str     r12, [sp, #DSP_ACC]
    add     r1, r8, r9              @ the next block's row 0: right after row 3 (r8 ends at row 3)
    cmp     r12, r3
    bne     7b
    add     sp, sp, #DSP_FRAME
9:
    pop     {r4-r11, pc}
4:
    \tail_v
3:
    COLUMN_THUMB2
    subs    r3, r3, #1
    bne     3b
    b       8b
    .size \name, . - \name
.endm

    ROWS4_DSP qlstm_arm_rows4_s8_dsp, QUAD_DSP, 92, 2     @ vectors over 256 columns: not aligned

@ One row: acc + sum_{j<n} v[j] * w[j] (wrapping), by SXTB16 of both and SMLAD, eight columns
@ per pass, then four, then the last 0..3 one at a time (the rows after the last whole block).
@ int32_t qlstm_arm_dot1_s8_dsp(const int8_t* v, const int8_t* w, int32_t n, int32_t acc);
.macro QUAD_DOT1_DSP
    ldr     r4, [r0], #4
    ldr     r5, [r1], #4
    sxtb16  r6, r4
    sxtb16  r7, r5
    smlad   r3, r6, r7, r3
    sxtb16  r4, r4, ror #8
    sxtb16  r5, r5, ror #8
    smlad   r3, r4, r5, r3
.endm

    FUNCTION qlstm_arm_dot1_s8_dsp
    push    {r4-r7, lr}
    subs    r2, r2, #8
    blt     2f
1:
    QUAD_DOT1_DSP
    QUAD_DOT1_DSP
    subs    r2, r2, #8
    bge     1b
2:
    adds    r2, r2, #8
    cmp     r2, #4
    blt     3f
    QUAD_DOT1_DSP
    subs    r2, r2, #4
3:
    cbz     r2, 5f
4:
    ldrsb   r4, [r0], #1
    ldrsb   r5, [r1], #1
    mla     r3, r4, r5, r3
    subs    r2, r2, #1
    bne     4b
5:
    mov     r0, r3
    pop     {r4-r7, pc}
    .size qlstm_arm_dot1_s8_dsp, . - qlstm_arm_dot1_s8_dsp

@ As QUAD_DSP with v already in int16 pairs (lstm_s8_arm.cc, ExpandedOperand): two loads, pipelined
@ with the rows'.
.macro QUAD_DSPX
    ldr     r11, [r0, #4]           @ (v1, v3)
    ldr     r2, [r0], #8            @ (v0, v2)
    ldr     lr, [r1, r9]
    ldr     r10, [r1], #4
    ROWS_DSP
.endm


@ The expansion itself: pairs[2q] = (v[4q], v[4q+2]), pairs[2q+1] = (v[4q+1], v[4q+3]) as int16.
@ void qlstm_arm_expand_s8_dsp(const int8_t* v, int32_t quads, int32_t* pairs);
    FUNCTION qlstm_arm_expand_s8_dsp
    cbz     r1, 2f
1:
    ldr     r3, [r0], #4
    sxtb16  r12, r3
    sxtb16  r3, r3, ror #8
    strd    r12, r3, [r2], #8
    subs    r1, r1, #1
    bne     1b
2:
    bx      lr
    .size qlstm_arm_expand_s8_dsp, . - qlstm_arm_expand_s8_dsp

@ void qlstm_arm_rows4_s8_dspx(const int32_t* v_pairs, const int8_t* w, int32_t n, int32_t blocks,
@                              const int32_t* bias, int32_t* acc, const int8_t* v_tail);
    ROWS4_DSP qlstm_arm_rows4_s8_dspx, QUAD_DSPX, 88, 7, "ldr r0, [sp, #DSP_V_TAIL]"
#endif  /* __ARM_FEATURE_DSP */
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
@ Helium: VMLADAVA adds the sixteen products of a row and a vector into the row's 32-bit
@ accumulator (wrapping); it needs even accumulator registers: r4, r6, r8, r10.
    .syntax unified
    .thumb
    .text

@ Whole row blocks in one call, so the per-call cost is paid once per gate chunk, not per block:
@   acc[r] = bias[r] + sum_{j<n} v[j] * w[r * n + j]   (mod 2^32), r < 4 * quads
@ void qlstm_arm_rows4_s8_mve(const int8_t* v, const int8_t* w, int32_t n, int32_t quads,
@                             const int32_t* bias, int32_t* acc);
@ Over 32 columns and from 6 four-row blocks (and in one register up to 16 columns), v is held
@ in q4-q7, up to 64 columns at a time, so that a four-row block loads only its weights: one
@ load per row and vector, each paired with that row's VMLADAVA (the first block of 64 columns
@ starts from bias, the later ones from acc). Within a block of k columns the
@ last vector holds p = k - 16f columns (f full vectors before it, p in 1..16); the row
@ pointers sit at that last vector and the full ones lie 16, 32 and 48 bytes before it.
@ The code runs the full vectors from the farthest (entered part-way, at 32 bytes of code per
@ vector, by BX) and the last one predicated to its p columns, so nothing past row or vector is
@ read. A block of 64 whole columns (f = 3, p = 16) has its own loop, unpredicated and without
@ the BX. n = 0 (the one-vector path) predicates every lane off: acc = bias.

@ The four rows' products with a part vector \vq, predicated to its columns (VPR holds them),
@ the weights read at the row pointers; q0-q2 take the weights.
.macro V_PART vq
    vpstttt
    vldrbt.s8       q0, [r1]
    vmladavat.s8    r4, \vq, q0
    vldrbt.s8       q1, [r5]
    vmladavat.s8    r6, \vq, q1
    vpstttt
    vldrbt.s8       q2, [r7]
    vmladavat.s8    r8, \vq, q2
    vldrbt.s8       q0, [r9]
    vmladavat.s8    r10, \vq, q0
.endm

.macro V64_FULL off, vq
    vldrb.s8        q0, [r1, #\off]
    vmladava.s8     r4, \vq, q0
    vldrb.s8        q1, [r5, #\off]
    vmladava.s8     r6, \vq, q1
    vldrb.s8        q2, [r7, #\off]
    vmladava.s8     r8, \vq, q2
    vldrb.s8        q3, [r9, #\off]
    vmladava.s8     r10, \vq, q3
.endm

@ Store the block's four sums and move the row pointers to the next four rows (r2 = 4n).
.macro V64_STORE_NEXT
    strd    r4, r6, [r12], #8
    strd    r8, r10, [r12], #8
    add     r1, r1, r2
    add     r5, r5, r2
    add     r7, r7, r2
    add     r9, r9, r2
.endm

@ A block of four rows over 64 whole columns (f = 3, p = 16): two per pass of its loop, which
@ halves the loop ends.
.macro V64_WHOLE_BLOCK
    ldrd    r4, r6, [r11], #8
    ldrd    r8, r10, [r11], #8
    V64_FULL -48, q7
    V64_FULL -32, q6
    V64_FULL -16, q5
    V64_FULL 0, q4
    V64_STORE_NEXT
.endm

@ Stack after the saves: v, w, n, quads, c0 (the block's first column); bias and acc above.
ROWS4_MVE_LOCALS = 20
ROWS4_MVE_BIAS = ROWS4_MVE_LOCALS + 100
ROWS4_MVE_ACC = ROWS4_MVE_LOCALS + 104
ROWS4_MVE_COLUMNS = 64
ROWS4_MVE_LOOP_COLUMNS = 32
ROWS4_MVE_HELD_QUADS = 6
    FUNCTION qlstm_arm_rows4_s8_mve
    push    {r4-r11, lr}
    cbz     r3, 0f
    cmp     r2, #16
    bgt     7f
@ One vector (n <= 16): v loaded once, into q3, predicated to its n columns as each row's load.
    ldr     r11, [sp, #36]          @ bias
    ldr     r12, [sp, #40]          @ acc
    vctp.8  r2
    vpst
    vldrbt.s8       q3, [r0]
    lsls    r0, r2, #2              @ 4n: the next block of rows
1:
    ldrd    r4, r6, [r11], #8
    ldrd    r8, r10, [r11], #8
    add     r5, r1, r2
    add     r7, r5, r2
    add     r9, r7, r2
    V_PART q3
    strd    r4, r6, [r12], #8
    strd    r8, r10, [r12], #8
    add     r1, r1, r0
    subs    r3, r3, #1
    bne     1b
0:
    pop     {r4-r11, pc}
7:
    cmp     r2, #ROWS4_MVE_LOOP_COLUMNS
    ble     7f
    cmp     r3, #ROWS4_MVE_HELD_QUADS
    bge     .Lrows4_mve_held
7:
@ 17 to 32 columns, or fewer than 6 blocks: a tail-predicated loop over the columns (DLSTP/LETP),
@ v loaded beside the weights, as holding v (its saves and setup, about 120 cycles a call and 50
@ a 64-column block) costs more than it saves there (about 26 cycles a block of 64 columns).
    ldr     r11, [sp, #36]          @ bias
    ldr     r12, [sp, #40]          @ acc
    add     r4, r12, r3, lsl #4     @ end of acc
    sub     sp, sp, #8
    str     r0, [sp]
    str     r4, [sp, #4]
    add     r3, r2, #15
    bic     r3, r3, #15
    sub     r3, r2, r3              @ n - 16 * ceil(n / 16)
1:
    ldr     r0, [sp]
    ldrd    r4, r6, [r11], #8       @ two LDRDs: 4 cycles on the M55, LDM of four 5
    ldrd    r8, r10, [r11], #8
    add     r5, r1, r2              @ row 1
    add     r7, r5, r2              @ row 2
    add     r9, r7, r2              @ row 3
    dlstp.8 lr, r2
2:
    vldrb.s8    q0, [r0], #16
    vldrb.s8    q1, [r1], #16
    vmladava.s8 r4, q0, q1
    vldrb.s8    q2, [r5], #16
    vmladava.s8 r6, q0, q2
    vldrb.s8    q3, [r7], #16
    vmladava.s8 r8, q0, q3
    vldrb.s8    q1, [r9], #16
    vmladava.s8 r10, q0, q1
    letp    lr, 2b
    strd    r4, r6, [r12], #8
    strd    r8, r10, [r12], #8
    add     r1, r9, r3              @ the next block's row 0
    ldr     lr, [sp, #4]
    cmp     r12, lr
    bne     1b
    add     sp, sp, #8
    pop     {r4-r11, pc}
.Lrows4_mve_held:
    vpush   {d8-d15}
    sub     sp, sp, #ROWS4_MVE_LOCALS
    stm     sp, {r0-r3}
    movs    r0, #0
    str     r0, [sp, #16]
    ldr     r11, [sp, #ROWS4_MVE_BIAS]
1:
    ldr     r0, [sp, #16]
    ldr     r2, [sp, #8]
    sub     r3, r2, r0              @ k = n - c0, at most 64
    cmp     r3, #ROWS4_MVE_COLUMNS
    it      gt
    movgt   r3, #ROWS4_MVE_COLUMNS
    sub     r12, r3, #1             @ k >= 1 (c0 < n)
    lsrs    r12, r12, #4            @ f
    sub     r3, r3, r12, lsl #4     @ p
    add     r0, r0, r12, lsl #4     @ the last vector's first column
    ldr     r1, [sp]
    add     r1, r1, r0
    vctp.8  r3                      @ p lanes, for the block's last vector
    vpst
    vldrbt.s8       q4, [r1]
    cmp     r12, #1
    blt     2f
    vldrb.s8        q5, [r1, #-16]
    cmp     r12, #2
    blt     2f
    vldrb.s8        q6, [r1, #-32]
    cmp     r12, #3
    blt     2f
    vldrb.s8        q7, [r1, #-48]
2:
    ldr     r1, [sp, #4]
    add     r1, r1, r0              @ row 0 at the last vector
    add     r5, r1, r2
    add     r7, r5, r2
    add     r9, r7, r2
    lsls    r2, r2, #2
    cmp     r3, #16
    it      eq
    cmpeq   r12, #3
    ldr     r3, [sp, #12]
    beq     4f
    adr.w   lr, 3f
    sub     lr, lr, r12, lsl #5     @ the first full vector's code
    orr     lr, lr, #1
    ldr     r12, [sp, #ROWS4_MVE_ACC]
    ldrd    r4, r6, [r11], #8
    ldrd    r8, r10, [r11], #8
    bx      lr
.Lrows4_mve_f3:
    V64_FULL -48, q7
.Lrows4_mve_f2:
    V64_FULL -32, q6
    V64_FULL -16, q5
3:
    V_PART q4
    V64_STORE_NEXT
    subs    r3, r3, #1
    beq     5f
    ldrd    r4, r6, [r11], #8
    ldrd    r8, r10, [r11], #8
    bx      lr
.if .Lrows4_mve_f2 - .Lrows4_mve_f3 != 32
    .error "a full vector's code must be 32 bytes (the BX entry steps by it)"
.endif
4:
    ldr     r12, [sp, #ROWS4_MVE_ACC]
    lsrs    r3, r3, #1              @ pairs of blocks; an odd one first
    bcc     6f
    adds    r3, r3, #1
    b       61f
6:
    V64_WHOLE_BLOCK
61:
    V64_WHOLE_BLOCK
    subs    r3, r3, #1
    bne     6b
5:
    ldr     r0, [sp, #16]
    adds    r0, r0, #ROWS4_MVE_COLUMNS
    str     r0, [sp, #16]
    ldr     r11, [sp, #ROWS4_MVE_ACC]
    ldr     r2, [sp, #8]
    cmp     r0, r2
    blt     1b
    add     sp, sp, #ROWS4_MVE_LOCALS
    vpop    {d8-d15}
    pop     {r4-r11, pc}
    .size qlstm_arm_rows4_s8_mve, . - qlstm_arm_rows4_s8_mve

@ The rest of a gate for n rows, four lanes per pass in a tail-predicated loop: requantize both
@ accumulators, add, saturate (docs/arithmetic.md §3), then sigmoid or tanh by the table (§4):
@   out[r] = act(sat16(sat16(rq_x(ax[r])) + rq_h(ah[r])))   in Q0.15
@ void qlstm_arm_gate_finish_{sigmoid,tanh}_mve(const int32_t* ax, const int32_t* ah, int32_t n,
@                                               int16_t* out, const int32_t* p);
@ p: x_left, x_multiplier, -x_right, h_left, h_multiplier, -h_right, x_negative_fix,
@ h_negative_fix (lstm_s8_arm_mve.cc, Requant), the table's address. All 14 core registers and
@ q0-q7 are live in the loop.
@ Requantization: VQRDMULH is the SRDHM; VRSHL rounds halves up, so negative values first lose 1
@ (where the right shift is non-zero: the fix mask, -1 or 0, added in the lanes below zero) to
@ round them away from zero instead.
@ Saturation to int16: VQSHL #16 saturates, VSHR #16 shifts back.
.macro REQUANT_Q acc, left, multiplier, minus_right, fix
    vshl.s32        \acc, \left
    vqrdmulh.s32    \acc, \acc, \multiplier
    vpt.s32         lt, \acc, zr
    vaddt.i32       \acc, \acc, \fix
    vrshl.s32       \acc, \minus_right
.endm

@ An int8 output: sat8(RQ(acc) + zero point) (the add wrapping) stored at ptr, which advances.
.macro STORE_S8_LANES acc, ptr, left, multiplier, minus_right, fix, zero_point
    REQUANT_Q       \acc, \left, \multiplier, \minus_right, \fix
    vadd.i32        \acc, \acc, \zero_point
    vqshl.s32       \acc, \acc, #24
    vshr.s32        \acc, \acc, #24
    vstrb.32        \acc, [\ptr], #4
.endm

.macro REQUANT_LANES acc, ptr, left, multiplier, minus_right, fix
    vldrw.u32       \acc, [\ptr], #16
    REQUANT_Q       \acc, \left, \multiplier, \minus_right, \fix
.endm

.macro GATE_REQUANT
    REQUANT_LANES   q0, r0, r4, r5, r6, q4
    vqshl.s32       q0, q0, #16
    vshr.s32        q0, q0, #16
    REQUANT_LANES   q2, r1, r7, r8, r9, q5
    vadd.i32        q0, q0, q2
    vqshl.s32       q0, q0, #16
    vshr.s32        q0, q0, #16
.endm

@ q1 = frac, q2 = table index of |v|, v in q0.
.macro ABS_INDEX step_bits
    vabs.s32        q1, q0
    vshr.u32        q2, q1, #\step_bits
    vshl.i32        q1, q1, #(32 - \step_bits)
    vshr.u32        q1, q1, #(32 - \step_bits)
.endm

@ q3 = lo * 2^step + frac * (hi - lo), lo and hi gathered into q3 and q7.
.macro INTERPOLATE step_bits
    vsub.i32        q7, q7, q3
    vmul.i32        q7, q7, q1
    vshl.i32        q3, q3, #\step_bits
    vadd.i32        q3, q3, q7
.endm

@ q3 = tanh of v = q0 in Q0.15: indices from \limit (255) on take \saturated (65535 << 8);
@ y = (r - 2^23 + 2^7) >> 8 (\round: 2^7 - 2^23), and the reference's result for v < 0 is exactly -y.
.macro TANH_LANES limit, table, table_from_1, saturated, round
    ABS_INDEX 8
    vcmp.s32        lt, q2, \limit
    vpstt
    vldrht.u32      q3, [\table, q2, uxtw #1]
    vldrht.u32      q7, [\table_from_1, q2, uxtw #1]
    INTERPOLATE 8
    vpsel           q3, q3, \saturated
    vadd.i32        q3, q3, \round
    vshr.s32        q3, q3, #8
    vpt.s32         lt, q0, zr
    vnegt.s32       q3, q3
.endm

@ The finish's constants from p (the fifth argument, 9 core + 8 double registers pushed).
.macro GATE_FINISH_LOAD
    ldr     r12, [sp, #100]         @ p
    ldr     r4, [r12, #24]
    vdup.32 q4, r4                  @ x's fix mask
    ldr     r4, [r12, #28]
    vdup.32 q5, r4                  @ h's fix mask
    mov     lr, r2
    ldr     r2, [r12, #32]          @ the table
    ldm     r12, {r4-r9}
    mov     r12, r2
    adds    r2, r2, #2              @ the table from entry 1: gathers of hi with the same offsets
.endm

.macro GATE_FINISH_PROLOGUE
    push    {r4-r11, lr}
    vpush   {d8-d15}
    GATE_FINISH_LOAD
.endm

@ Sigmoid: a Q3.12 input times 3 is below 2^17, so its index (|v| >> 9) stays below 193 and
@ inside the table. With r = the interpolation of |v|, y = (r + 2^9) >> 10, and the reference's
@ result for v < 0 is exactly 2^15 - y.
    FUNCTION qlstm_arm_gate_finish_sigmoid_mve
    GATE_FINISH_PROLOGUE
    mov     r10, #32768
    vdup.32 q6, r10                 @ 1.0 in Q0.15
    movs    r10, #3                 @ the pre-scale
    mov     r11, #512               @ 2^9: the interpolation's step
    dlstp.32 lr, lr
1:
    GATE_REQUANT
    vmul.i32        q0, q0, r10     @ v = 3 x
    ABS_INDEX 9
    vldrh.u32       q3, [r12, q2, uxtw #1]
    vldrh.u32       q7, [r2, q2, uxtw #1]
    vsub.i32        q7, q7, q3
    vmul.i32        q7, q7, q1
    vmla.s32        q7, q3, r11     @ r = lo * 2^9 + frac * (hi - lo)
    vrshr.s32       q7, q7, #10     @ y = (r + 2^9) >> 10
    vpt.s32         lt, q0, zr
    vsubt.i32       q7, q6, q7
    vstrh.32        q7, [r3], #8
    letp    lr, 1b
    vpop    {d8-d15}
    pop     {r4-r11, pc}
    .size qlstm_arm_gate_finish_sigmoid_mve, . - qlstm_arm_gate_finish_sigmoid_mve

@ Tanh: indices from 255 on take the saturated value (65535 << 8); y = (r - 2^23 + 2^7) >> 8,
@ and the reference's result for v < 0 is exactly -y.
.macro TANH_FINISH_LOOP
    movw    r10, #0xffff
    vdup.32 q6, r10
    vshl.i32 q6, q6, #8             @ the saturated value, 65535 << 8
    movs    r10, #255               @ the table's last index
    ldr     r11, =(128 - 8388608)   @ rounding half of the 8 dropped bits, minus 0.5
    dlstp.32 lr, lr
1:
    GATE_REQUANT
    vshl.i32        q1, q0, #1
    vadd.i32        q0, q0, q1      @ v = 3 x
    TANH_LANES r10, r12, r2, q6, r11
    vstrh.32        q3, [r3], #8
    letp    lr, 1b
.endm

    FUNCTION qlstm_arm_gate_finish_tanh_mve
    GATE_FINISH_PROLOGUE
    TANH_FINISH_LOOP
    vpop    {d8-d15}
    pop     {r4-r11, pc}
    .ltorg
    .size qlstm_arm_gate_finish_tanh_mve, . - qlstm_arm_gate_finish_tanh_mve

@ The GRU's new gate (docs/arithmetic.md §13), n = tanh(sat16(sat16(RQ_x(ax)) + RQ_r(r * sat16(RQ_h(ah))))):
@ a first pass replaces each ah by r * sat16(RQ_h(ah)) (|.| <= 2^30, exact in int32), then the
@ tanh finish above runs with RQ_r as its h side. Two passes because one would need more
@ constants than there are registers.
@ void qlstm_arm_gru_new_gate_finish_mve(const int32_t* ax, int32_t* ah, int32_t n, int16_t* out,
@                                        const qlstm_arm_gru_new_gate_finish_mve_params* p,
@                                        const int16_t* reset);
@ p: the tanh finish's (x's and RQ_r's requantizations, the table), then RQ_h's left shift,
@ multiplier, -right and fix mask (gru_s8_arm_mve.cc).
    FUNCTION qlstm_arm_gru_new_gate_finish_mve
    push    {r4-r11, lr}
    vpush   {d8-d15}
    ldr     r12, [sp, #100]         @ p
    ldr     r4, [sp, #104]          @ reset (a low register: widening loads need one)
    add     r5, r12, #36
    ldm     r5, {r6-r9}             @ RQ_h: left, multiplier, -right, fix mask
    vdup.32 q4, r9
    mov     r5, r1
    dlstp.32 lr, r2
1:
    vldrw.u32       q0, [r5]
    REQUANT_Q       q0, r6, r7, r8, q4
    vqshl.s32       q0, q0, #16
    vshr.s32        q0, q0, #16     @ the recurrent part, sat16(RQ_h(ah))
    vldrh.s32       q1, [r4], #8
    vmul.i32        q0, q0, q1
    vstrw.32        q0, [r5], #16
    letp    lr, 1b
    GATE_FINISH_LOAD
    TANH_FINISH_LOOP
    vpop    {d8-d15}
    pop     {r4-r11, pc}
    .ltorg
    .size qlstm_arm_gru_new_gate_finish_mve, . - qlstm_arm_gru_new_gate_finish_mve

@ The LSTM's cell update in four lanes per pass, tail-predicated (docs/arithmetic.md §5):
@   cell = clamp(sat16(rq_fc(f * cell)) + rq_ig(i * g), clip_min, clip_max)   (the add wrapping)
@ void qlstm_arm_cell_update_mve(int32_t count, const int16_t* f, const int16_t* i, const int16_t* g,
@                                int16_t* cell, const qlstm_arm_cell_update_mve_params* p);
@ p: f*c's left shift, multiplier and -right, i*g's, clip_min, clip_max, f*c's and i*g's fix
@ masks (lstm_s8_arm_mve.cc).
    FUNCTION qlstm_arm_cell_update_mve
    push    {r4-r11, lr}
    vpush   {d8-d15}
    ldr     r12, [sp, #104]         @ p (9 core + 8 double registers + 1 argument up)
    ldr     r4, [r12, #32]
    vdup.32 q4, r4                  @ f*c's fix mask
    ldr     r4, [r12, #36]
    vdup.32 q5, r4                  @ i*g's fix mask
    ldr     r4, [r12, #24]
    vdup.32 q6, r4                  @ clip_min
    ldr     r4, [r12, #28]
    vdup.32 q7, r4                  @ clip_max
    ldm     r12, {r4-r9}
    dlstp.32 lr, r0
    ldr     r0, [sp, #100]          @ cell (a low register: widening loads and stores need one)
1:
    vldrh.s32       q0, [r0]
    vldrh.s32       q1, [r1], #8
    vmul.i32        q0, q0, q1
    REQUANT_Q       q0, r4, r5, r6, q4
    vqshl.s32       q0, q0, #16
    vshr.s32        q0, q0, #16
    vldrh.s32       q1, [r2], #8
    vldrh.s32       q2, [r3], #8
    vmul.i32        q1, q1, q2
    REQUANT_Q       q1, r7, r8, r9, q5
    vadd.i32        q0, q0, q1
    vmax.s32        q0, q0, q6
    vmin.s32        q0, q0, q7
    vstrh.32        q0, [r0], #8
    letp    lr, 1b
    vpop    {d8-d15}
    pop     {r4-r11, pc}
    .size qlstm_arm_cell_update_mve, . - qlstm_arm_cell_update_mve

@ The hidden update of one batch row in four lanes per pass (§6), as the Thumb-2 one:
@   h = sat8(rq_ot(o * tanh(cell)) + zero point),  v = (cell * (3 << left) + round) >> right
@ then the gate's tanh of v.
@ void qlstm_arm_hidden_update_mve(int32_t count, const int16_t* o, const int16_t* cell, int8_t* h,
@                                  const qlstm_arm_hidden_update_mve_params* p);
@ p: the pre-scale (multiplier, rounding, -right), the table, o*tanh's left shift, multiplier and
@ -right, the output zero point, o*tanh's fix mask (lstm_s8_arm_mve.cc).
    FUNCTION qlstm_arm_hidden_update_mve
    push    {r4-r11, lr}
    vpush   {d8-d15}
    ldr     r12, [sp, #100]         @ p (9 core + 8 double registers up)
    ldr     r4, [r12, #32]
    vdup.32 q4, r4                  @ the fix mask
    movw    r4, #0xffff
    vdup.32 q5, r4
    vshl.i32 q5, q5, #8             @ the saturated value, 65535 << 8
    ldr     r4, =(128 - 8388608)
    vdup.32 q6, r4                  @ rounding half of the 8 dropped bits, minus 0.5
    ldm     r12, {r4-r11}
    add     r12, r7, #2             @ the table from entry 1
    dlstp.32 lr, r0
    movs    r0, #255                @ the table's last index
1:
    vldrh.s32       q0, [r2], #8    @ cell
    vmul.i32        q0, q0, r4
    vadd.i32        q0, q0, r5
    vshl.s32        q0, r6          @ v
    TANH_LANES r0, r7, r12, q5, q6  @ tanh(cell) in Q0.15
    vldrh.s32       q1, [r1], #8    @ o
    vmul.i32        q3, q3, q1
    STORE_S8_LANES  q3, r3, r8, r9, r10, q4, r11
    letp    lr, 1b
    vpop    {d8-d15}
    pop     {r4-r11, pc}
    .ltorg
    .size qlstm_arm_hidden_update_mve, . - qlstm_arm_hidden_update_mve

@ The GRU's update and output of one batch row in four lanes per pass (docs/arithmetic.md §13):
@   h = sat16(n + RQ_u(z * (h - n))),  y = sat8(RQ_o(h) + zero point)   (the adds wrapping)
@ |h - n| <= 65535 and |z| <= 32768: the product is exact in int32.
@ void qlstm_arm_gru_update_output_mve(int32_t count, const int16_t* z, const int16_t* n, int16_t* h,
@                                      int8_t* y, const qlstm_arm_gru_update_output_mve_params* p);
@ p: RQ_u's left shift, multiplier and -right, RQ_o's, the output zero point, RQ_u's and RQ_o's
@ fix masks (gru_s8_arm_mve.cc).
    FUNCTION qlstm_arm_gru_update_output_mve
    push    {r4-r11, lr}
    vpush   {d8-d15}
    ldr     r12, [sp, #104]         @ p
    ldr     r4, [r12, #28]
    vdup.32 q4, r4                  @ RQ_u's fix mask
    ldr     r4, [r12, #32]
    vdup.32 q5, r4                  @ RQ_o's fix mask
    ldm     r12, {r4-r10}
    dlstp.32 lr, r0
    ldr     r0, [sp, #100]          @ y (a low register: narrowing stores need one)
1:
    vldrh.s32       q0, [r2], #8    @ n
    vldrh.s32       q1, [r3]        @ h
    vsub.i32        q1, q1, q0
    vldrh.s32       q2, [r1], #8    @ z
    vmul.i32        q1, q1, q2
    REQUANT_Q       q1, r4, r5, r6, q4
    vadd.i32        q0, q0, q1
    vqshl.s32       q0, q0, #16
    vshr.s32        q0, q0, #16
    vstrh.32        q0, [r3], #8    @ h
    STORE_S8_LANES  q0, r0, r7, r8, r9, q5, r10   @ y
    letp    lr, 1b
    vpop    {d8-d15}
    pop     {r4-r11, pc}
    .size qlstm_arm_gru_update_output_mve, . - qlstm_arm_gru_update_output_mve
#endif  /* MVE */

#endif  /* Thumb-2 M-profile */
