// A kind probe: a firmware that runs a program the way an emitted NAME_model.cc does, through
// qlstm_program_run_kinds with a table of one kind's handler (QLSTM_PROBE_KIND, a qlstm_op_kind
// value) or of none (-1), and names its status as examples/firmware/main.c does. Built once per
// kind with the CPU's best variant of each kernel only (QLSTM_BEST_VARIANT_ONLY, as
// examples/firmware builds). A model's firmware keeps what its kinds' probes keep, together: the
// link keeps what its roots reach, and its roots are those of its kinds' probes
// (`qlstm compile --target` sums the union from their linker maps).
#include <stdint.h>

#include "qlstm/program_s8.h"
#include "qlstm/status.h"

namespace {
#define QLSTM_PROBE_HANDLER(name, value, handler, member, block, visit) &qlstm_op_handler_##handler,
constexpr const qlstm_op_handler* kEveryKind[] = {QLSTM_OP_KINDS(QLSTM_PROBE_HANDLER)};
#undef QLSTM_PROBE_HANDLER
constexpr int32_t kProbedCount = QLSTM_PROBE_KIND < 0 ? 0 : 1;
constexpr const qlstm_op_handler* kProbed = QLSTM_PROBE_KIND < 0 ? nullptr : kEveryKind[QLSTM_PROBE_KIND < 0 ? 0 : QLSTM_PROBE_KIND];
}  // namespace

// Opaque to the optimizer, so that the call is kept whole.
void* volatile g_probe_pointers[8];

int main() {
  const qlstm_op_handler* const kinds[1] = {kProbed};
  const qlstm_status st = qlstm_program_run_kinds(
      static_cast<const qlstm_program*>(g_probe_pointers[0]), kinds, kProbedCount,
      static_cast<qlstm_program_context*>(g_probe_pointers[1]), g_probe_pointers[2], g_probe_pointers[3],
      static_cast<int32_t>(reinterpret_cast<intptr_t>(g_probe_pointers[4])), static_cast<int8_t*>(g_probe_pointers[5]),
      static_cast<int16_t*>(g_probe_pointers[6]));
  g_probe_pointers[7] = const_cast<char*>(qlstm_status_string(st));
  return static_cast<int>(st);
}
