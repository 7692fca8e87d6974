// What qlstm eval measures besides SQNR and max error (README.md "The tool"): a classifier's top-1
// accuracy float vs int8 and how often their argmax agree (--labels), and a forecaster's error
// against its targets, float vs int8, in the model's own units (--targets, --units); and
// saturation: how many float values fall outside a calibrated range, where int8 clips them.
#ifndef QLSTM_TOOLS_EVAL_METRICS_H_
#define QLSTM_TOOLS_EVAL_METRICS_H_

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "qlstm/compiler/io/npy.h"
#include "qlstm/compiler/calibrate/quantize.h"

namespace qlstm {
namespace cli {

// An output value v in the user's units is v * scale + offset: the "output_units" object of a
// JSON file (examples/sunspots/model.json: {"name": "sunspots", "scale": std, "offset": mean}).
struct OutputUnits {
  std::string name = "output units";
  double scale = 1.0, offset = 0.0;
};
// Throws FileError naming the file and the key: unreadable, not JSON, no "output_units" object, a
// scale that is not a finite positive number, an offset that is not finite, a name not a string.
OutputUnits read_output_units(const std::string& path);
// The same of a parsed JSON object ({"output_units": {...}}), `path` naming it.
OutputUnits output_units_from_json(const nlohmann::json& j, const std::string& path);

// One class per sequence: an integer .npy (int8 ... int64) of shape [rows] or [rows, 1], each in
// [0, classes). Throws CompileError naming the file and what is wrong (dtype, shape, length, the
// first value out of range).
std::vector<int64_t> read_labels(const std::string& path, int64_t rows, int32_t classes);
// The same of an array in memory (a .npy's, or Python's), `path` naming it.
std::vector<int64_t> labels_from_array(const compiler::NpyArray& a, const std::string& path, int64_t rows,
                                       int32_t classes);

// The expected outputs of a regression: a float32 .npy of the output's shape (for an output
// width of 1, also without the last axis). Throws CompileError naming the file.
std::vector<float> read_targets(const std::string& path, const std::vector<int64_t>& output_shape);
std::vector<float> targets_from_array(const compiler::NpyArray& a, const std::string& path,
                                      const std::vector<int64_t>& output_shape);

// The index of the largest of n values (the first on a tie).
int32_t argmax(const float* row, int32_t n);

struct ClassifierScores {
  size_t rows = 0;
  size_t agree = 0;                          // int8's argmax == float's
  size_t float_correct = 0, int8_correct = 0;  // argmax == label (with labels)
};
// float and int8 outputs of `width` values per row; labels empty or one per row.
ClassifierScores score_classifier(const std::vector<float>& ref, const std::vector<float>& got, int32_t width,
                                  const std::vector<int64_t>& labels);

struct ForecastError {
  double mae = 0, rmse = 0;  // in the units' scale
};
ForecastError forecast_error(const std::vector<float>& predicted, const std::vector<float>& targets,
                             const OutputUnits& units);

// The RMS error of each time step over every sequence and output value: ref and got are B x T rows
// of `width` values, batch-major ([B][T]) or time-major ([T][B]).
std::vector<double> rms_error_per_step(const std::vector<float>& ref, const std::vector<float>& got, int32_t batch,
                                       int32_t time_steps, int32_t width, bool time_major);

// The values of a float tensor outside the range its int8 (or int16) form represents: they clip.
// Held-out data beyond the calibration data's range is the usual cause of a bad int8 result.
struct RangeCount {
  double lo = 0, hi = 0;  // the representable range; a value in [lo, hi] does not clip
  size_t outside = 0, total = 0;
  double furthest = 0;  // the value furthest outside [lo, hi] (when outside > 0)

  void add(double v);
  double fraction() const { return total == 0 ? 0.0 : static_cast<double>(outside) / static_cast<double>(total); }
};
// What an affine int8 quantization holds without clamping: [dequantize(-128), dequantize(127)]
// widened by half a step each side, where rounding alone would reach -128 or 127 anyway.
RangeCount int8_range(const compiler::AffineQuant& q);
// The same for int16 values (a 16x8 model's).
RangeCount int16_range(const compiler::AffineQuant& q);
// |c| <= 32767.5 * 2^power: an int16 cell at 2^power, likewise (symmetric: one bound a message can
// name; -32768 is held too).
RangeCount cell_range(int32_t power);

}  // namespace cli
}  // namespace qlstm

#endif  // QLSTM_TOOLS_EVAL_METRICS_H_
