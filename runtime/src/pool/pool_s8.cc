// The pooling kernel: validation, the reference (docs/arithmetic.md §17), one output value at a
// time in the order of arm_max_pool_s8 / arm_avgpool_s8's definition, and the dispatch over the
// variants (pool_s8_variants(): runtime/src/variants.cc).
#include "qlstm/pool_s8.h"

#include "first_runnable.h"
#include "pool/pool_average.h"
#include "qlstm/fixed_point.h"
#include "qlstm/kernels.h"
#include "row_op.h"

namespace qlstm {
namespace {

constexpr int64_t kMaxElements = fxp::kInt32Max;

int64_t image_elements(int32_t height, int32_t width, int32_t channels) {
  return static_cast<int64_t>(height) * width * channels;
}

FieldFailure check_params(const qlstm_pool_s8_params* p) {
  if (p == nullptr) return {QLSTM_ERROR_NULL_POINTER, "params"};
  if (p->kind != QLSTM_POOL_MAX && p->kind != QLSTM_POOL_AVERAGE) return {QLSTM_ERROR_BAD_DIMS, "kind"};
  if (p->batch < 0) return {QLSTM_ERROR_BAD_DIMS, "batch"};
  if (p->input_height < 1) return {QLSTM_ERROR_BAD_DIMS, "input_height"};
  if (p->input_width < 1) return {QLSTM_ERROR_BAD_DIMS, "input_width"};
  if (p->channels < 1) return {QLSTM_ERROR_BAD_DIMS, "channels"};
  if (p->window_height < 1) return {QLSTM_ERROR_BAD_DIMS, "window_height"};
  if (p->window_width < 1) return {QLSTM_ERROR_BAD_DIMS, "window_width"};
  if (static_cast<int64_t>(p->window_height) * p->window_width > QLSTM_POOL_MAX_WINDOW_AREA) {
    return {QLSTM_ERROR_BAD_DIMS, "window_width"};
  }
  if (p->stride_height < 1) return {QLSTM_ERROR_BAD_DIMS, "stride_height"};
  if (p->stride_width < 1) return {QLSTM_ERROR_BAD_DIMS, "stride_width"};
  if (p->padding_height < 0 || p->padding_height >= p->window_height) return {QLSTM_ERROR_BAD_DIMS, "padding_height"};
  if (p->padding_width < 0 || p->padding_width >= p->window_width) return {QLSTM_ERROR_BAD_DIMS, "padding_width"};
  // Every window holds at least one position of the image: the first (padding < window) and the last.
  if (p->output_height < 1 ||
      static_cast<int64_t>(p->output_height - 1) * p->stride_height - p->padding_height >= p->input_height) {
    return {QLSTM_ERROR_BAD_DIMS, "output_height"};
  }
  if (p->output_width < 1 ||
      static_cast<int64_t>(p->output_width - 1) * p->stride_width - p->padding_width >= p->input_width) {
    return {QLSTM_ERROR_BAD_DIMS, "output_width"};
  }
  if (p->batch * image_elements(p->input_height, p->input_width, p->channels) > kMaxElements) {
    return {QLSTM_ERROR_BAD_DIMS, "batch"};
  }
  if (p->batch * image_elements(p->output_height, p->output_width, p->channels) > kMaxElements) {
    return {QLSTM_ERROR_BAD_DIMS, "batch"};
  }
  if (p->activation_min < fxp::kInt8Min || p->activation_min > fxp::kInt8Max) return {QLSTM_ERROR_BAD_DIMS, "activation_min"};
  if (p->activation_max < p->activation_min || p->activation_max > fxp::kInt8Max) {
    return {QLSTM_ERROR_BAD_DIMS, "activation_max"};
  }
  return kNoFieldFailure;
}

int32_t max_of(int32_t a, int32_t b) { return a > b ? a : b; }
int32_t min_of(int32_t a, int32_t b) { return a < b ? a : b; }

// The specification in code: one output value at a time.
void pool_s8_reference(const qlstm_pool_s8_params& p, const int8_t* input, int8_t* output) {
  const int32_t H = p.input_height, W = p.input_width, C = p.channels;
  for (int32_t n = 0; n < p.batch; ++n) {
    const int8_t* image = input + static_cast<int64_t>(n) * image_elements(H, W, C);
    for (int32_t oy = 0; oy < p.output_height; ++oy) {
      // The window's rows inside the image: padding is left out of the max, the sum and the count.
      const int32_t y0 = oy * p.stride_height - p.padding_height;
      const int32_t y_begin = max_of(y0, 0), y_end = min_of(y0 + p.window_height, H);
      for (int32_t ox = 0; ox < p.output_width; ++ox) {
        const int32_t x0 = ox * p.stride_width - p.padding_width;
        const int32_t x_begin = max_of(x0, 0), x_end = min_of(x0 + p.window_width, W);
        const int32_t count = (y_end - y_begin) * (x_end - x_begin);
        for (int32_t c = 0; c < C; ++c) {
          int32_t acc = p.kind == QLSTM_POOL_MAX ? fxp::kInt8Min : 0;
          for (int32_t y = y_begin; y < y_end; ++y) {
            for (int32_t x = x_begin; x < x_end; ++x) {
              const int32_t v = image[(static_cast<int64_t>(y) * W + x) * C + c];
              acc = p.kind == QLSTM_POOL_MAX ? max_of(acc, v) : acc + v;
            }
          }
          if (p.kind == QLSTM_POOL_AVERAGE) acc = pool_rounded_average(acc, count);
          *output++ = static_cast<int8_t>(fxp::clamp(acc, p.activation_min, p.activation_max));
        }
      }
    }
  }
}

}  // namespace

const PoolS8Variant kPoolS8ReferenceVariant = {"reference", nullptr, nullptr, pool_s8_reference};

const PoolS8Variant* select_pool_s8_variant(const PoolS8Variant* const* list, size_t count,
                                            const qlstm_pool_s8_params& p) {
  return first_runnable_variant(list, count, p);
}

qlstm_status run_pool_s8_prechecked(const PoolS8Variant* variant, const qlstm_pool_s8_params& params,
                                    const int8_t* input, int8_t* output) {
  if (variant == nullptr) {
    size_t count = 0;
    const PoolS8Variant* const* all = pool_s8_variants(&count);
    variant = select_pool_s8_variant(all, count, params);
    if (variant == nullptr) return QLSTM_ERROR_NO_VARIANT;
  }
  if (params.batch > 0) variant->run(params, input, output);
  return QLSTM_OK;
}

qlstm_status run_pool_s8(const PoolS8Variant& variant, const qlstm_pool_s8_params* params, const int8_t* input,
                         int8_t* output) {
  const FieldFailure f = check_params(params);
  if (f.status != QLSTM_OK) return f.status;
  if (params->batch > 0 && (input == nullptr || output == nullptr)) return QLSTM_ERROR_NULL_POINTER;
  if (variant.is_supported != nullptr && !variant.is_supported()) return QLSTM_ERROR_UNSUPPORTED;
  if (variant.can_run != nullptr && !variant.can_run(*params)) return QLSTM_ERROR_NO_VARIANT;
  return run_pool_s8_prechecked(&variant, *params, input, output);
}

}  // namespace qlstm

extern "C" qlstm_status qlstm_pool_s8_validate(const qlstm_pool_s8_params* params, const char** field) {
  return qlstm::report(qlstm::check_params(params), field);
}

extern "C" qlstm_status qlstm_pool_s8(const qlstm_pool_s8_params* params, const int8_t* input, int8_t* output) {
  const qlstm::FieldFailure f = qlstm::check_params(params);
  if (f.status != QLSTM_OK) return f.status;
  if (params->batch > 0 && (input == nullptr || output == nullptr)) return QLSTM_ERROR_NULL_POINTER;
  return qlstm::run_pool_s8_prechecked(nullptr, *params, input, output);
}
