#include "qlstm/compiler/quantized_lstm.h"
#include "qlstm/compiler/lower/quantized_lstm_s16.h"

#include <algorithm>
#include <iterator>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>
#include <tuple>

#include "qlstm/compiler/ops/op_kind.h"
#include "qlstm/compiler/lower/weight_rounding.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace compiler {
namespace {

struct alignas(QLSTM_SCRATCH_ALIGNMENT) ScratchBlock {
  unsigned char bytes[QLSTM_SCRATCH_ALIGNMENT];
};

void check_shape(const SequenceShape& shape, size_t values, int32_t features, const char* what) {
  if (shape.batch < 1 || shape.time_steps < 0) {
    throw CompileError(std::string(what) + ": batch must be >= 1 and time steps >= 0");
  }
  const size_t want = static_cast<size_t>(shape.batch) * static_cast<size_t>(shape.time_steps) *
                      static_cast<size_t>(features);
  if (values != want) {
    throw CompileError(std::string(what) + ": " + std::to_string(values) + " values, expected " +
                       std::to_string(want) + " (B=" + std::to_string(shape.batch) +
                       " T=" + std::to_string(shape.time_steps) + " x " +
                       std::to_string(features) + ")");
  }
}

}  // namespace

void CalibrationSet::add_batch(const std::vector<float>& x, const SequenceShape& shape,
                               int32_t input_size) {
  check_shape(shape, x.size(), input_size, "calibration batch");
  const size_t I = static_cast<size_t>(input_size);
  for (int32_t b = 0; b < shape.batch; ++b) {
    CalibrationSequence s;
    s.time_steps = shape.time_steps;
    s.values.resize(static_cast<size_t>(shape.time_steps) * I);
    for (int32_t t = 0; t < shape.time_steps; ++t) {
      const size_t row = shape.layout == Layout::kTimeMajor
                             ? static_cast<size_t>(t) * shape.batch + b
                             : static_cast<size_t>(b) * shape.time_steps + t;
      std::copy_n(x.begin() + static_cast<ptrdiff_t>(row * I), I,
                  s.values.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(t) * I));
    }
    sequences.push_back(std::move(s));
  }
}

const char* tuning_name(Tuning t) { return t == Tuning::kSearch ? "search" : "none"; }

std::vector<std::string> calibration_warnings(const CalibrationSet& calibration, int32_t input_size) {
  const size_t I = static_cast<size_t>(std::max(input_size, 0));
  std::vector<float> first(I);
  std::vector<bool> seen(I, false), varies(I, false);
  int64_t steps = 0;
  for (const CalibrationSequence& s : calibration.sequences) {
    const size_t n = std::min(s.values.size(), static_cast<size_t>(std::max(s.time_steps, 0)) * I);
    for (size_t v = 0; v < n; ++v) {
      const size_t f = v % I;
      if (!seen[f]) {
        seen[f] = true;
        first[f] = s.values[v];
      } else if (!(s.values[v] == first[f])) {
        varies[f] = true;
      }
    }
    steps += static_cast<int64_t>(n / std::max<size_t>(I, 1));
  }
  if (steps == 0) return {};  // no data: compile's own error
  std::vector<std::string> warnings;
  for (size_t f = 0; f < I; ++f) {
    if (varies[f]) continue;
    std::ostringstream m;
    m << "calibration: input feature " << f << " is constant (" << first[f] << ") over all " << steps << " steps";
    warnings.push_back(m.str());
  }
  if (warnings.size() == I) {
    throw CompileError("calibration: no input feature varies over the calibration set (each of the " +
                       std::to_string(I) + " is constant over all " + std::to_string(steps) +
                       " steps): it says nothing about the input's range");
  }
  return warnings;
}

namespace {

// Sequence k of a calibration set: [T][I] values, all finite (the message names where not).
void check_sequence(const CalibrationSequence& s, size_t k, int32_t I) {
  if (s.time_steps < 0 || s.values.size() != static_cast<size_t>(s.time_steps) * static_cast<size_t>(I)) {
    throw CompileError("calibration: sequence " + std::to_string(k) + " has " + std::to_string(s.values.size()) +
                       " values, expected " + std::to_string(s.time_steps) + " x " + std::to_string(I));
  }
  for (size_t v = 0; v < s.values.size(); ++v) {
    if (!std::isfinite(s.values[v])) {
      std::ostringstream m;
      m << "calibration: sequence " << k << " has a non-finite value (" << s.values[v] << ") at step "
        << v / static_cast<size_t>(I) << ", feature " << v % static_cast<size_t>(I);
      throw CompileError(m.str());
    }
  }
}

// Sequence k's float output: all finite.
void check_output(const std::vector<float>& output, size_t k) {
  for (float v : output) {
    if (!std::isfinite(v)) {
      throw CompileError("calibration: the float model produced a non-finite output on sequence " +
                         std::to_string(k));
    }
  }
}

// What a set of observed sequences gives a derivation: the values its observers read, the means
// bias correction folds in and the largest |c| the cell scale covers.
struct DerivationData {
  std::vector<float> inputs, outputs;
  std::vector<double> mean_x, mean_h;
  double cell_max = 0;
  int64_t steps = 0;
  std::vector<double> moment;  // E[z z^T], z = [x_t; h_{t-1}]: adaptive rounding's (when needed)
  size_t excluded_begin = 0, excluded_end = 0;  // a fold's complement: the sequences it leaves out
};

// `members` of the observed sequences (the calibration set, or a fold's complement), summed per
// sequence in order: a fold's complement here and the same sequences compiled alone (the
// held-out estimate) derive the same parameters.
DerivationData derivation_data(const FloatLstm& source, const OpObservation& observed,
                               const std::vector<size_t>& members) {
  const size_t I = static_cast<size_t>(source.input_size), H = static_cast<size_t>(source.hidden_size);
  DerivationData d;
  d.mean_x.assign(I, 0.0);
  d.mean_h.assign(H, 0.0);
  for (size_t k : members) {
    const CalibrationSequence& s = observed.inputs.sequences[k];
    const std::vector<float>& output = observed.outputs[k];
    for (size_t v = 0; v < s.values.size(); ++v) d.mean_x[v % I] += s.values[v];
    d.inputs.insert(d.inputs.end(), s.values.begin(), s.values.end());
    d.outputs.insert(d.outputs.end(), output.begin(), output.end());
    // The hidden state shares the output's quantization: it covers h0 too (a learned initial
    // state need not lie in the range the steps produce).
    d.outputs.insert(d.outputs.end(), s.h0.begin(), s.h0.end());
    d.steps += s.time_steps;
    d.cell_max = std::max(d.cell_max, observed.sequence_cell_max_abs.at(k));
    const std::vector<double>& sum_h = observed.sequence_sum_h.at(k);
    for (size_t u = 0; u < H && u < sum_h.size(); ++u) d.mean_h[u] += sum_h[u];
  }
  if (d.inputs.empty()) throw CompileError("calibration: every sequence has zero time steps");
  // Each recurrent input h_{t-1} is the previous output (h_{-1} = 0), so E[h] over the steps
  // is close enough to the mean of the outputs.
  for (double& m : d.mean_x) m /= static_cast<double>(d.steps);
  for (double& m : d.mean_h) m /= static_cast<double>(d.steps);
  return d;
}

// The sequences the search scores, among `candidates` (indices of observed sequences): as many
// as fit `budget` MACs but at least `at_least`, at an even stride over all candidates with steps
// (index floor(j * N / n) for j < n, so the first always), so that the order of the file does not
// decide which part of the data the search tunes on.
std::vector<size_t> scored_indices(const std::vector<CalibrationSequence>& sequences, const std::vector<size_t>& candidates,
                                   int64_t macs_per_step, int64_t budget, size_t at_least) {
  std::vector<size_t> eligible;
  for (size_t k : candidates) {
    if (sequences[k].time_steps > 0) eligible.push_back(k);
  }
  if (eligible.empty() || budget <= 0) return {};
  const size_t N = eligible.size(), floor_n = std::clamp<size_t>(at_least, 1, N);
  auto pick = [&](size_t n) {
    std::vector<size_t> p(n);
    for (size_t j = 0; j < n; ++j) p[j] = eligible[j * N / n];
    return p;
  };
  auto cost = [&](const std::vector<size_t>& p) {
    int64_t steps = 0;
    for (size_t k : p) steps += sequences[k].time_steps;
    return steps * macs_per_step;
  };
  size_t n = N;
  std::vector<size_t> p = pick(n);
  for (int64_t c = cost(p); c > budget && n > floor_n; c = cost(p)) {
    // Shrink in proportion to the excess (the lengths may differ), by at least one.
    const auto shrunk = static_cast<size_t>(static_cast<double>(n) * static_cast<double>(budget) / static_cast<double>(c));
    n = std::max(floor_n, std::min(n - 1, shrunk));
    p = pick(n);
  }
  return p;
}

// Appends to `to` what the search scores of one sequence's output ([T][H]): every step, or the
// one step the head reads (step < 0 counts from the last; a sequence without it adds nothing).
template <class T>
void append_scored(std::vector<T>& to, const std::vector<T>& output, int32_t time_steps, int32_t H,
                   const std::optional<int32_t>& step) {
  if (!step) {
    to.insert(to.end(), output.begin(), output.end());
    return;
  }
  const int32_t t = *step < 0 ? time_steps + *step : *step;
  if (t < 0 || t >= time_steps) return;
  const auto row = output.begin() + static_cast<ptrdiff_t>(t) * H;
  to.insert(to.end(), row, row + H);
}

// The real range an int8 quantization covers.
Range range_of(const AffineQuant& q) { return {q.dequantize(-128), q.dequantize(127)}; }

// Upstream's cell policy: 2 bits of headroom over the calibrated max |c|.
constexpr double kUpstreamCellHeadroom = 4.0;

// The starting point and the search space of the tuner.
struct Candidate {
  size_t input_range = 0, output_range = 0;
  double headroom = 0;  // calibrated policy only
  bool bias_correction = false;
  std::array<double, kWeightBlocks> clip{};
  bool adaptive_rounding = false;
};

// Squared signal and squared error of `test` against `reference`.
struct NoiseSums {
  double signal = 0, noise = 0;
  double sqnr_db() const {
    return noise == 0 ? std::numeric_limits<double>::infinity() : 10.0 * std::log10(signal / noise);
  }
};
NoiseSums noise_sums(const std::vector<float>& reference, const std::vector<float>& test) {
  NoiseSums n;
  for (size_t k = 0; k < reference.size() && k < test.size(); ++k) {
    n.signal += static_cast<double>(reference[k]) * reference[k];
    const double d = static_cast<double>(reference[k]) - test[k];
    n.noise += d * d;
  }
  return n;
}

// The mean over groups of a candidate's gain in dB over the current best, and the spread of that
// gain between the groups: its sample standard deviation (0 for one group). An exact group
// (+inf dB) counts as kExactDb.
struct GainSpread {
  double mean = 0, spread = 0;
};
GainSpread gain_spread(const std::vector<double>& from, const std::vector<double>& to) {
  constexpr double kExactDb = 200;
  std::vector<double> d;
  for (size_t g = 0; g < from.size() && g < to.size(); ++g) d.push_back(std::min(to[g], kExactDb) - std::min(from[g], kExactDb));
  GainSpread r;
  if (d.empty()) return r;
  for (double v : d) r.mean += v;
  r.mean /= static_cast<double>(d.size());
  if (d.size() < 2) return r;
  double ss = 0;
  for (double v : d) ss += (v - r.mean) * (v - r.mean);
  r.spread = std::sqrt(ss / static_cast<double>(d.size() - 1));
  return r;
}

}  // namespace

FloatResult OpObservation::add(const FloatLstm& source, CalibrationSequence sequence, bool validation) {
  const size_t H = static_cast<size_t>(source.hidden_size);
  if (validation && !validation_begin) validation_begin = inputs.sequences.size();
  if (!validation && validation_begin) {
    throw CompileError("calibration: a calibration sequence after the validation sequences");
  }
  sum_h.resize(H, 0.0);
  double seq_cell_max = 0;
  std::vector<double> seq_sum_h(H, 0.0);
  for (double c : sequence.c0) seq_cell_max = std::max(seq_cell_max, std::fabs(c));  // the cell scale covers c0
  FloatResult r = compiler::run_float(
      source, sequence.values.data(), {1, sequence.time_steps, Layout::kBatchMajor},
      sequence.h0.empty() ? nullptr : sequence.h0.data(), sequence.c0.empty() ? nullptr : sequence.c0.data(),
      [&](const double* c, const double* h, int32_t n) {
        for (int32_t u = 0; u < n; ++u) {
          if (c != nullptr) seq_cell_max = std::max(seq_cell_max, std::fabs(c[u]));  // a GRU has no cell
          seq_sum_h[static_cast<size_t>(u)] += h[u];
          if (validation) continue;
          sum_h[static_cast<size_t>(u)] += h[u];
        }
      });
  if (!validation) cell_max_abs = std::max(cell_max_abs, seq_cell_max);
  sequence_cell_max_abs.push_back(seq_cell_max);
  sequence_sum_h.push_back(std::move(seq_sum_h));
  inputs.sequences.push_back(std::move(sequence));
  outputs.push_back(r.output);
  return r;
}

OpObservation observe_op(const FloatLstm& source, const CalibrationSet& calibration, const ProgressFn& progress) {
  const int32_t I = source.input_size, H = source.hidden_size;
  OpObservation observed;
  for (size_t k = 0; k < calibration.sequences.size(); ++k) {
    const CalibrationSequence& s = calibration.sequences[k];
    check_sequence(s, k, I);
    for (const std::vector<float>* st : {&s.h0, &s.c0}) {
      if (!st->empty() && st->size() != static_cast<size_t>(H)) {
        throw CompileError("calibration: sequence " + std::to_string(k) + " has an initial state of " +
                           std::to_string(st->size()) + " values, expected " + std::to_string(H));
      }
    }
    check_output(observed.add(source, s).output, k);
    if (progress) progress("calibrating", static_cast<int64_t>(k + 1), static_cast<int64_t>(calibration.sequences.size()));
  }
  return observed;
}

QuantizedLstm QuantizedLstm::compile(const FloatLstm& source, const CalibrationSet& calibration,
                                     const CompileOptions& options) {
  source.validate();
  if (calibration.sequences.empty()) {
    throw CompileError("calibration: the calibration set is empty");
  }
  return compile(source, observe_op(source, calibration, options.progress), options);
}

QuantizedLstm QuantizedLstm::compile(const FloatLstm& source, const OpObservation& observed,
                                     const CompileOptions& options, const OpBoundaries& fixed) {
  source.validate();
  const std::vector<CalibrationSequence>& sequences = observed.inputs.sequences;
  const size_t calibration_count = observed.validation_begin.value_or(sequences.size());
  if (calibration_count == 0) throw CompileError("calibration: the calibration set is empty");
  if (observed.outputs.size() != sequences.size() || observed.sequence_sum_h.size() != sequences.size() ||
      observed.sequence_cell_max_abs.size() != sequences.size()) {
    throw CompileError("calibration: the observation has " + std::to_string(observed.outputs.size()) +
                       " float outputs for " + std::to_string(sequences.size()) + " sequences");
  }
  for (size_t k = 0; k < sequences.size(); ++k) check_output(observed.outputs[k], k);
  const int32_t H = source.hidden_size;
  std::vector<size_t> calibration(calibration_count);
  std::iota(calibration.begin(), calibration.end(), size_t{0});

  CalibrationStats stats;
  stats.tuning = options.tuning;
  stats.sequences = static_cast<int64_t>(calibration_count);
  // The derivation sets: [0] every calibration sequence (the result's), then each fold's complement.
  std::vector<DerivationData> sets;
  sets.reserve(1 + static_cast<size_t>(std::max(options.search_folds, 2)));
  sets.push_back(derivation_data(source, observed, calibration));
  const DerivationData& all = sets.front();
  stats.steps = all.steps;
  const auto [in_lo, in_hi] = std::minmax_element(all.inputs.begin(), all.inputs.end());
  const auto [out_lo, out_hi] = std::minmax_element(all.outputs.begin(), all.outputs.end());
  stats.input_observed = {*in_lo, *in_hi};
  stats.output_observed = {*out_lo, *out_hi};
  stats.cell_max_abs = all.cell_max;

  // What the search tunes: each choice neither fixed by the program (a boundary decided outside
  // the op) nor by the user (UserFixedChoices), who gets exactly what was asked for.
  const UserFixedChoices& user = options.user_fixed;
  bool searching = options.tuning == Tuning::kSearch;
  // The score groups: each scores its sequences with the op derived from sets[set]. K-fold:
  // contiguous blocks of the calibration sequences (a time-ordered file's folds are periods, so a
  // fold's score includes the drift between periods); with a validation set: groups of it.
  struct Group {
    size_t set = 0;
    std::vector<size_t> scored;
  };
  std::vector<Group> groups;
  if (searching) {
    const int64_t macs_per_step = int64_t{source.gate_count()} * H * (source.input_size + H);
    const size_t folds = static_cast<size_t>(std::max(options.search_folds, 2));
    if (observed.validation_begin) {
      std::vector<size_t> validation(sequences.size() - calibration_count);
      std::iota(validation.begin(), validation.end(), calibration_count);
      const std::vector<size_t> scored = scored_indices(sequences, validation, macs_per_step, options.search_max_macs, folds);
      const size_t G = std::min(folds, scored.size());
      for (size_t g = 0; g < G; ++g) {
        groups.push_back({0, std::vector<size_t>(scored.begin() + static_cast<ptrdiff_t>(g * scored.size() / G),
                                                 scored.begin() + static_cast<ptrdiff_t>((g + 1) * scored.size() / G))});
      }
      stats.score_method = "validation";
    } else if (calibration_count >= 2) {
      const size_t K = std::min(folds, calibration_count);
      const std::vector<size_t> scored = scored_indices(sequences, calibration, macs_per_step, options.search_max_macs, K);
      for (size_t f = 0; f < K; ++f) {
        const size_t begin = f * calibration_count / K, end = (f + 1) * calibration_count / K;
        std::vector<size_t> complement;
        for (size_t k = 0; k < calibration_count; ++k) {
          if (k < begin || k >= end) complement.push_back(k);
        }
        Group g;
        for (size_t k : scored) {
          if (k >= begin && k < end) g.scored.push_back(k);
        }
        if (g.scored.empty()) continue;
        try {
          sets.push_back(derivation_data(source, observed, complement));
        } catch (const CompileError&) {
          continue;  // the other folds have no steps: nothing to derive this fold's op from
        }
        sets.back().excluded_begin = begin;
        sets.back().excluded_end = end;
        g.set = sets.size() - 1;
        groups.push_back(std::move(g));
      }
      stats.score_method = "k-fold";
    }
    if (groups.size() < 2) {
      stats.score_note = observed.validation_begin
                             ? "fewer than 2 validation sequences with steps: nothing to score on"
                             : "fewer than 2 calibration sequences with steps: nothing to hold out";
      stats.score_method = "none";
      groups.clear();
      searching = false;
    }
  }
  // Upstream's observers are candidates whenever a search was asked for (its start), even if
  // the data leaves nothing to search with.
  const bool tuned = options.tuning == Tuning::kSearch;
  // A GRU has no cell to scale, and adaptive rounding does not describe its new gate's recurrent
  // operand r * h (derive_gru.h): neither is a choice for it.
  const bool gru = source.cell == CellKind::kGru;
  const int32_t weight_blocks = 2 * source.gate_count();
  const bool tune_input = tuned && !fixed.input && !user.input_observer;
  const bool tune_output = tuned && !fixed.output && !user.output_observer;
  const bool tune_headroom =
      tuned && !gru && options.cell_scale.policy == CellScalePolicy::kCalibrated && !user.cell_headroom;
  const bool search_input = searching && tune_input;
  const bool search_output = searching && tune_output;
  const bool search_headroom = searching && tune_headroom;
  const bool search_bias = searching && !user.bias_correction;
  const bool search_clips = searching && !user.weights;
  const bool search_rounding = searching && !gru && !user.weight_rounding;
  for (const auto& [name, user_set, searched] :
       {std::tuple<const char*, bool, bool>{"input_observer", user.input_observer, search_input},
        {"output_observer", user.output_observer, search_output},
        {"cell_headroom", user.cell_headroom, search_headroom},
        {"bias_correction", user.bias_correction, search_bias},
        {"weight_clips", user.weights, search_clips},
        {"weight_rounding", user.weight_rounding, search_rounding}}) {
    if (user_set) stats.fixed_by_user.push_back(name);
    if (searched) stats.searched.push_back(name);
  }

  // Candidate observers, the requested one first; each set's ranges by each.
  std::vector<ObserverConfig> in_configs = {options.input_observer}, out_configs = {options.output_observer};
  for (const char* name : {"minmax", "percentile:99.99", "percentile:99.9", "mse", "kl"}) {
    if (tune_input && (search_input || in_configs.size() < 2)) in_configs.push_back(parse_observer(name));
    if (tune_output && (search_output || out_configs.size() < 2)) out_configs.push_back(parse_observer(name));
  }
  auto label = [](const ObserverConfig& c) {
    return c.kind == ObserverKind::kPercentile ? std::string("percentile:") + std::to_string(c.percentile).substr(0, 5)
                                               : std::string(observer_name(c.kind));
  };
  std::vector<std::vector<Range>> in_ranges(sets.size()), out_ranges(sets.size());
  for (size_t s = 0; s < sets.size(); ++s) {
    for (const ObserverConfig& c : in_configs) {
      in_ranges[s].push_back(fixed.input ? range_of(fixed.input->quant) : choose_range(sets[s].inputs, c));
    }
    for (const ObserverConfig& c : out_configs) {
      out_ranges[s].push_back(fixed.output ? range_of(fixed.output->quant) : choose_range(sets[s].outputs, c));
    }
  }

  // Adaptive rounding's second moment per set: each calibration sequence's sum computed once and
  // added, in order, to every set that holds it.
  if (search_rounding || options.derive.weight_rounding == WeightRounding::kAdaptive) {
    std::vector<std::vector<double>> sums(sets.size());
    std::vector<int64_t> sum_steps(sets.size(), 0);
    for (size_t k : calibration) {
      const CalibrationSequence& seq = sequences[k];
      std::vector<double> one;
      int64_t steps = 0;
      accumulate_operand_moment(one, steps, seq.values.data(), observed.outputs[k].data(),
                                seq.h0.empty() ? nullptr : seq.h0.data(), seq.time_steps, source.input_size, H,
                                source.reverse);
      if (steps == 0) continue;
      auto add = [&](std::vector<double>& to, int64_t& to_steps) {
        if (to.empty()) to.assign(one.size(), 0.0);
        for (size_t v = 0; v < one.size(); ++v) to[v] += one[v];
        to_steps += steps;
      };
      for (size_t set = 0; set < sets.size(); ++set) {
        if (k < sets[set].excluded_begin || k >= sets[set].excluded_end) add(sums[set], sum_steps[set]);
      }
    }
    for (size_t set = 0; set < sets.size(); ++set) {
      if (sum_steps[set] == 0) continue;
      sets[set].moment = std::move(sums[set]);
      for (double& v : sets[set].moment) v /= static_cast<double>(sum_steps[set]);
    }
  }

  auto build = [&](const Candidate& c, size_t set) {
    DeriveOptions d = options.derive;
    d.weight_rounding = c.adaptive_rounding ? WeightRounding::kAdaptive : WeightRounding::kNearest;
    if (c.adaptive_rounding) d.operand_second_moment = sets[set].moment;
    d.mean_x = sets[set].mean_x;
    d.mean_h = sets[set].mean_h;
    d.bias_correction = c.bias_correction;
    for (int32_t b = 0; b < kWeightBlocks; ++b) {
      if (c.clip[static_cast<size_t>(b)] > 0) d.weight_clip_ratio[static_cast<size_t>(b)] = c.clip[static_cast<size_t>(b)];
    }
    const Range& ir = in_ranges[set][c.input_range];
    const Range& orr = out_ranges[set][c.output_range];
    const AffineQuant in = fixed.input ? fixed.input->quant : affine_from_range(ir.lo, ir.hi);
    const AffineQuant out = fixed.output ? fixed.output->quant : affine_from_range(orr.lo, orr.hi);
    if (gru) return QuantizedLstm(source, derive_gru_params(gru_of(source), in, out, d), stats);
    CellScaleRequest cell_request = options.cell_scale;
    if (cell_request.policy == CellScalePolicy::kCalibrated) cell_request.headroom = c.headroom;
    return QuantizedLstm(source, derive_params(source, in, out, choose_cell_scale(cell_request, sets[set].cell_max), d),
                         stats);
  };

  // The start: with a search asked for, upstream's choices (min/max boundaries, max|W| weights,
  // 2 bits of cell headroom) where the user left them open; what is kept when nothing can be
  // held out. Otherwise the options as given.
  Candidate best;
  best.headroom = tune_headroom ? kUpstreamCellHeadroom : options.cell_scale.headroom;
  best.bias_correction = options.derive.bias_correction;
  best.adaptive_rounding = options.derive.weight_rounding == WeightRounding::kAdaptive;
  best.input_range = std::min<size_t>(1, in_configs.size() - 1);
  best.output_range = std::min<size_t>(1, out_configs.size() - 1);
  if (searching) {
    // Each group's float reference: the op's output (the steps the head reads), or the model's.
    std::vector<std::vector<float>> reference(groups.size());
    for (size_t g = 0; g < groups.size(); ++g) {
      for (size_t k : groups[g].scored) {
        if (fixed.head) {
          const std::vector<float>& r = fixed.head_reference.at(k);
          reference[g].insert(reference[g].end(), r.begin(), r.end());
        } else {
          append_scored(reference[g], observed.outputs[k], sequences[k].time_steps, H, fixed.scored_step);
        }
        stats.scored_sequences.push_back(static_cast<int64_t>(k));
        stats.scored_steps += sequences[k].time_steps;
      }
    }
    const double clip_ratios[] = {1.0, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6};
    const double headrooms[] = {1.0, 1.25, 1.5, 2.0, 3.0, 4.0};
    constexpr int kPasses = 2;
    const int64_t expected_evaluations =
        1 + kPasses * static_cast<int64_t>(in_configs.size() + out_configs.size() +
                                           (search_headroom ? std::size(headrooms) : 0) + (search_bias ? 1 : 0) +
                                           (search_clips ? weight_blocks * std::size(clip_ratios) : 0)) +
        (search_rounding ? (search_bias ? 2 : 1) : 0);
    // A candidate's score: per group and pooled over the groups (one SQNR of all held-out outputs).
    struct Score {
      bool ok = false;
      std::vector<double> group;
      double pooled = -std::numeric_limits<double>::infinity();
    };
    auto score = [&](const Candidate& c) -> Score {
      Score result;
      try {
        std::vector<std::optional<QuantizedLstm>> built(sets.size());
        double signal = 0, noise = 0;
        for (size_t g = 0; g < groups.size(); ++g) {
          if (!built[groups[g].set]) built[groups[g].set] = build(c, groups[g].set);
          const QuantizedLstm& q = *built[groups[g].set];
          std::vector<float> y;
          std::vector<int8_t> rows;  // what the head reads, when the score is the model's output
          for (size_t k : groups[g].scored) {
            const CalibrationSequence& s = sequences[k];
            State state = q.quantize_state(s.h0, s.c0, 1);
            const std::vector<int8_t> ys8 = q.run_s8(q.quantize_input(s.values), {1, s.time_steps, Layout::kBatchMajor}, &state);
            if (fixed.head) {
              append_scored(rows, ys8, s.time_steps, H, fixed.scored_step);
            } else {
              append_scored(y, q.dequantize_output(ys8), s.time_steps, H, fixed.scored_step);
            }
          }
          if (fixed.head) y = fixed.head(q.output_quant(), rows, static_cast<int32_t>(rows.size() / static_cast<size_t>(H)));
          const NoiseSums n = noise_sums(reference[g], y);
          signal += n.signal;
          noise += n.noise;
          result.group.push_back(n.sqnr_db());
        }
        result.pooled = NoiseSums{signal, noise}.sqnr_db();
        result.ok = true;
      } catch (const CompileError&) {
        // e.g. an accumulator that could wrap: not a candidate
      }
      ++stats.evaluations;
      if (options.progress) options.progress("searching", stats.evaluations, expected_evaluations);
      return result;
    };
    Score best_score = score(best);
    stats.start_sqnr_db = best_score.pooled;
    // A change is taken when its gain, held out, averages more than both a hundredth of a dB and
    // the spread of that gain between the groups (with 4 folds, twice its standard error).
    constexpr double kMinGainDb = 0.01;
    auto try_candidate = [&](const Candidate& c) {
      const Score s = score(c);
      if (!s.ok) return;
      if (!best_score.ok) {
        best_score = s;
        best = c;
        return;
      }
      const GainSpread gain = gain_spread(best_score.group, s.group);
      if (gain.mean > kMinGainDb && gain.mean > gain.spread) {
        best_score = s;
        best = c;
      }
    };
    for (int pass = 0; pass < kPasses; ++pass) {
      for (size_t k = 0; k < in_configs.size(); ++k) {
        Candidate c = best;
        c.input_range = k;
        try_candidate(c);
      }
      for (size_t k = 0; k < out_configs.size(); ++k) {
        Candidate c = best;
        c.output_range = k;
        try_candidate(c);
      }
      if (search_headroom) {
        for (double h : headrooms) {
          Candidate c = best;
          c.headroom = h;
          try_candidate(c);
        }
      }
      if (search_bias) {
        Candidate c = best;
        c.bias_correction = !c.bias_correction;
        try_candidate(c);
      }
      for (int32_t b = 0; b < weight_blocks && search_clips; ++b) {
        for (double r : clip_ratios) {
          Candidate c = best;
          c.clip[static_cast<size_t>(b)] = r;
          try_candidate(c);
        }
      }
    }
    // Adaptive rounding last (each of its derivations costs up to tens of ms on the largest
    // models): on the searched result, and with bias correction toggled, which it interacts with.
    if (search_rounding) {
      Candidate c = best;
      c.adaptive_rounding = !c.adaptive_rounding;
      try_candidate(c);
      if (search_bias) {
        c.bias_correction = !c.bias_correction;
        try_candidate(c);
      }
    }
    stats.final_sqnr_db = best_score.pooled;
    stats.fold_sqnr_db = best_score.group;
    stats.folds = static_cast<int32_t>(groups.size());
  }
  stats.input_range = in_ranges[0][best.input_range];
  stats.output_range = out_ranges[0][best.output_range];
  stats.input_observer = fixed.input ? fixed.input->source : label(in_configs[best.input_range]);
  stats.output_observer = fixed.output ? fixed.output->source : label(out_configs[best.output_range]);
  stats.chosen.input_observer = in_configs[best.input_range];
  stats.chosen.output_observer = out_configs[best.output_range];
  stats.chosen.cell_headroom = best.headroom;
  stats.chosen.bias_correction = best.bias_correction;
  stats.chosen.weight_rounding = best.adaptive_rounding ? WeightRounding::kAdaptive : WeightRounding::kNearest;
  for (int32_t b = 0; b < kWeightBlocks; ++b) {
    const size_t i = static_cast<size_t>(b);
    stats.chosen.weight_clip[i] = best.clip[i] > 0 ? best.clip[i] : options.derive.weight_clip_ratio[i];
  }
  QuantizedLstm result = build(best, 0);
  result.stats_ = stats;
  return result;
}

QuantizedLstm::QuantizedLstm(FloatLstm source, DerivedLstm derived, CalibrationStats stats)
    : source_(std::move(source)), derived_(std::move(derived)), stats_(stats) {
  if (is_gru()) throw CompileError("a GRU layer given LSTM parameters");
}

QuantizedLstm::QuantizedLstm(FloatLstm source, DerivedGru derived, CalibrationStats stats)
    : source_(std::move(source)), gru_(std::move(derived)), stats_(stats) {
  if (!is_gru()) throw CompileError("an LSTM layer given GRU parameters");
}

const DerivedLstm& QuantizedLstm::derived() const {
  if (is_gru()) throw CompileError("a GRU layer has no LSTM parameters");
  return derived_;
}

const DerivedGru& QuantizedLstm::derived_gru() const {
  if (!is_gru()) throw CompileError("an LSTM layer has no GRU parameters");
  return gru_;
}

ProgramOp QuantizedLstm::program_op() const {
  ProgramOp op;
  if (is_gru()) {
    op.kind = QLSTM_OP_GRU_S8;
    op.gru = gru_;
  } else {
    op.lstm = derived_;
  }
  return op;
}

QuantizedLstm::State QuantizedLstm::initial_state(int32_t batch) const {
  const size_t n = static_cast<size_t>(batch) * static_cast<size_t>(source_.hidden_size);
  return {std::vector<int8_t>(n, static_cast<int8_t>(output_quant().zero_point)), std::vector<int16_t>(n, 0)};
}

QuantizedLstm::State QuantizedLstm::quantize_state(const std::vector<float>& h, const std::vector<float>& c,
                                                  int32_t batch) const {
  State s = initial_state(batch);
  if (is_gru()) {  // its Q0.15 hidden in the int16 row, as the program keeps it
    for (size_t k = 0; k < h.size() && k < s.cell.size(); ++k) s.cell[k] = quantize_cell(h[k], kGruHiddenPower);
    return s;
  }
  for (size_t k = 0; k < h.size() && k < s.hidden.size(); ++k) s.hidden[k] = derived_.output.quantize(h[k]);
  for (size_t k = 0; k < c.size() && k < s.cell.size(); ++k) s.cell[k] = quantize_cell(c[k], derived_.cell.power);
  return s;
}

namespace {

// A one-op program: the one path every model takes to the runtime.
std::vector<int8_t> run_single_op(const CompiledModel& m, const std::vector<int8_t>& x, const SequenceShape& shape,
                                  QuantizedLstm::State* state) {
  check_shape(shape, x.size(), m.input_size(), "input");
  if (state == nullptr) return run_program_s8(m, x, shape);
  ProgramState s{std::move(state->hidden), std::move(state->cell)};
  struct PutBack {  // the state goes back to the caller whatever happens
    ProgramState& from;
    QuantizedLstm::State& to;
    ~PutBack() {
      to.hidden = std::move(from.hidden);
      to.cell = std::move(from.cell);
    }
  } put_back{s, *state};
  return run_program_s8(m, x, shape, &s);
}

}  // namespace

std::vector<int8_t> run_kernel_s8(const DerivedLstm& d, const std::vector<int8_t>& x,
                                  const SequenceShape& shape, QuantizedLstm::State* state) {
  return run_single_op(single_op_model(d), x, shape, state);
}

std::vector<int8_t> run_kernel_s8(const DerivedGru& d, const std::vector<int8_t>& x,
                                  const SequenceShape& shape, QuantizedLstm::State* state) {
  return run_single_op(single_op_model(d), x, shape, state);
}

std::vector<int8_t> run_kernel_s8_streamed(const DerivedLstm& d, const std::vector<int8_t>& x,
                                           const SequenceShape& shape, int32_t chunk) {
  return run_program_s8_streamed(single_op_model(d), x, shape, chunk);
}

std::vector<int8_t> QuantizedLstm::run_s8(const std::vector<int8_t>& x, const SequenceShape& shape,
                                          State* state) const {
  return is_gru() ? run_kernel_s8(gru_, x, shape, state) : run_kernel_s8(derived_, x, shape, state);
}

std::vector<int8_t> QuantizedLstm::quantize_input(const std::vector<float>& x) const {
  std::vector<int8_t> q(x.size());
  for (size_t k = 0; k < x.size(); ++k) {
    if (!std::isfinite(x[k])) {
      throw CompileError("input: non-finite value at index " + std::to_string(k));
    }
    q[k] = input_quant().quantize(x[k]);
  }
  return q;
}

std::vector<float> QuantizedLstm::dequantize_output(const std::vector<int8_t>& y) const {
  std::vector<float> f(y.size());
  for (size_t k = 0; k < y.size(); ++k) f[k] = static_cast<float>(output_quant().dequantize(y[k]));
  return f;
}

std::vector<float> QuantizedLstm::run_float(const std::vector<float>& x,
                                            const SequenceShape& shape) const {
  return dequantize_output(run_s8(quantize_input(x), shape));
}

namespace {

// One op of the front or the head: a layer, and the Relu/Clip folded into it (a Linear's).
struct LayerOp {
  const FloatLayer* layer = nullptr;
  const FloatLayer* clamp = nullptr;
};

std::vector<LayerOp> layer_ops(const std::vector<FloatLayer>& layers) {
  std::vector<LayerOp> out;
  for (size_t k = 0; k < layers.size(); ++k) {
    LayerOp op{&layers[k], nullptr};
    if (layers[k].kind == FloatLayerKind::kLinear && k + 1 < layers.size() && folds_into_clamp(layers[k + 1])) {
      op.clamp = &layers[++k];
    }
    out.push_back(op);
  }
  return out;
}

std::string node_label(const FloatLayer& l) { return "node '" + l.node + "'"; }

// Each entry's float values through one op (positions x width in, out), and the quantization the
// output observer picks from those of the first `observed` entries (the others are validation's).
AffineQuant run_layer_op(const LayerOp& op, std::vector<std::vector<double>>& values,
                         const std::vector<int32_t>& positions, const ObserverConfig& observer, size_t observed) {
  std::vector<float> all;
  for (size_t e = 0; e < values.size(); ++e) {
    const size_t n = static_cast<size_t>(positions[e]);
    values[e] = run_float_layer(*op.layer, values[e], n);
    if (op.clamp) values[e] = run_float_layer(*op.clamp, values[e], n);
    for (double v : values[e]) {
      if (!std::isfinite(v)) throw CompileError("calibration: " + node_label(*op.layer) + " produced a non-finite value");
      if (e < observed) all.push_back(static_cast<float>(v));
    }
  }
  if (op.layer->kind == FloatLayerKind::kSoftmax) return softmax_output_quant();
  if (all.empty()) throw CompileError("calibration: every sequence has zero time steps");
  const Range r = choose_range(all, observer);
  return affine_from_range(r.lo, r.hi);
}

// The int8 op of a per-position layer between two quantizations.
ProgramOp derive_layer_op(const LayerOp& lop, const AffineQuant& input, const AffineQuant& output,
                          const CompileOptions& options) {
  ProgramOp op;
  const FloatLayer& l = *lop.layer;
  switch (l.kind) {
    case FloatLayerKind::kLinear:
      op.kind = QLSTM_OP_FULLY_CONNECTED_S8;
      op.fc = derive_fc(l, lop.clamp, input, output, options.fc_per_channel);
      break;
    case FloatLayerKind::kActivation:
      op.kind = QLSTM_OP_TABLE_S8;
      op.table = derive_table(l, l.input_size, input, output);
      break;
    case FloatLayerKind::kSoftmax:
      op.kind = QLSTM_OP_SOFTMAX_S8;
      try {
        op.softmax = derive_softmax(l.input_size, input, l.softmax_beta);
      } catch (const CompileError& e) {
        throw CompileError(node_label(l) + ": " + e.what());
      }
      break;
    case FloatLayerKind::kSelectStep:
      throw CompileError(node_label(l) + ": a step selection must come first in the head, right after the LSTM");
  }
  return op;
}

std::vector<double> to_double(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

// One per-position op in int8 through the runtime kernel, on n rows.
std::vector<int8_t> run_op_s8(const ProgramOp& op, const std::vector<int8_t>& x, int32_t n) {
  const OpKind* kind = find_op_kind(op.kind);
  if (kind == nullptr || kind->run_rows == nullptr) {
    throw CompileError(std::string("search: cannot run a ") + op_kind_name(op.kind) + " op alone");
  }
  std::vector<int8_t> y;
  const qlstm_status st = kind->run_rows(op, x.data(), n, &y);
  if (st != QLSTM_OK) throw CompileError(std::string("search: the runtime refused a head op: ") + qlstm_status_string(st));
  return y;
}

// The options op k compiles with: the choices given for it, if any, exactly.
CompileOptions with_choice(const CompileOptions& options, size_t k) {
  if (k >= options.op_choices.size()) return options;
  const OpChoice& c = options.op_choices[k];
  CompileOptions o = options;
  o.tuning = Tuning::kNone;
  o.input_observer = c.input_observer;
  o.output_observer = c.output_observer;
  o.cell_scale.headroom = c.cell_headroom;
  o.derive.bias_correction = c.bias_correction;
  o.derive.weight_clip_ratio = c.weight_clip;
  o.derive.weight_rounding = c.weight_rounding;
  return o;
}

// Row (sequence % rows) of a constant state of one row [H] or of rows [rows][H].
std::vector<float> state_row(const std::vector<float>& state, int32_t H, size_t sequence) {
  const size_t rows = state.size() / static_cast<size_t>(H), r = rows > 1 ? sequence % rows : 0;
  return std::vector<float>(state.begin() + static_cast<ptrdiff_t>(r * H), state.begin() + static_cast<ptrdiff_t>((r + 1) * H));
}

}  // namespace

std::vector<FloatLayer> compiled_head_layers(const FloatProgram& program) {
  // h_n[-1] of a bidirectional stack is the last layer's reverse state alone: both ops of the
  // layer write their final states into one [B][2H] buffer and the Linear that reads h_n[-1]
  // gets zero weights for the forward half (exact: those products are 0).
  std::vector<FloatLayer> head_layers = program.head;
  if (program.lstm_output == LstmOutput::kFinalState && program.directions == 2) {
    if (head_layers.empty() || head_layers.front().kind != FloatLayerKind::kLinear) {
      throw CompileError("program: h_n[-1] of a bidirectional LSTM is the reverse direction's state alone; qlstm "
                         "compiles it when a Linear reads it first, here " +
                         (head_layers.empty() ? std::string("it is the model's output") : node_label(head_layers.front())) +
                         " does; read y[:, -1] or put the Linear first");
    }
    FloatLayer& first = head_layers.front();
    const int32_t H = program.ops.back().hidden_size, O = first.output_size;
    std::vector<float> padded(static_cast<size_t>(O) * 2 * H, 0.0f);
    for (int32_t o = 0; o < O; ++o) {
      std::copy_n(first.weight.begin() + static_cast<ptrdiff_t>(o) * H, H,
                  padded.begin() + static_cast<ptrdiff_t>(o) * 2 * H + H);
    }
    first.weight = std::move(padded);
    first.input_size = 2 * H;
  }
  return head_layers;
}

bool writes_final_state_only(const FloatProgram& p) {
  const bool last_step = !p.head.empty() && p.head.front().kind == FloatLayerKind::kSelectStep && p.head.front().step == -1;
  return p.lstm_output == LstmOutput::kFinalState || (last_step && p.directions == 1 && !p.ops.back().reverse);
}

bool keeps_inner_sequence(const FloatProgram& p) {
  return p.layers() > 1 || !p.front.empty() || (!p.head.empty() && !writes_final_state_only(p));
}

QuantizedProgram compile_program(const FloatProgram& program, const CalibrationSet& calibration,
                                 const CompileOptions& options, const CalibrationSet* validation) {
  program.validate();
  for (const std::vector<FloatLayer>* part : {&program.front, &program.head}) {
    for (const FloatLayer& l : *part) l.validate();
  }
  if (calibration.sequences.empty()) throw CompileError("calibration: the calibration set is empty");
  const int32_t D = program.directions, I = program.input_size();
  const size_t ops_count = program.ops.size();
  const bool has_select = !program.head.empty() && program.head.front().kind == FloatLayerKind::kSelectStep;
  const FloatLstm& last_lstm = program.ops.back();
  const std::vector<FloatLayer> head_layers = compiled_head_layers(program);
  if (program.lstm_output == LstmOutput::kFinalState && has_select) {
    throw CompileError(node_label(program.head.front()) + ": selects a step of h_n, which has one");
  }
  // The head reads one step of the stack's output: the last op's final state alone (written
  // without the sequence), or step k of the sequence (a selection op).
  const bool final_state = writes_final_state_only(program);
  const bool select_op = has_select && !final_state;
  std::optional<int32_t> head_step;  // the step of the last layer's output the head reads
  if (program.lstm_output == LstmOutput::kFinalState) head_step = last_lstm.reverse ? 0 : -1;
  if (has_select) head_step = program.head.front().step;
  // The step whose output is op k's final hidden state.
  auto final_step = [&](size_t k) { return program.ops[k].reverse ? 0 : -1; };
  for (const FloatLayer& l : program.front) {
    if (l.kind == FloatLayerKind::kSelectStep) throw CompileError(node_label(l) + ": a step selection before the LSTM");
  }
  // One calibration entry per sequence and per starting state, as every layer sees it.
  struct Entry {
    int32_t time_steps = 0;
    std::vector<float> x;  // this layer's input [T][F]
    bool chained = false;  // starts from the state the previous chained entry left
    bool validation = false;  // scored by the search, never observed
  };
  const bool fed = program.initial_hidden == StateSource::kInput || program.initial_cell == StateSource::kInput;
  std::vector<Entry> entries;
  for (int pass = 0; pass < (fed ? 2 : 1); ++pass) {
    for (size_t k = 0; k < calibration.sequences.size(); ++k) {
      const CalibrationSequence& s = calibration.sequences[k];
      if (pass == 0) check_sequence(s, k, I);
      entries.push_back({s.time_steps, s.values, pass == 1});
    }
  }
  // The entries the observers read: the validation sequences come after them.
  const size_t observed_entries = entries.size();
  for (size_t k = 0; validation && k < validation->sequences.size(); ++k) {
    const CalibrationSequence& s = validation->sequences[k];
    try {
      check_sequence(s, k, I);
    } catch (const CompileError& e) {
      throw CompileError(std::string("validation set: ") + e.what());
    }
    entries.push_back({s.time_steps, s.values, false, true});
  }
  QuantizedProgram result;
  result.source = program;
  CompiledModel& m = result.model;
  std::vector<int32_t> positions;
  for (const Entry& en : entries) positions.push_back(en.time_steps);

  // The front: per-step ops on the model input, each observed on the float pass.
  std::optional<BoundaryQuant> lstm_input;
  if (!program.front.empty()) {
    std::vector<float> inputs;
    for (const CalibrationSequence& s : calibration.sequences) inputs.insert(inputs.end(), s.values.begin(), s.values.end());
    if (inputs.empty()) throw CompileError("calibration: every sequence has zero time steps");
    const Range r = choose_range(inputs, options.input_observer);
    m.buffers.push_back({I, affine_from_range(r.lo, r.hi), QLSTM_BUFFER_EVERY_STEP});
    std::vector<std::vector<double>> values;
    for (Entry& en : entries) values.push_back(to_double(en.x));
    for (const LayerOp& lop : layer_ops(program.front)) {
      const AffineQuant out = run_layer_op(lop, values, positions, options.output_observer, observed_entries);
      ProgramOp op = derive_layer_op(lop, m.buffers.back().quant, out, options);
      op.input_buffer = static_cast<int32_t>(m.buffers.size()) - 1;
      op.output_buffer = op.input_buffer + 1;
      m.buffers.push_back({lop.layer->output_size, out, QLSTM_BUFFER_EVERY_STEP});
      m.ops.push_back(std::move(op));
    }
    for (size_t e = 0; e < entries.size(); ++e) entries[e].x.assign(values[e].begin(), values[e].end());
    lstm_input = BoundaryQuant{m.buffers.back().quant, "the output of the front end (" + program.front.back().node + ")"};
  }

  // The head, planned on the float pass of the last layer: what it reads (every step, one step or
  // h_n), its per-position ops (the selection is not one) and each one's output quantization, and
  // the float model's output per entry.
  std::vector<LayerOp> head_ops = layer_ops(head_layers);
  if (has_select) head_ops.erase(head_ops.begin());
  std::vector<AffineQuant> head_quants;
  std::vector<std::vector<double>> head_values;
  auto plan_head = [&](const std::vector<std::vector<float>>& stack_out) {
    const int32_t W = D * last_lstm.hidden_size;
    std::vector<int32_t> head_positions;
    for (size_t e = 0; e < entries.size(); ++e) {
      const int32_t T = entries[e].time_steps;
      if (!head_step) {
        head_values.push_back(to_double(stack_out[e]));
        head_positions.push_back(T);
        continue;
      }
      // Each direction's part of the row: its final state (h_n) or the selected step.
      const int32_t H = last_lstm.hidden_size;
      std::vector<double> row;
      for (int32_t d = 0; d < D; ++d) {
        const size_t k = program.ops.size() - static_cast<size_t>(D - d);
        const int32_t step = program.lstm_output == LstmOutput::kFinalState ? final_step(k) : *head_step;
        const int32_t t = step < 0 ? T + step : step;
        if (t < 0 || t >= T) {
          throw CompileError("calibration: sequence " + std::to_string(e % calibration.sequences.size()) + " has " +
                             std::to_string(T) + " steps; the head reads step " + std::to_string(step));
        }
        const auto at = stack_out[e].begin() + static_cast<ptrdiff_t>(t) * W + static_cast<ptrdiff_t>(d) * H;
        row.insert(row.end(), at, at + H);
      }
      head_values.push_back(std::move(row));
      head_positions.push_back(1);
    }
    for (const LayerOp& lop : head_ops) {
      head_quants.push_back(run_layer_op(lop, head_values, head_positions, options.output_observer, observed_entries));
    }
  };
  // The head in int8 on rows of the last op's output in `lstm_output` (the search's score).
  auto run_head = [&](const AffineQuant& lstm_output, const std::vector<int8_t>& rows, int32_t n) {
    std::vector<int8_t> x = rows;
    AffineQuant q = lstm_output;
    for (size_t j = 0; j < head_ops.size(); ++j) {
      x = run_op_s8(derive_layer_op(head_ops[j], q, head_quants[j], options), x, n);
      q = head_quants[j];
    }
    std::vector<float> y;
    for (int8_t v : x) y.push_back(static_cast<float>(q.dequantize(v)));
    return y;
  };

  // The LSTM stack, layer by layer.
  std::vector<ProgramOp> lstm_ops;
  for (int32_t l = 0; l < program.layers(); ++l) {
    const int32_t H = program.ops[static_cast<size_t>(l * D)].hidden_size, W = D * H;
    // The one float pass of this layer: each op's observation (what its observers and its search
    // read) and, together, the layer's output, the input of the layer above.
    std::vector<OpObservation> observed(static_cast<size_t>(D));
    std::vector<std::vector<float>> outs(entries.size());
    std::vector<std::vector<float>> carried_h(static_cast<size_t>(D)), carried_c(static_cast<size_t>(D));
    for (size_t e = 0; e < entries.size(); ++e) {
      Entry& en = entries[e];
      outs[e].assign(static_cast<size_t>(en.time_steps) * W, 0.0f);
      for (int32_t d = 0; d < D; ++d) {
        const size_t k = static_cast<size_t>(l * D + d);
        std::vector<float> h0, c0;
        // A per-row constant state: calibration sequence e is row e of its batch (in order).
        const size_t row = en.validation ? e - observed_entries : e % calibration.sequences.size();
        if (program.initial_hidden == StateSource::kConstant) h0 = state_row(program.h0[k], H, row);
        if (program.initial_cell == StateSource::kConstant) c0 = state_row(program.c0[k], H, row);
        if (en.chained && program.initial_hidden == StateSource::kInput) h0 = carried_h[static_cast<size_t>(d)];
        if (en.chained && program.initial_cell == StateSource::kInput) c0 = carried_c[static_cast<size_t>(d)];
        // The last op of the layer takes the input: the layer's output replaces it below.
        const FloatResult f = observed[static_cast<size_t>(d)].add(
            program.ops[k], {en.time_steps, d + 1 == D ? std::move(en.x) : en.x, std::move(h0), std::move(c0)},
            en.validation);
        for (int32_t t = 0; t < en.time_steps; ++t) {
          std::copy_n(f.output.begin() + static_cast<ptrdiff_t>(t) * H, H,
                      outs[e].begin() + static_cast<ptrdiff_t>(t) * W + static_cast<ptrdiff_t>(d) * H);
        }
        if (en.chained) {
          carried_h[static_cast<size_t>(d)] = f.h_n;
          carried_c[static_cast<size_t>(d)] = f.c_n;
        }
      }
      if (options.progress) options.progress("calibrating", static_cast<int64_t>(e + 1), static_cast<int64_t>(entries.size()));
    }
    OpBoundaries fixed;
    if (l > 0) {
      fixed.input = BoundaryQuant{lstm_ops.back().recurrent_output(), "the output of layer " + std::to_string(l - 1)};
    }
    if (l == 0 && lstm_input) fixed.input = lstm_input;
    if (l + 1 == program.layers()) {
      fixed.scored_step = head_step;
      plan_head(outs);
      // One op per layer: its candidates are scored by the model's output through the head.
      if (D == 1 && !head_ops.empty()) {
        fixed.head = run_head;
        for (const std::vector<double>& v : head_values) fixed.head_reference.emplace_back(v.begin(), v.end());
      }
    }
    if (D == 2) {
      std::vector<float> all;
      for (size_t e = 0; e < observed_entries; ++e) all.insert(all.end(), outs[e].begin(), outs[e].end());
      for (float v : all) {
        if (!std::isfinite(v)) throw CompileError("calibration: layer " + std::to_string(l) + " produced a non-finite output");
      }
      if (all.empty()) throw CompileError("calibration: every sequence has zero time steps");
      const Range r = choose_range(all, options.output_observer);
      fixed.output = BoundaryQuant{affine_from_range(r.lo, r.hi),
                                   std::string(observer_name(options.output_observer.kind)) + " over both directions"};
    }
    for (int32_t d = 0; d < D; ++d) {
      const size_t k = static_cast<size_t>(l * D + d);
      if (d == 1 && !fixed.input) {  // both directions read the same buffer
        fixed.input = BoundaryQuant{lstm_ops.back().recurrent_input(),
                                    "the forward direction's choice (" + result.stats.back().input_observer + ")"};
      } else if (d == 1) {
        fixed.input->quant = lstm_ops.back().recurrent_input();
      }
      if (l + 1 == program.layers() && program.lstm_output == LstmOutput::kFinalState) {
        fixed.scored_step = final_step(k);  // what the op writes
      }
      QuantizedLstm q = [&] {
        try {
          return QuantizedLstm::compile(program.ops[k], observed[static_cast<size_t>(d)], with_choice(options, k), fixed);
        } catch (const CompileError& e) {
          if (ops_count == 1) throw;
          throw CompileError("layer " + std::to_string(l) + (D == 2 ? (d ? " reverse" : " forward") : "") + ": " +
                             e.what());
        }
      }();
      ProgramOp op = q.program_op();
      if (program.initial_hidden == StateSource::kConstant && op.gru_op()) {
        // A GRU's h0 is its Q0.15 state row (ProgramOp::initial_cell).
        for (float v : program.h0[k]) op.initial_cell.push_back(quantize_cell(v, kGruHiddenPower));
      } else if (program.initial_hidden == StateSource::kConstant) {
        for (float v : program.h0[k]) op.initial_hidden.push_back(op.lstm.output.quantize(v));
      }
      if (program.initial_cell == StateSource::kConstant && !op.gru_op()) {
        for (float v : program.c0[k]) op.initial_cell.push_back(quantize_cell(v, op.lstm.cell.power));
      }
      lstm_ops.push_back(std::move(op));
      result.stats.push_back(q.calibration());
    }
    for (size_t e = 0; e < entries.size(); ++e) entries[e].x = std::move(outs[e]);
  }
  // The last layer's ops write their final states only (both directions: into one [B][2H] row).
  if (final_state) {
    for (size_t k = lstm_ops.size() - static_cast<size_t>(program.lstm_output == LstmOutput::kFinalState ? D : 1);
         k < lstm_ops.size(); ++k) {
      lstm_ops[k].lstm.output_steps = QLSTM_OUTPUT_FINAL;
      lstm_ops[k].gru.output_steps = QLSTM_OUTPUT_FINAL;
    }
  }
  {
    // The stack's ops after the front's, its buffers after the front's (buffer 0 is the first
    // LSTM's input when there is no front).
    const int32_t first = m.buffers.empty() ? 0 : static_cast<int32_t>(m.buffers.size()) - 1;
    CompiledModel stack = assemble_program(std::move(lstm_ops), D);
    if (m.buffers.empty()) m.buffers.push_back(stack.buffers.front());
    for (size_t b = 1; b < stack.buffers.size(); ++b) m.buffers.push_back(stack.buffers[b]);
    if (final_state) m.buffers.back().steps = QLSTM_BUFFER_ONE_STEP;
    for (ProgramOp& op : stack.ops) {
      op.input_buffer += first;
      op.output_buffer += first;
      m.ops.push_back(std::move(op));
    }
  }

  // The head's ops, each between the quantization before it and its own observed one.
  const int32_t W = D * last_lstm.hidden_size;
  if (has_select) {
    if (select_op) {
      ProgramOp op;
      op.kind = QLSTM_OP_SELECT_STEP;
      op.select = {W, program.head.front().step};
      op.input_buffer = static_cast<int32_t>(m.buffers.size()) - 1;
      op.output_buffer = op.input_buffer + 1;
      m.buffers.push_back({W, m.buffers.back().quant, QLSTM_BUFFER_ONE_STEP});
      m.ops.push_back(std::move(op));
    }
  }
  for (size_t j = 0; j < head_ops.size(); ++j) {
    const LayerOp& lop = head_ops[j];
    const AffineQuant& out = head_quants[j];
    ProgramOp op = derive_layer_op(lop, m.buffers.back().quant, out, options);
    op.input_buffer = static_cast<int32_t>(m.buffers.size()) - 1;
    op.output_buffer = op.input_buffer + 1;
    m.buffers.push_back({lop.layer->output_size, out, m.buffers.back().steps});
    m.ops.push_back(std::move(op));
  }
  // The first pass's entries start from the program's own state, one per calibration sequence.
  for (size_t e = 0; e < calibration.sequences.size(); ++e) {
    result.float_outputs.emplace_back(head_values[e].begin(), head_values[e].end());
  }
  m.directions = D;
  m.initial_hidden = program.initial_hidden;
  m.initial_cell = program.initial_cell;
  m.hidden_output = program.hidden_output;
  m.cell_output = program.cell_output;
  if (std::find(options.s16_layers.begin(), options.s16_layers.end(), true) != options.s16_layers.end()) {
    m = s16_program(program, calibration, result, options);
  }
  return result;
}

double sqnr_db(const std::vector<float>& reference, const std::vector<float>& test) {
  double signal = 0, noise = 0;
  for (size_t k = 0; k < reference.size(); ++k) {
    signal += static_cast<double>(reference[k]) * reference[k];
    const double d = static_cast<double>(reference[k]) - test[k];
    noise += d * d;
  }
  if (noise == 0) return std::numeric_limits<double>::infinity();
  return 10.0 * std::log10(signal / noise);
}

double max_abs_error(const std::vector<float>& reference, const std::vector<float>& test) {
  double m = 0;
  for (size_t k = 0; k < reference.size(); ++k) {
    m = std::max(m, std::fabs(static_cast<double>(reference[k]) - test[k]));
  }
  return m;
}

}  // namespace compiler
}  // namespace qlstm
