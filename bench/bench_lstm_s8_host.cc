// Host timings of each kernel variant on the benchmark shapes (docs/performance.md). Timings are
// for comparing variants within one run; they are never asserted in tests.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "qlstm/kernels.h"
#include "random_lstm.h"
#include "scratch_buffer.h"

namespace {

struct Shape {
  const char* name;
  qlstm_lstm_dims dims;
  bool time_major;
};
const Shape kShapes[] = {
    {"tiny", {1, 16, 8, 16}, false},   {"kws", {1, 49, 10, 64}, false},
    {"medium", {1, 32, 32, 128}, false}, {"large", {1, 25, 40, 256}, false},
    {"batch4", {4, 16, 16, 32}, true},
};

void run(benchmark::State& state, const qlstm::LstmS8Variant* v, Shape shape) {
  std::mt19937_64 rng(1);
  testing_support::RandomLstm l;
  testing_support::make_random_lstm(l, rng, shape.dims, shape.time_major,
                                    testing_support::Regime::kTypical);
  const qlstm_lstm_dims& d = shape.dims;
  testing_support::ScratchBuffer scratch(d);
  std::vector<int16_t> cell(static_cast<size_t>(d.batch * d.hidden_size));
  std::vector<int8_t> out(static_cast<size_t>(d.batch * d.time_steps * d.hidden_size));
  qlstm_lstm_s8_context ctx = scratch.context(cell.data(), nullptr);
  for (auto _ : state) {
    if (qlstm::run_lstm_s8(*v, &l.params, &ctx, l.input.data(), out.data()) != QLSTM_OK) {
      state.SkipWithError("kernel error");
      break;
    }
    benchmark::DoNotOptimize(out.data());
  }
  const double macs = 4.0 * d.batch * d.time_steps * d.hidden_size * (d.input_size + d.hidden_size);
  state.counters["MAC/s"] = benchmark::Counter(macs, benchmark::Counter::kIsIterationInvariantRate);
}

int register_all() {
  size_t n = 0;
  const qlstm::LstmS8Variant* const* all = qlstm::lstm_s8_variants(&n);
  for (size_t k = 0; k < n; ++k) {
    if (all[k]->is_supported != nullptr && !all[k]->is_supported()) continue;
    for (const Shape& s : kShapes) {
      benchmark::RegisterBenchmark((std::string(all[k]->name) + "/" + s.name).c_str(), run, all[k], s)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  return 0;
}
const int kRegistered = register_all();

}  // namespace

BENCHMARK_MAIN();
