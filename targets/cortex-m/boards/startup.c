/* Startup for the QEMU MPS2/MPS3 boards: vector table, reset (FPU and MVE enabled before any
 * float or vector instruction), the C runtime's start, and a fault handler that exits non-zero
 * through semihosting; main's return value reaches the host as QEMU's exit status.
 *
 * The start is done here rather than by newlib's rdimon crt0, which moves the stack to where
 * QEMU's SYS_HEAPINFO says RAM is: on the MPS3-AN547 that is the 512 KiB ITCM, below the heap,
 * so every malloc (and so every fopen) would fail. Here the stack stays where the vector table
 * puts it (the top of the board's RAM) and the heap grows from the end of .bss towards it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern uint32_t __stack_top;
extern uint32_t __bss_start__, __bss_end__;
extern void initialise_monitor_handles(void);
extern void __libc_init_array(void);
extern void __libc_fini_array(void);
extern int main(int argc, char** argv);

#define SCB_CPACR (*(volatile uint32_t*)0xE000ED88u)
/* CP10 and CP11 full access: the FPU, and on Armv8.1-M also the MVE (Helium) unit. */
#define CPACR_CP10_CP11_FULL (0xFu << 20)
#define SEMIHOSTING_SYS_GET_CMDLINE 0x15u
#define SEMIHOSTING_SYS_EXIT 0x18u
#define ADP_STOPPED_RUN_TIME_ERROR 0x20023u
#define MAX_ARGS 16

static uint32_t semihosting_call(uint32_t op, void* arg) {
  register uint32_t r0 __asm("r0") = op;
  register void* r1 __asm("r1") = arg;
  __asm volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

/* argv from the semihosting command line (QEMU's -semihosting-config arg=...), split at spaces. */
static int command_line(char** argv) {
  static char line[1024];
  struct {
    char* buffer;
    uint32_t size;
  } block = {line, sizeof line - 1};
  int argc = 0;
  if (semihosting_call(SEMIHOSTING_SYS_GET_CMDLINE, &block) != 0) return 0;
  line[block.size < sizeof line ? block.size : sizeof line - 1] = '\0';
  for (char* p = line; *p != '\0' && argc < MAX_ARGS;) {
    while (*p == ' ') *p++ = '\0';
    if (*p == '\0') break;
    argv[argc++] = p;
    while (*p != '\0' && *p != ' ') ++p;
  }
  argv[argc] = NULL;
  return argc;
}

void Reset_Handler(void) {
#if defined(__ARM_FP) || defined(__ARM_FEATURE_MVE)
  SCB_CPACR |= CPACR_CP10_CP11_FULL;
  __asm volatile("dsb\n\tisb" ::: "memory");
#endif
  memset(&__bss_start__, 0, (size_t)((char*)&__bss_end__ - (char*)&__bss_start__));
  initialise_monitor_handles();
  __libc_init_array();
  atexit(__libc_fini_array);
  static char* argv[MAX_ARGS + 1];
  const int argc = command_line(argv);
  exit(main(argc, argv));
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
