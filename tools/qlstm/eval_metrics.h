// What qlstm eval measures besides SQNR and max error (README.md "The tool"): a classifier's top-1
// accuracy float vs int8 and how often their argmax agree (--labels), and a forecaster's error
// against its targets, float vs int8, in the model's own units (--targets, --units).
#ifndef QLSTM_TOOLS_EVAL_METRICS_H_
#define QLSTM_TOOLS_EVAL_METRICS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

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

// One class per sequence: an integer .npy (int8 ... int64) of shape [rows] or [rows, 1], each in
// [0, classes). Throws CompileError naming the file and what is wrong (dtype, shape, length, the
// first value out of range).
std::vector<int64_t> read_labels(const std::string& path, int64_t rows, int32_t classes);

// The expected outputs of a regression: a float32 .npy of the output's shape (for an output
// width of 1, also without the last axis). Throws CompileError naming the file.
std::vector<float> read_targets(const std::string& path, const std::vector<int64_t>& output_shape);

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

}  // namespace cli
}  // namespace qlstm

#endif  // QLSTM_TOOLS_EVAL_METRICS_H_
