// Heap-backed scratch for host tests and benchmarks, sized and aligned as the kernel requires.
#ifndef QLSTM_TESTS_SCRATCH_BUFFER_H_
#define QLSTM_TESTS_SCRATCH_BUFFER_H_

#include <cstddef>
#include <vector>

#include "qlstm/lstm_s8.h"

namespace testing_support {

class ScratchBuffer {
 public:
  explicit ScratchBuffer(const qlstm_lstm_dims& dims) : ScratchBuffer(qlstm_lstm_s8_scratch_bytes(&dims)) {}
  // At least `min_bytes` (another op's scratch size).
  explicit ScratchBuffer(size_t min_bytes) : blocks_(min_bytes / sizeof(Block) + 1) {}
  void* data() { return blocks_.data(); }
  size_t bytes() const { return blocks_.size() * sizeof(Block); }
  // A context over this scratch; hidden_state == nullptr means stateless.
  qlstm_lstm_s8_context context(int16_t* cell, int8_t* hidden) {
    return {data(), bytes(), cell, hidden};
  }

 private:
  struct alignas(QLSTM_SCRATCH_ALIGNMENT) Block {
    unsigned char bytes[QLSTM_SCRATCH_ALIGNMENT];
  };
  std::vector<Block> blocks_;
};

}  // namespace testing_support

#endif  // QLSTM_TESTS_SCRATCH_BUFFER_H_
