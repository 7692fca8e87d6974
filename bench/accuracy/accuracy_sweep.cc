// Accuracy of the int8 kernel against torch.nn.LSTM fp32 on the fixtures of
// tests/accuracy/make_fixtures.py, over observers, weight-scale methods and cell-scale policies,
// next to upstream's method on the same data. Every figure is measured on the fixture's held-out
// test sequences (test_x), never on its calibration data. Prints the markdown tables of
// docs/accuracy.md.
//
// Usage: accuracy_sweep FIXTURE_DIR [--quick]
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "accuracy_fixture.h"
#include "qlstm/compiler/lower/compile_program.h"

using namespace qlstm::compiler;
using testing_support::AccuracyFixture;
using testing_support::upstream_options;

namespace {


struct Result {
  double sqnr = 0, max_err = 0;
  int32_t power = 0;
  bool ok = false;
  std::string choice;
  std::string error;
};

Result evaluate(const AccuracyFixture& f, const CompileOptions& o) {
  Result r;
  try {
    const testing_support::FixtureRun q = testing_support::run_fixture(f, o);
    r.sqnr = sqnr_db(f.test_y, q.y);
    r.max_err = max_abs_error(f.test_y, q.y);
    r.power = q.derived.cell.power;
    r.ok = true;
    const auto& st = q.stats;
    const auto& d = q.derived;
    char b[256];
    std::snprintf(b, sizeof b, "in %s, out %s, headroom %.2f, bias corr %s, rounding %s, clip", st.input_observer.c_str(),
                  st.output_observer.c_str(), d.cell.headroom, d.weights.bias_correction ? "on" : "off",
                  weight_rounding_name(d.weights.weight_rounding));
    r.choice = b;
    for (double c : d.weights.weight_clip_ratio) r.choice += " " + (c > 0 ? std::to_string(c).substr(0, 4) : std::string("-"));
    if (st.tuning == Tuning::kSearch) {
      if (st.score_method == "none") {
        r.choice += "; not searched: " + st.score_note;
      } else {
        std::snprintf(b, sizeof b, "; search score (%s, %d folds) %.1f -> %.1f dB in %d evals", st.score_method.c_str(),
                      st.folds, st.start_sqnr_db, st.final_sqnr_db, st.evaluations);
        r.choice += b;
      }
      const HeldOutEstimate& h = q.held_out;
      if (h.available()) {
        std::snprintf(b, sizeof b, "; report %.1f +- %.1f dB (folds", h.sqnr_db, h.standard_error_db);
        r.choice += b;
        for (double v : h.fold_sqnr_db) r.choice += " " + std::to_string(v).substr(0, 4);
        std::snprintf(b, sizeof b, "), test %.1f dB%s", r.sqnr, h.caution.empty() ? "" : ", with a caution");
        r.choice += b;
      } else {
        r.choice += "; report: no held-out figure";
      }
    }
  } catch (const CompileError& e) {
    r.error = e.what();
  }
  return r;
}

// One choice at a time, no search.
CompileOptions fixed() {
  CompileOptions o;
  o.tuning = Tuning::kNone;
  return o;
}

// The int8 limit without the kernel's fixed-point internals: the boundaries and the weights of
// `d` (int8 x, int8 h fed back, int8 output; per-block int8 weights with their biases), every
// other operation in double. The gap to the kernel is what the internal formats cost.
double float_internals_sqnr(const AccuracyFixture& f, const DerivedLstm& d) {
  const int32_t I = f.lstm.input_size, H = f.lstm.hidden_size;
  // Position (b, t) of a [B][T] or [T][B] sequence.
  auto position = [&](int32_t b, int32_t t) {
    return f.layout == Layout::kBatchMajor ? static_cast<size_t>(b) * f.test_t + t
                                           : static_cast<size_t>(t) * f.test_n + b;
  };
  std::vector<float> y(f.test_y.size());
  for (int32_t b = 0; b < f.test_n; ++b) {
    std::vector<double> h(H, 0.0), c(H, 0.0), pre(4 * H);
    for (int32_t t = 0; t < f.test_t; ++t) {
      const float* xt = f.test_x.data() + position(b, t) * I;
      for (int32_t g = 0; g < 4; ++g) {
        const DerivedGate& dg = d.gates[g];
        for (int32_t u = 0; u < H; ++u) {
          double acc = dg.bias_q[u] * d.input.scale * dg.w_x_scale;
          for (int32_t j = 0; j < I; ++j) acc += dg.w_x_scale * dg.w_x[u * I + j] * d.input.dequantize(d.input.quantize(xt[j]));
          for (int32_t j = 0; j < H; ++j) acc += dg.w_h_scale * dg.w_h[u * H + j] * h[j];
          pre[g * H + u] = acc;
        }
      }
      for (int32_t u = 0; u < H; ++u) {
        auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
        c[u] = sig(pre[QLSTM_GATE_FORGET * H + u]) * c[u] + sig(pre[QLSTM_GATE_INPUT * H + u]) * std::tanh(pre[QLSTM_GATE_CELL * H + u]);
        const double hv = sig(pre[QLSTM_GATE_OUTPUT * H + u]) * std::tanh(c[u]);
        h[u] = d.output.dequantize(d.output.quantize(hv));
        y[position(b, t) * H + u] = static_cast<float>(h[u]);
      }
    }
  }
  return sqnr_db(f.test_y, y);
}

std::string cell(const Result& r) {
  if (!r.ok) return "error";
  char b[64];
  std::snprintf(b, sizeof b, "%.1f (P=%d)", r.sqnr, r.power);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: accuracy_sweep FIXTURE_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  std::vector<AccuracyFixture> fixtures;
  for (const char* name : testing_support::kHeldOutFixtures) fixtures.push_back(testing_support::load_accuracy_fixture(dir, name));

  std::printf("### SQNR (dB) of the int8 output vs torch fp32 on held-out sequences, default qlstm options vs upstream\n\n");
  std::printf("| fixture | I | H | calibration N x T | test N x T | upstream method | qlstm, no search | qlstm default (search) | gain | max abs err upstream | max abs err qlstm |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  double total_gain = 0;
  for (const auto& f : fixtures) {
    const Result up = evaluate(f, upstream_options(f));
    const Result nf = evaluate(f, fixed());
    const Result q = evaluate(f, CompileOptions{});
    total_gain += q.sqnr - up.sqnr;
    std::printf("| %s | %d | %d | %d x %d | %d x %d | %s | %s | %s | %+.1f | %.4f | %.4f |\n", f.name.c_str(),
                f.lstm.input_size, f.lstm.hidden_size, f.calib_n, f.calib_t, f.test_n, f.test_t,
                cell(up).c_str(), cell(nf).c_str(), cell(q).c_str(), q.sqnr - up.sqnr, up.max_err, q.max_err);
  }
  std::printf("\nMean gain of the default over upstream's method: %+.2f dB over %zu fixtures.\n", total_gain / static_cast<double>(fixtures.size()), fixtures.size());
  std::printf("\n### Where the error comes from: the same int8 boundaries and weights with double internals\n\n| fixture | upstream: kernel | upstream: double internals | qlstm: kernel | qlstm: double internals |\n|---|---|---|---|---|\n");
  for (const auto& f : fixtures) {
    const testing_support::FixtureRun up = testing_support::run_fixture(f, upstream_options(f));
    const testing_support::FixtureRun ql = testing_support::run_fixture(f, CompileOptions{});
    std::printf("| %s | %.1f | %.1f | %.1f | %.1f |\n", f.name.c_str(), sqnr_db(f.test_y, up.y),
                float_internals_sqnr(f, up.derived), sqnr_db(f.test_y, ql.y), float_internals_sqnr(f, ql.derived));
  }
  std::printf("\nChoices of the search:\n\n");
  for (const auto& f : fixtures) std::printf("- %s: %s\n", f.name.c_str(), evaluate(f, CompileOptions{}).choice.c_str());
  if (argc > 2 && std::string(argv[2]) == "--quick") return 0;

  std::printf("\n### Boundary observer (input and output); no search, other choices default\n\n| fixture |");
  const char* observers[] = {"minmax", "percentile:99.99", "percentile:99.9", "mse", "kl"};
  for (const char* o : observers) std::printf(" %s |", o);
  std::printf("\n|---|---|---|---|---|---|\n");
  for (const auto& f : fixtures) {
    std::printf("| %s |", f.name.c_str());
    for (const char* obs : observers) {
      CompileOptions o = fixed();
      o.input_observer = parse_observer(obs);
      o.output_observer = parse_observer(obs);
      std::printf(" %s |", cell(evaluate(f, o)).c_str());
    }
    std::printf("\n");
  }

  std::printf("\n### Weight scales, bias correction and adaptive rounding; no search\n\n| fixture | maxabs | mse (weight error) | maxabs + bias correction | mse + bias correction | maxabs, adaptive rounding | maxabs + bias correction, adaptive rounding |\n|---|---|---|---|---|---|---|\n");
  for (const auto& f : fixtures) {
    std::printf("| %s |", f.name.c_str());
    for (int k = 0; k < 6; ++k) {
      CompileOptions o = fixed();
      o.weights.weight_method = k % 2 == 0 || k >= 4 ? WeightScaleMethod::kMaxAbs : WeightScaleMethod::kMseClip;
      o.weights.bias_correction = k == 2 || k == 3 || k == 5;
      if (k >= 4) o.weights.weight_rounding = WeightRounding::kAdaptive;
      std::printf(" %s |", cell(evaluate(f, o)).c_str());
    }
    std::printf("\n");
  }

  std::printf("\n### Cell-scale policy; no search\n\n| fixture | calibrated:1 | calibrated:1.25 | calibrated:2 | calibrated:4 (upstream, 2 bits) | sequence-bound:T | fixed:-12 |\n|---|---|---|---|---|---|---|\n");
  for (const auto& f : fixtures) {
    std::printf("| %s |", f.name.c_str());
    const std::string policies[] = {"calibrated:1", "calibrated:1.25", "calibrated:2", "calibrated:4",
                                    "sequence-bound:" + std::to_string(f.test_t), "fixed:-12"};
    for (const auto& p : policies) {
      CompileOptions o = fixed();
      o.cell_scale = parse_cell_policy(p);
      const Result r = evaluate(f, o);
      std::printf(" %s, %.4f |", cell(r).c_str(), r.max_err);
    }
    std::printf("\n");
  }
  return 0;
}
