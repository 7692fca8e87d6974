// The decision record's checks and the decision every op starts from (decision.h, options.h).
#include <cmath>
#include <string>

#include "qlstm/compiler/search/options.h"

namespace qlstm {
namespace compiler {
namespace {

std::string number(double v) {
  std::string s = std::to_string(v);
  s.erase(s.find_last_not_of('0') + 1);
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

void validate_observer(const ObserverConfig& c, const std::string& what) {
  if (c.kind == ObserverKind::kPercentile && !(c.percentile > 50 && c.percentile <= 100)) {
    throw CompileError(what + ": percentile " + number(c.percentile) + ", P must be in (50, 100]");
  }
}

// The same ranges parse_cell_policy and choose_cell_scale accept.
void validate_cell_scale(const CellScaleRequest& r, const std::string& what) {
  switch (r.policy) {
    case CellScalePolicy::kCalibrated:
      if (!(r.headroom >= 1.0 && r.headroom <= 64.0)) {
        throw CompileError(what + " calibrated:" + number(r.headroom) + ": headroom must be in [1, 64]");
      }
      return;
    case CellScalePolicy::kSequenceBound:
      if (r.sequence_length < 1) {
        throw CompileError(what + " sequence-bound:" + std::to_string(r.sequence_length) + ": T must be >= 1");
      }
      return;
    case CellScalePolicy::kFixed:
      if (r.fixed_power < kCellScalePowerMin || r.fixed_power > kCellScalePowerMax) {
        throw CompileError(what + " fixed:" + std::to_string(r.fixed_power) + ": P must be in [" +
                           std::to_string(kCellScalePowerMin) + ", " + std::to_string(kCellScalePowerMax) +
                           "] (P < -15 would overflow the int16 input-times-cell-gate term)");
      }
      return;
  }
}

void validate_weights(const WeightDecision& w, const std::string& what) {
  for (size_t b = 0; b < w.weight_clip_ratio.size(); ++b) {
    const double r = w.weight_clip_ratio[b];
    if (!(r >= 0 && r <= 1)) {
      throw CompileError(what + ".weight_clip_ratio[" + std::to_string(b) + "]: " + number(r) +
                         ", expected 0 (the weight method's scale) or a ratio in (0, 1]");
    }
  }
  if (w.cell_clip < 0 || w.cell_clip > 32767) {
    throw CompileError(what + ".cell_clip: " + std::to_string(w.cell_clip) + " outside [0, 32767]");
  }
}

// What a GRU or an RNN cannot take (derive_gru_params and derive_rnn_params refuse the same, as a guard).
void validate_for_cellless(const WeightDecision& w, const std::string& what, CellKind cell) {
  const std::string a_cell = cell == CellKind::kRnn ? "an RNN" : "a GRU";
  if (w.cell_clip != 0) throw CompileError(what + ".cell_clip " + std::to_string(w.cell_clip) + ": " + a_cell + " has no cell to clip");
  if (w.weight_rounding == WeightRounding::kAdaptive) {
    throw CompileError(cell == CellKind::kRnn
                           ? std::string("weight_rounding adaptive: not supported for an RNN yet; use nearest")
                           : std::string("weight_rounding adaptive: not supported for a GRU (the new gate's recurrent "
                                         "operand r * h differs per row; one operand moment does not describe it); use nearest"));
  }
}

}  // namespace

void validate_decision(const OpDecision& d, const std::string& what) {
  const std::string prefix = what.empty() ? "" : what + ".";
  validate_observer(d.input_observer, prefix + "input_observer");
  validate_observer(d.output_observer, prefix + "output_observer");
  validate_cell_scale(d.cell_scale, prefix + "cell_scale");
  validate_weights(d.weights, prefix + "weights");
  if (d.s16_headroom_bits < 0 || d.s16_headroom_bits > OpDecision::kMaxS16HeadroomBits) {
    throw CompileError(prefix + "int16_headroom (--int16-headroom): a boundary headroom of " +
                       std::to_string(d.s16_headroom_bits) + " bits, expected 0 to " + std::to_string(OpDecision::kMaxS16HeadroomBits));
  }
}

void validate_options(const CompileOptions& options, int32_t recurrent_ops, int32_t layers, CellKind cellless) {
  const bool has_gru = cellless != CellKind::kLstm;
  validate_decision(starting_decision(options), "");
  if (options.search_folds < 2) {
    throw CompileError("search_folds: " + std::to_string(options.search_folds) + ", expected at least 2");
  }
  if (options.search_max_macs < 0) {
    throw CompileError("search_max_macs: " + std::to_string(options.search_max_macs) + ", expected >= 0");
  }
  if (!options.s16_layers.empty() && options.s16_layers.size() != static_cast<size_t>(layers)) {
    throw CompileError("16x8: a choice for " + std::to_string(options.s16_layers.size()) + " layers, the model has " +
                       std::to_string(layers));
  }
  if (!options.op_choices.empty() && options.op_choices.size() != static_cast<size_t>(recurrent_ops)) {
    throw CompileError("op_choices: " + std::to_string(options.op_choices.size()) + " decisions for " +
                       std::to_string(recurrent_ops) + " recurrent ops");
  }
  for (size_t k = 0; k < options.op_choices.size(); ++k) {
    validate_decision(options.op_choices[k], "op_choices[" + std::to_string(k) + "]");
    if (has_gru) validate_for_cellless(options.op_choices[k].weights, "op_choices[" + std::to_string(k) + "].weights", cellless);
  }
  if (has_gru) validate_for_cellless(options.weights, "weights", cellless);
}

OpDecision starting_decision(const CompileOptions& options) {
  return {Precision::kInt8, options.input_observer, options.output_observer, options.cell_scale,
          options.weights, options.fc_per_channel, options.s16_headroom_bits};
}

SearchPlan search_plan(const CompileOptions& options) {
  return {options.tuning, options.search_max_macs, options.search_folds, options.user_fixed, options.progress};
}

}  // namespace compiler
}  // namespace qlstm
