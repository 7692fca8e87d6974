// Hand-built programs with the kinds around the LSTM and one-step buffers (LSTM -> select -> FC
// -> softmax, LSTM final state -> FC -> table, FC -> LSTM -> FC; GRU -> FC, a bidirectional GRU
// layer; both layouts, stateless and stateful, T = 0) on the emulated CPU named by $QLSTM_DEVICE_CPU: the firmware runs them with
// every LSTM variant it has and compares with the host runner's output and final state, byte
// for byte. Registered per CPU in tests/target/CMakeLists.txt.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "device.h"
#include "hand_programs.h"

namespace {

using namespace testing_support::hand;  // NOLINT: the programs and their sizes

// One program call and what the host runner made of it.
struct HostCall {
  Built program;
  int32_t time_steps = 0;
  bool stateful = false;
  std::vector<int8_t> input, h0, expected, final_h;
  std::vector<int16_t> c0, final_c;
};

void run_on_host(HostCall& c, std::mt19937_64& rng) {
  Built& b = c.program;
  c.input = random_s8(static_cast<size_t>(B * c.time_steps * b.widths[0]), rng);
  std::vector<int8_t>* hidden = nullptr;
  if (c.stateful) {
    c.h0 = random_s8(b.state_values, rng);
    std::uniform_int_distribution<int> s16(-20000, 20000);
    for (size_t k = 0; k < b.state_values; ++k) c.c0.push_back(static_cast<int16_t>(s16(rng)));
    c.final_h = c.h0;
    c.final_c = c.c0;
    hidden = &c.final_h;
  }
  c.expected.assign(qlstm::device::output_count(qlstm::device::program_case("", b.program, c.time_steps)), 0);
  const size_t positions = static_cast<size_t>(b.steps.back() == kOne ? B : B * c.time_steps);
  ASSERT_EQ(c.expected.size(), positions * static_cast<size_t>(b.widths.back()));
  ASSERT_EQ(qlstm_program_run(&b.program, &b.ctx, c.input.data(), c.expected.data(), c.time_steps,
                              hidden ? hidden->data() : nullptr, hidden ? c.final_c.data() : nullptr),
            QLSTM_OK);
}

qlstm::device::BundleCase bundle_case(const HostCall& c, const std::string& name) {
  qlstm::device::BundleCase k = qlstm::device::program_case(name, c.program.program, c.time_steps);
  k.stateful = c.stateful;
  k.check = true;
  k.input = c.input.data();
  k.expected = c.expected.data();
  if (c.stateful) {
    k.h0 = c.h0.data();
    k.c0 = c.c0.data();
    k.final_h = c.final_h.data();
    k.final_c = c.final_c.data();
  }
  return k;
}

TEST(DevicePrograms, EqualTheHostRunner) {
  const char* cpu = std::getenv("QLSTM_DEVICE_CPU");
  if (cpu == nullptr) GTEST_SKIP() << "skipped: QLSTM_DEVICE_CPU names no emulated CPU";
  const qlstm::device::Target target = qlstm::device::find_target(cpu);
  std::mt19937_64 rng(2718);
  std::deque<HostCall> calls;
  std::vector<std::string> names;
  for (const bool time_major : {false, true}) {
    const std::string layout = time_major ? "_tm" : "_bm";
    for (const int32_t step : {-1, 0, 3}) {
      HostCall& c = calls.emplace_back();
      build_classifier(c.program, time_major, step, rng);
      c.time_steps = T;
      names.push_back("classifier_step" + std::to_string(step) + layout);
    }
    HostCall& log_classifier = calls.emplace_back();
    build_classifier(log_classifier.program, time_major, -1, rng, true);
    log_classifier.time_steps = T;
    names.push_back("log_softmax_classifier" + layout);
    for (const bool stateful : {false, true}) {
      for (const int32_t t : {T, 1, 0}) {
        HostCall& c = calls.emplace_back();
        build_final_head(c.program, time_major, rng);
        c.time_steps = t;
        c.stateful = stateful;
        names.push_back(std::string("final_head_T") + std::to_string(t) + (stateful ? "_stateful" : "") + layout);
      }
    }
    for (const int32_t kind : {QLSTM_POOL_AVERAGE, QLSTM_POOL_MAX}) {
      HostCall& p = calls.emplace_back();
      build_pooled(p.program, time_major, kind, rng);
      p.time_steps = T;
      names.push_back(std::string(kind == QLSTM_POOL_MAX ? "max" : "mean") + "_over_time" + layout);
    }
    if (!time_major) {
      HostCall& f = calls.emplace_back();
      build_flattened(f.program, rng);
      f.time_steps = T;
      names.push_back("flattened_steps_fc" + layout);
    }
    HostCall& c = calls.emplace_back();
    build_front(c.program, time_major, rng);
    c.time_steps = T;
    c.stateful = true;
    names.push_back("front_fc" + layout);    // GRU ops: one with an FC head, a bidirectional layer (every step and FINAL), with and
    // without state (its Q0.15 hidden in c0), T = 0 included.
    for (const bool stateful : {false, true}) {
      for (const int32_t steps : {QLSTM_OUTPUT_ALL_STEPS, QLSTM_OUTPUT_FINAL}) {
        const std::string what = std::string(steps == QLSTM_OUTPUT_FINAL ? "_final" : "_seq") +
                                 (stateful ? "_stateful" : "") + layout;
        HostCall& head = calls.emplace_back();
        build_gru(head.program, time_major, steps, true, rng);
        head.time_steps = T;
        head.stateful = stateful;
        names.push_back("gru_fc" + what);
        HostCall& bi = calls.emplace_back();
        build_bidirectional_gru(bi.program, time_major, steps, rng);
        bi.time_steps = steps == QLSTM_OUTPUT_FINAL && stateful ? 0 : T;
        bi.stateful = stateful;
        names.push_back("gru_bidirectional_T" + std::to_string(bi.time_steps) + what);
      }
    }
    // y[:, -1] of a bidirectional layer: the forward op's final state beside the reverse op's
    // first step, run alone.
    HostCall& last = calls.emplace_back();
    build_bidirectional_gru(last.program, time_major, QLSTM_OUTPUT_FINAL, rng, QLSTM_OUTPUT_FIRST);
    last.time_steps = T;
    names.push_back("gru_bidirectional_last_step" + layout);
    // A residual add (and a multiply) of two intermediate buffers; an add written in place over
    // one of them, then a head.
    for (const bool multiply : {false, true}) {
      HostCall& r = calls.emplace_back();
      build_residual(r.program, time_major, multiply, rng);
      r.time_steps = T;
      names.push_back(std::string(multiply ? "mul" : "residual_add") + layout);
    }
    HostCall& in_place = calls.emplace_back();
    build_residual(in_place.program, time_major, false, rng, true);
    in_place.time_steps = T;
    names.push_back("residual_add_in_place_fc" + layout);
  }
  std::vector<qlstm::device::BundleCase> cases;
  for (size_t k = 0; k < calls.size(); ++k) {
    run_on_host(calls[k], rng);
    cases.push_back(bundle_case(calls[k], names[k]));
  }
  const qlstm::device::TempFile bundle("qlstm_device_programs");
  {
    std::ofstream out(bundle.path(), std::ios::binary);
    out << qlstm::device::bundle(cases);
  }
  qlstm::device::RunOptions options;
  options.capture = true;
  const qlstm::device::RunResult r = qlstm::device::run_firmware(target, {"verify", bundle.path(), "all"}, options);
  std::printf("%s", r.console.c_str());
  ASSERT_EQ(r.exit_status, 0) << r.console;
  // The firmware's summary line: "N passed, 0 failed" with N >= 1 (std::regex trips GCC 12's
  // -Wmaybe-uninitialized under the sanitizers).
  int passed = 0, failed = -1;
  std::istringstream lines(r.console);
  for (std::string line; std::getline(lines, line);) {
    char rest = 0;
    if (std::sscanf(line.c_str(), "%d passed, %d failed%c", &passed, &failed, &rest) == 2) break;
    passed = 0;
    failed = -1;
  }
  ASSERT_TRUE(passed >= 1 && failed == 0) << r.console;
  std::printf("device programs on %s: %zu cases, %d runs, device == host\n", cpu, cases.size(), passed);
}

}  // namespace
