#include "qlstm/compiler/search/held_out.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace qlstm {
namespace compiler {
namespace {

// Sums of squared signal and squared error, per fold and over all of them.
struct Tally {
  double signal = 0, noise = 0;
  void add(const std::vector<float>& reference, const std::vector<float>& test) {
    for (size_t k = 0; k < reference.size() && k < test.size(); ++k) {
      signal += static_cast<double>(reference[k]) * reference[k];
      const double d = static_cast<double>(reference[k]) - test[k];
      noise += d * d;
    }
  }
  double sqnr_db() const {
    return noise == 0 ? std::numeric_limits<double>::infinity() : 10.0 * std::log10(signal / noise);
  }
};

// One sequence through the program (int8 or 16x8) from its initial state, dequantized.
std::vector<float> run_one(const CompiledModel& m, const CalibrationSequence& s) {
  return run_program_float(m, s.values, {1, s.time_steps, Layout::kBatchMajor});
}

void finish(HeldOutEstimate& e, const std::vector<Tally>& folds) {
  Tally all;
  for (const Tally& t : folds) {
    all.signal += t.signal;
    all.noise += t.noise;
    e.fold_sqnr_db.push_back(t.sqnr_db());
  }
  e.folds = static_cast<int32_t>(folds.size());
  e.sqnr_db = all.sqnr_db();
  double mean = 0;
  for (double v : e.fold_sqnr_db) mean += v;
  mean /= static_cast<double>(e.fold_sqnr_db.size());
  double ss = 0;
  for (double v : e.fold_sqnr_db) ss += (v - mean) * (v - mean);
  e.spread_db = e.fold_sqnr_db.size() > 1 && std::isfinite(ss) ? std::sqrt(ss / static_cast<double>(e.fold_sqnr_db.size() - 1)) : 0;
  e.standard_error_db = e.spread_db / std::sqrt(static_cast<double>(e.fold_sqnr_db.size()));
}

}  // namespace

HeldOutEstimate estimate_k_fold(const FloatProgram& program, const CalibrationSet& calibration,
                                const CompileOptions& options, const QuantizedProgram& compiled) {
  HeldOutEstimate e;
  std::vector<size_t> with_steps;
  for (size_t k = 0; k < calibration.sequences.size(); ++k) {
    if (calibration.sequences[k].time_steps > 0) with_steps.push_back(k);
  }
  if (program.constant_state_batch() > 1) {
    e.note = "a learned per-row initial state: each calibration row starts from its own, so no fold can stand for another";
    return e;
  }
  if (with_steps.size() < 2) {
    e.note = "fewer than 2 calibration sequences with steps: nothing to hold out";
    return e;
  }
  const size_t N = calibration.sequences.size();
  const size_t K = std::min<size_t>(static_cast<size_t>(std::max(options.search_folds, 2)), N);
  CompileOptions fold_options = options;
  fold_options.progress = nullptr;
  for (const CalibrationStats& st : compiled.stats) fold_options.op_choices.push_back(st.chosen);
  if (fold_options.op_choices.size() != program.ops.size()) {
    throw CompileError("held-out estimate: " + std::to_string(compiled.stats.size()) + " ops' choices for " +
                       std::to_string(program.ops.size()) + " LSTM ops");
  }
  std::vector<Tally> folds;
  for (size_t f = 0; f < K; ++f) {
    // The search's folds: contiguous blocks.
    const size_t begin = f * N / K, end = (f + 1) * N / K;
    CalibrationSet rest;
    for (size_t k = 0; k < N; ++k) {
      if (k < begin || k >= end) rest.sequences.push_back(calibration.sequences[k]);
    }
    QuantizedProgram q;
    try {
      q = compile_program(program, rest, fold_options);
    } catch (const CompileError& err) {
      e = HeldOutEstimate();
      e.note = "fold " + std::to_string(f) + " (sequences " + std::to_string(begin) + " to " + std::to_string(end - 1) +
               ") held out, the others do not compile: " + err.what();
      return e;
    }
    Tally t;
    for (size_t k = begin; k < end; ++k) {
      if (calibration.sequences[k].time_steps == 0) continue;
      t.add(compiled.float_outputs.at(k), run_one(q.model, calibration.sequences[k]));
      ++e.sequences;
    }
    if (t.signal > 0 || t.noise > 0) folds.push_back(t);
  }
  e.method = "k-fold";
  finish(e, folds);
  if (static_cast<int64_t>(with_steps.size()) < kHeldOutReliableSequences) {
    e.caution = "only " + std::to_string(with_steps.size()) + " calibration sequences: so few rarely span the range "
                "new data takes, and new data beyond it scores lower than this; calibrate on at least " +
                std::to_string(kHeldOutReliableSequences);
  }
  return e;
}

HeldOutEstimate measure_validation(const FloatProgram& program, const CompiledModel& compiled,
                                   const CalibrationSet& validation, int32_t groups) {
  HeldOutEstimate e;
  std::vector<size_t> with_steps;
  for (size_t k = 0; k < validation.sequences.size(); ++k) {
    if (validation.sequences[k].time_steps > 0) with_steps.push_back(k);
  }
  if (with_steps.empty()) {
    e.note = "the validation set has no sequence with steps";
    return e;
  }
  const size_t G = std::min<size_t>(static_cast<size_t>(std::max(groups, 1)), with_steps.size());
  std::vector<Tally> folds(G);
  for (size_t j = 0; j < with_steps.size(); ++j) {
    const CalibrationSequence& s = validation.sequences[with_steps[j]];
    const FloatProgramResult f = run_float_program(program, s.values.data(), {1, s.time_steps, Layout::kBatchMajor});
    folds[j * G / with_steps.size()].add(f.output, run_one(compiled, s));
    ++e.sequences;
  }
  e.method = "validation";
  finish(e, folds);
  if (e.sequences < kHeldOutReliableSequences) {
    e.caution = "only " + std::to_string(e.sequences) + " validation sequences: a noisy figure";
  }
  return e;
}

}  // namespace compiler
}  // namespace qlstm
