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
  validate_options(options, 1, 1, source.cell);
  if (calibration.sequences.empty()) {
    throw CompileError("calibration: the calibration set is empty");
  }
  return compile(source, observe_op(source, calibration, options.progress), starting_decision(options),
                 search_plan(options));
}

namespace {

// A candidate's score: per group and pooled over the groups (one SQNR of all held-out outputs).
struct Score {
  bool ok = false;
  std::vector<double> group;
  double pooled = -std::numeric_limits<double>::infinity();
};

// The score groups: each scores its sequences with the op derived from sets[set]. K-fold:
// contiguous blocks of the calibration sequences (a time-ordered file's folds are periods, so a
// fold's score includes the drift between periods); with a validation set: groups of it.
struct Group {
  size_t set = 0;
  std::vector<size_t> scored;
};

// One op's search, step by step (QuantizedLayer::compile runs them in order): what calibration
// observed, the groups it scores on, which choices it tunes, the candidates' ranges, then the
// coordinate descent over the candidates, and the record of what it chose.
class LayerSearch {
 public:
  LayerSearch(const FloatLstm& source, const OpObservation& observed, const OpDecision& start, const SearchPlan& plan,
              const OpBoundaries& fixed)
      : source_(source), observed_(observed), sequences_(observed.inputs.sequences), start_(start), plan_(plan),
        fixed_(fixed), H_(source.hidden_size), gru_(source.cell != CellKind::kLstm) {}

  void check_observation();
  void observe();
  void make_groups();
  void decide_tuning();
  void candidate_ranges();
  void second_moments();
  void start();
  void search();
  // The result: the best candidate derived from every calibration sequence, and what was chosen.
  QuantizedLayer result(CalibrationStats* stats);

 private:
  void k_fold_groups(size_t folds, int64_t macs_per_step);
  void validation_groups(size_t folds, int64_t macs_per_step);
  OpDecision decision_of(const Candidate& c) const;
  QuantizedLayer build(const Candidate& c, size_t set) const;
  std::vector<std::vector<float>> references();
  Score score(const Candidate& c, const std::vector<std::vector<float>>& reference, int64_t expected);
  void descend(const std::vector<std::vector<float>>& reference);

  const FloatLstm& source_;
  const OpObservation& observed_;
  const std::vector<CalibrationSequence>& sequences_;
  const OpDecision& start_;  // the decision the search starts from (what it leaves open, it keeps)
  const SearchPlan& plan_;
  const OpBoundaries& fixed_;
  const int32_t H_;
  const bool gru_;  // a GRU or an RNN: no cell to scale, no adaptive rounding (derive_gru.h, derive_rnn.h)
  size_t calibration_count_ = 0;
  std::vector<size_t> calibration_;
  CalibrationStats stats_;
  // The derivation sets: [0] every calibration sequence (the result's), then each fold's complement.
  std::vector<DerivationData> sets_;
  std::vector<Group> groups_;
  bool searching_ = false;
  bool tune_input_ = false, tune_output_ = false, tune_headroom_ = false;
  bool search_input_ = false, search_output_ = false, search_headroom_ = false;
  bool search_bias_ = false, search_clips_ = false, search_rounding_ = false;
  std::vector<ObserverConfig> in_configs_, out_configs_;
  std::vector<std::vector<Range>> in_ranges_, out_ranges_;
  Candidate best_;
};

void LayerSearch::check_observation() {
  source_.validate();
  calibration_count_ = observed_.validation_begin.value_or(sequences_.size());
  if (calibration_count_ == 0) throw CompileError("calibration: the calibration set is empty");
  if (observed_.outputs.size() != sequences_.size() || observed_.sequence_sum_h.size() != sequences_.size() ||
      observed_.sequence_cell_max_abs.size() != sequences_.size()) {
    throw CompileError("calibration: the observation has " + std::to_string(observed_.outputs.size()) +
                       " float outputs for " + std::to_string(sequences_.size()) + " sequences");
  }
  for (size_t k = 0; k < sequences_.size(); ++k) check_float_output(observed_.outputs[k], k);
  calibration_.resize(calibration_count_);
  std::iota(calibration_.begin(), calibration_.end(), size_t{0});
}

void LayerSearch::observe() {
  stats_.tuning = plan_.tuning;
  stats_.sequences = static_cast<int64_t>(calibration_count_);
  sets_.reserve(1 + static_cast<size_t>(plan_.folds));
  sets_.push_back(derivation_data(source_, observed_, calibration_));
  const DerivationData& all = sets_.front();
  stats_.steps = all.steps;
  const auto [in_lo, in_hi] = std::minmax_element(all.inputs.begin(), all.inputs.end());
  const auto [out_lo, out_hi] = std::minmax_element(all.outputs.begin(), all.outputs.end());
  stats_.input_observed = {*in_lo, *in_hi};
  stats_.output_observed = {*out_lo, *out_hi};
  stats_.cell_max_abs = all.cell_max;
}

void LayerSearch::validation_groups(size_t folds, int64_t macs_per_step) {
  std::vector<size_t> validation(sequences_.size() - calibration_count_);
  std::iota(validation.begin(), validation.end(), calibration_count_);
  const std::vector<size_t> scored = scored_indices(sequences_, validation, macs_per_step, plan_.max_macs, folds);
  const size_t G = std::min(folds, scored.size());
  for (size_t g = 0; g < G; ++g) {
    groups_.push_back({0, std::vector<size_t>(scored.begin() + static_cast<ptrdiff_t>(g * scored.size() / G),
                                              scored.begin() + static_cast<ptrdiff_t>((g + 1) * scored.size() / G))});
  }
  stats_.score_method = "validation";
}

void LayerSearch::k_fold_groups(size_t folds, int64_t macs_per_step) {
  const size_t K = std::min(folds, calibration_count_);
  const std::vector<size_t> scored = scored_indices(sequences_, calibration_, macs_per_step, plan_.max_macs, K);
  for (size_t f = 0; f < K; ++f) {
    const size_t begin = f * calibration_count_ / K, end = (f + 1) * calibration_count_ / K;
    std::vector<size_t> complement;
    for (size_t k = 0; k < calibration_count_; ++k) {
      if (k < begin || k >= end) complement.push_back(k);
    }
    Group g;
    for (size_t k : scored) {
      if (k >= begin && k < end) g.scored.push_back(k);
    }
    if (g.scored.empty()) continue;
    try {
      sets_.push_back(derivation_data(source_, observed_, complement));
    } catch (const CompileError&) {
      continue;  // the other folds have no steps: nothing to derive this fold's op from
    }
    sets_.back().excluded_begin = begin;
    sets_.back().excluded_end = end;
    g.set = sets_.size() - 1;
    groups_.push_back(std::move(g));
  }
  stats_.score_method = "k-fold";
}

void LayerSearch::make_groups() {
  searching_ = plan_.tuning == Tuning::kSearch;
  if (!searching_) return;
  const int64_t macs_per_step = int64_t{source_.gate_count()} * H_ * (source_.input_size + H_);
  const size_t folds = static_cast<size_t>(plan_.folds);
  if (observed_.validation_begin) {
    validation_groups(folds, macs_per_step);
  } else if (calibration_count_ >= 2) {
    k_fold_groups(folds, macs_per_step);
  }
  if (groups_.size() < 2) {
    stats_.score_note = observed_.validation_begin ? "fewer than 2 validation sequences with steps: nothing to score on"
                                                   : "fewer than 2 calibration sequences with steps: nothing to hold out";
    stats_.score_method = "none";
    groups_.clear();
    searching_ = false;
  }
}

// What the search tunes: each choice neither fixed by the program (a boundary decided outside the
// op) nor by the user (UserFixedChoices), who gets exactly what was asked for. Upstream's observers
// are candidates whenever a search was asked for (its start), even if the data leaves nothing to
// search with.
void LayerSearch::decide_tuning() {
  const UserFixedChoices& user = plan_.user_fixed;
  const bool tuned = plan_.tuning == Tuning::kSearch;
  tune_input_ = tuned && !fixed_.input && !user.input_observer;
  tune_output_ = tuned && !fixed_.output && !user.output_observer;
  tune_headroom_ = tuned && !gru_ && start_.cell_scale.policy == CellScalePolicy::kCalibrated && !user.cell_headroom;
  search_input_ = searching_ && tune_input_;
  search_output_ = searching_ && tune_output_;
  search_headroom_ = searching_ && tune_headroom_;
  search_bias_ = searching_ && !user.bias_correction;
  search_clips_ = searching_ && !user.weights;
  search_rounding_ = searching_ && !gru_ && !user.weight_rounding;
  for (const auto& [name, user_set, searched] :
       {std::tuple<const char*, bool, bool>{"input_observer", user.input_observer, search_input_},
        {"output_observer", user.output_observer, search_output_},
        {"cell_headroom", user.cell_headroom, search_headroom_},
        {"bias_correction", user.bias_correction, search_bias_},
        {"weight_clips", user.weights, search_clips_},
        {"weight_rounding", user.weight_rounding, search_rounding_}}) {
    if (user_set) stats_.fixed_by_user.push_back(name);
    if (searched) stats_.searched.push_back(name);
  }
}

// Candidate observers, the requested one first; each set's ranges by each.
void LayerSearch::candidate_ranges() {
  in_configs_ = {start_.input_observer};
  out_configs_ = {start_.output_observer};
  for (const char* name : {"minmax", "percentile:99.99", "percentile:99.9", "mse", "kl"}) {
    if (tune_input_ && (search_input_ || in_configs_.size() < 2)) in_configs_.push_back(parse_observer(name));
    if (tune_output_ && (search_output_ || out_configs_.size() < 2)) out_configs_.push_back(parse_observer(name));
  }
  in_ranges_.assign(sets_.size(), {});
  out_ranges_.assign(sets_.size(), {});
  for (size_t s = 0; s < sets_.size(); ++s) {
    for (const ObserverConfig& c : in_configs_) {
      in_ranges_[s].push_back(fixed_.input ? range_of(fixed_.input->quant) : choose_range(sets_[s].inputs, c));
    }
    for (const ObserverConfig& c : out_configs_) {
      out_ranges_[s].push_back(fixed_.output ? range_of(fixed_.output->quant) : choose_range(sets_[s].outputs, c));
    }
  }
}

// Adaptive rounding's second moment per set: each calibration sequence's sum computed once and
// added, in order, to every set that holds it.
void LayerSearch::second_moments() {
  if (!search_rounding_ && start_.weights.weight_rounding != WeightRounding::kAdaptive) return;
  std::vector<std::vector<double>> sums(sets_.size());
  std::vector<int64_t> sum_steps(sets_.size(), 0);
  for (size_t k : calibration_) {
    const CalibrationSequence& seq = sequences_[k];
    std::vector<double> one;
    int64_t steps = 0;
    accumulate_operand_moment(one, steps, seq.values.data(), observed_.outputs[k].data(),
                              seq.h0.empty() ? nullptr : seq.h0.data(), seq.time_steps, source_.input_size, H_,
                              source_.reverse);
    if (steps == 0) continue;
    for (size_t set = 0; set < sets_.size(); ++set) {
      if (k >= sets_[set].excluded_begin && k < sets_[set].excluded_end) continue;
      if (sums[set].empty()) sums[set].assign(one.size(), 0.0);
      for (size_t v = 0; v < one.size(); ++v) sums[set][v] += one[v];
      sum_steps[set] += steps;
    }
  }
  for (size_t set = 0; set < sets_.size(); ++set) {
    if (sum_steps[set] == 0) continue;
    sets_[set].moment = std::move(sums[set]);
    for (double& v : sets_[set].moment) v /= static_cast<double>(sum_steps[set]);
  }
}

// A candidate as a decision record: the start's, with what the candidate tunes.
OpDecision LayerSearch::decision_of(const Candidate& c) const {
  OpDecision d = start_;
  d.input_observer = in_configs_[c.input_range];
  d.output_observer = out_configs_[c.output_range];
  if (d.cell_scale.policy == CellScalePolicy::kCalibrated) d.cell_scale.headroom = c.headroom;
  d.weights.bias_correction = c.bias_correction;
  d.weights.weight_rounding = c.adaptive_rounding ? WeightRounding::kAdaptive : WeightRounding::kNearest;
  for (size_t b = 0; b < d.weights.weight_clip_ratio.size(); ++b) {
    if (c.clip[b] > 0) d.weights.weight_clip_ratio[b] = c.clip[b];
  }
  return d;
}

// The candidate derived from set `set`: its decision and that set's data (the observers' ranges,
// the means, the second moment, max |c|).
QuantizedLayer LayerSearch::build(const Candidate& c, size_t set) const {
  const OpDecision d = decision_of(c);
  const DerivationData& data = sets_[set];
  OperandStats observed{data.mean_x, data.mean_h, {}};
  if (c.adaptive_rounding) observed.operand_second_moment = data.moment;
  const Range& ir = in_ranges_[set][c.input_range];
  const Range& orr = out_ranges_[set][c.output_range];
  const AffineQuant in = fixed_.input ? fixed_.input->quant : affine_from_range(ir.lo, ir.hi);
  const AffineQuant out = fixed_.output ? fixed_.output->quant : affine_from_range(orr.lo, orr.hi);
  if (source_.cell == CellKind::kGru) {
    return QuantizedLayer(source_, derive_gru_params(gru_of(source_), in, out, d.weights, observed), stats_);
  }
  if (source_.cell == CellKind::kRnn) return QuantizedLayer(source_, derive_rnn_params(source_, in, out, d.weights, observed), stats_);
  return QuantizedLayer(source_, derive_params(source_, in, out, choose_cell_scale(d.cell_scale, data.cell_max), d.weights,
                                               observed),
                        stats_);
}

// The start: with a search asked for, upstream's choices (min/max boundaries, max|W| weights, 2
// bits of cell headroom) where the user left them open; what is kept when nothing can be held
// out. Otherwise the start decision as given.
void LayerSearch::start() {
  best_.headroom = tune_headroom_ ? kUpstreamCellHeadroom : start_.cell_scale.headroom;
  best_.bias_correction = start_.weights.bias_correction;
  best_.adaptive_rounding = start_.weights.weight_rounding == WeightRounding::kAdaptive;
  best_.input_range = std::min<size_t>(1, in_configs_.size() - 1);
  best_.output_range = std::min<size_t>(1, out_configs_.size() - 1);
}

// Each group's float reference: the op's output (the steps the head reads), or the model's.
std::vector<std::vector<float>> LayerSearch::references() {
  std::vector<std::vector<float>> reference(groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) {
    for (size_t k : groups_[g].scored) {
      if (fixed_.head) {
        const std::vector<float>& r = fixed_.head_reference.at(k);
        reference[g].insert(reference[g].end(), r.begin(), r.end());
      } else {
        append_scored(reference[g], observed_.outputs[k], sequences_[k].time_steps, H_, fixed_.scored_step);
      }
      stats_.scored_sequences.push_back(static_cast<int64_t>(k));
      stats_.scored_steps += sequences_[k].time_steps;
    }
  }
  return reference;
}

Score LayerSearch::score(const Candidate& c, const std::vector<std::vector<float>>& reference, int64_t expected) {
  Score result;
  try {
    std::vector<std::optional<QuantizedLayer>> built(sets_.size());
    double signal = 0, noise = 0;
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (!built[groups_[g].set]) built[groups_[g].set] = build(c, groups_[g].set);
      const QuantizedLayer& q = *built[groups_[g].set];
      std::vector<float> y;
      std::vector<int8_t> rows;  // what the head reads, when the score is the model's output
      for (size_t k : groups_[g].scored) {
        const CalibrationSequence& s = sequences_[k];
        QuantizedLayer::State state = q.quantize_state(s.h0, s.c0, 1);
        const std::vector<int8_t> ys8 = q.run_s8(q.quantize_input(s.values), {1, s.time_steps, Layout::kBatchMajor}, &state);
        if (fixed_.head) {
          append_scored(rows, ys8, s.time_steps, H_, fixed_.scored_step);
        } else {
          append_scored(y, q.dequantize_output(ys8), s.time_steps, H_, fixed_.scored_step);
        }
      }
      if (fixed_.head) y = fixed_.head(q.output_quant(), rows, static_cast<int32_t>(rows.size() / static_cast<size_t>(H_)));
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
  ++stats_.evaluations;
  if (plan_.progress) plan_.progress("searching", stats_.evaluations, expected);
  return result;
}

constexpr double kClipRatios[] = {1.0, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6};
constexpr double kHeadrooms[] = {1.0, 1.25, 1.5, 2.0, 3.0, 4.0};
constexpr int kPasses = 2;
// A change is taken when its gain, held out, averages more than both a hundredth of a dB and the
// spread of that gain between the groups (with 4 folds, twice its standard error).
constexpr double kMinGainDb = 0.01;

// Coordinate descent from the start: two passes over the boundaries, the cell headroom, bias
// correction and each weight block's clip; adaptive rounding last (each of its derivations costs
// up to tens of ms on the largest models), on the searched result and with bias correction
// toggled, which it interacts with.
void LayerSearch::descend(const std::vector<std::vector<float>>& reference) {
  const int32_t weight_blocks = 2 * source_.gate_count();
  const int64_t expected =
      1 + kPasses * static_cast<int64_t>(in_configs_.size() + out_configs_.size() +
                                         (search_headroom_ ? std::size(kHeadrooms) : 0) + (search_bias_ ? 1 : 0) +
                                         (search_clips_ ? weight_blocks * std::size(kClipRatios) : 0)) +
      (search_rounding_ ? (search_bias_ ? 2 : 1) : 0);
  Score best_score = score(best_, reference, expected);
  stats_.start_sqnr_db = best_score.pooled;
  auto try_candidate = [&](const Candidate& c) {
    const Score s = score(c, reference, expected);
    if (!s.ok) return;
    const GainSpread gain = best_score.ok ? gain_spread(best_score.group, s.group) : GainSpread{};
    if (!best_score.ok || (gain.mean > kMinGainDb && gain.mean > gain.spread)) {
      best_score = s;
      best_ = c;
    }
  };
  auto vary = [&](auto set, const auto& values) {
    for (const auto& v : values) {
      Candidate c = best_;
      set(c, v);
      try_candidate(c);
    }
  };
  std::vector<size_t> in_choices(in_configs_.size()), out_choices(out_configs_.size());
  std::iota(in_choices.begin(), in_choices.end(), size_t{0});
  std::iota(out_choices.begin(), out_choices.end(), size_t{0});
  for (int pass = 0; pass < kPasses; ++pass) {
    vary([](Candidate& c, size_t k) { c.input_range = k; }, in_choices);
    vary([](Candidate& c, size_t k) { c.output_range = k; }, out_choices);
    if (search_headroom_) vary([](Candidate& c, double h) { c.headroom = h; }, kHeadrooms);
    if (search_bias_) {
      Candidate c = best_;
      c.bias_correction = !c.bias_correction;
      try_candidate(c);
    }
    for (int32_t b = 0; b < weight_blocks && search_clips_; ++b) {
      vary([b](Candidate& c, double r) { c.clip[static_cast<size_t>(b)] = r; }, kClipRatios);
    }
  }
  if (search_rounding_) {
    Candidate c = best_;
    c.adaptive_rounding = !c.adaptive_rounding;
    try_candidate(c);
    if (search_bias_) {
      c.bias_correction = !c.bias_correction;
      try_candidate(c);
    }
  }
  stats_.final_sqnr_db = best_score.pooled;
  stats_.fold_sqnr_db = best_score.group;
  stats_.folds = static_cast<int32_t>(groups_.size());
}

void LayerSearch::search() {
  if (searching_) descend(references());
}

std::string observer_label(const ObserverConfig& c) {
  return c.kind == ObserverKind::kPercentile ? std::string("percentile:") + std::to_string(c.percentile).substr(0, 5)
                                             : std::string(observer_name(c.kind));
}

QuantizedLayer LayerSearch::result(CalibrationStats* stats) {
  stats_.input_range = in_ranges_[0][best_.input_range];
  stats_.output_range = out_ranges_[0][best_.output_range];
  stats_.input_observer = fixed_.input ? fixed_.input->source : observer_label(in_configs_[best_.input_range]);
  stats_.output_observer = fixed_.output ? fixed_.output->source : observer_label(out_configs_[best_.output_range]);
  stats_.chosen = decision_of(best_);
  QuantizedLayer layer = build(best_, 0);
  *stats = stats_;
  return layer;
}

}  // namespace

QuantizedLayer QuantizedLayer::compile(const FloatLstm& source, const OpObservation& observed,
                                       const CompileOptions& options, const OpBoundaries& fixed) {
  validate_options(options, 1, 1, source.cell);
  return compile(source, observed, starting_decision(options), search_plan(options), fixed);
}

QuantizedLayer QuantizedLayer::compile(const FloatLstm& source, const OpObservation& observed, const OpDecision& start,
                                       const SearchPlan& plan, const OpBoundaries& fixed) {
  LayerSearch search(source, observed, start, plan, fixed);
  search.check_observation();
  search.observe();
  search.make_groups();
  search.decide_tuning();
  search.candidate_ranges();
  search.second_moments();
  search.start();
  search.search();
  CalibrationStats stats;
  QuantizedLayer result = search.result(&stats);
  result.stats_ = stats;
  return result;
}

}  // namespace compiler
}  // namespace qlstm
