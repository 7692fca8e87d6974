/* Startup for the QEMU MPS2/MPS3 boards: vector table, reset (FPU and MVE enabled before any
 * float or vector instruction), and a fault handler that exits non-zero through semihosting.
 * newlib's rdimon crt0 (_start) then zeroes .bss, sets up argv from the semihosting command line
 * and calls main; exit(status) reaches the host as QEMU's exit status. */
#include <stdint.h>

extern uint32_t __stack_top;
extern void _start(void);

#define SCB_CPACR (*(volatile uint32_t*)0xE000ED88u)
#define CPACR_CP10_CP11_FULL (0xFu << 20)
#define SEMIHOSTING_SYS_EXIT 0x18u
#define ADP_STOPPED_RUN_TIME_ERROR 0x20023u

void Reset_Handler(void) {
  SCB_CPACR |= CPACR_CP10_CP11_FULL;
  __asm volatile("dsb\n\tisb" ::: "memory");
  _start();
  for (;;) {
  }
}

static void Fault_Handler(void) {
  register uint32_t op __asm("r0") = SEMIHOSTING_SYS_EXIT;
  register uint32_t reason __asm("r1") = ADP_STOPPED_RUN_TIME_ERROR;
  __asm volatile("bkpt 0xab" : : "r"(op), "r"(reason) : "memory");
  for (;;) {
  }
}

typedef void (*Handler)(void);
__attribute__((section(".isr_vector"), used)) const Handler g_vectors[16] = {
    (Handler)&__stack_top, Reset_Handler, Fault_Handler /* NMI */, Fault_Handler /* HardFault */,
    Fault_Handler /* MemManage */, Fault_Handler /* BusFault */, Fault_Handler /* UsageFault */,
    Fault_Handler /* SecureFault */, 0, 0, 0, Fault_Handler /* SVC */, Fault_Handler /* Debug */, 0,
    Fault_Handler /* PendSV */, Fault_Handler /* SysTick */};
