/* A C application that links a model compiled with
 *   tcc compile examples/softmax.json --emit lib -o softmax
 * (softmax.h + libsoftmax.a) and libtccrt, runs it on fresh random inputs,
 * and checks the result against a softmax computed here in double. */
#include "softmax.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(call)                                                            \
  do {                                                                         \
    if ((call) != TCCRT_OK) {                                                  \
      fprintf(stderr, "c_app: %s failed: %s\n", #call, tccrt_last_error());    \
      return 1;                                                                \
    }                                                                          \
  } while (0)

int main(void) {
  tccrt_context *ctx;
  tccrt_model *model;
  CHECK(tccrt_context_create(TCCRT_DEVICE_HOST, 0, &ctx));
  CHECK(softmax_load(ctx, &model));

  tccrt_tensor_info in, out;
  CHECK(tccrt_model_input_info(model, 0, &in));
  CHECK(tccrt_model_output_info(model, 0, &out));
  if (in.dtype != TCCRT_F32 || in.rank != 2 || out.bytes != in.bytes) {
    fprintf(stderr, "c_app: unexpected model signature\n");
    return 1;
  }
  size_t rows = (size_t)in.shape[0], cols = (size_t)in.shape[1];
  float *x = malloc(in.bytes), *y = malloc(out.bytes);
  unsigned seed = (unsigned)time(NULL);
  srand(seed);
  for (size_t i = 0; i < rows * cols; ++i)
    x[i] = 8.0f * ((float)rand() / (float)RAND_MAX - 0.5f);

  CHECK(tccrt_model_bind_input(model, 0, x, in.bytes));
  CHECK(tccrt_model_bind_output(model, 0, y, out.bytes));
  CHECK(tccrt_model_run(model));

  /* f32 softmax: each value is within a few f32 ulps of the exact one. */
  double worst = 0;
  for (size_t r = 0; r < rows; ++r) {
    const float *xr = x + r * cols;
    double max = xr[0], sum = 0;
    for (size_t c = 1; c < cols; ++c)
      max = xr[c] > max ? xr[c] : max;
    for (size_t c = 0; c < cols; ++c)
      sum += exp(xr[c] - max);
    for (size_t c = 0; c < cols; ++c) {
      double ref = exp(xr[c] - max) / sum;
      double rel = fabs(y[r * cols + c] - ref) / ref;
      worst = rel > worst ? rel : worst;
    }
  }
  printf("c_app: %s %zux%zu, seed %u, max relative error %.3g\n", in.name, rows,
         cols, seed, worst);
  free(x);
  free(y);
  CHECK(tccrt_model_destroy(model));
  CHECK(tccrt_context_destroy(ctx));
  if (worst > 1e-5) {
    fprintf(stderr, "c_app: result differs from the reference\n");
    return 1;
  }
  return 0;
}
