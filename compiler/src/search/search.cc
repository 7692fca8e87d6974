#include "qlstm/compiler/search/quantized_layer.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>
#include <sstream>
#include <tuple>

#include "qlstm/compiler/lower/weight_rounding.h"
#include "qlstm/kernels.h"

namespace qlstm {
namespace compiler {

const char* tuning_name(Tuning t) { return t == Tuning::kSearch ? "search" : "none"; }

namespace {

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

QuantizedLayer QuantizedLayer::compile(const FloatLstm& source, const CalibrationSet& calibration,
                                     const CompileOptions& options) {
  source.validate();
  if (calibration.sequences.empty()) {
    throw CompileError("calibration: the calibration set is empty");
  }
  return compile(source, observe_op(source, calibration, options.progress), options);
}

QuantizedLayer QuantizedLayer::compile(const FloatLstm& source, const OpObservation& observed,
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
  for (size_t k = 0; k < sequences.size(); ++k) check_float_output(observed.outputs[k], k);
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
    if (gru) return QuantizedLayer(source, derive_gru_params(gru_of(source), in, out, d), stats);
    CellScaleRequest cell_request = options.cell_scale;
    if (cell_request.policy == CellScalePolicy::kCalibrated) cell_request.headroom = c.headroom;
    return QuantizedLayer(source, derive_params(source, in, out, choose_cell_scale(cell_request, sets[set].cell_max), d),
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
        std::vector<std::optional<QuantizedLayer>> built(sets.size());
        double signal = 0, noise = 0;
        for (size_t g = 0; g < groups.size(); ++g) {
          if (!built[groups[g].set]) built[groups[g].set] = build(c, groups[g].set);
          const QuantizedLayer& q = *built[groups[g].set];
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
  QuantizedLayer result = build(best, 0);
  result.stats_ = stats;
  return result;
}

}  // namespace compiler
}  // namespace qlstm
