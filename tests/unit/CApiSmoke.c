/*===- CApiSmoke.c - tccrt.h from C99, against the shared library --------===*\
|* Compiled with -std=c99 -pedantic -Werror to keep the header plain C, and  *|
|* linked to libtccrt.so to check that the exported API is usable from C.   *|
\*===----------------------------------------------------------------------===*/
#include "tccrt.h"

#include <stdio.h>
#include <string.h>

#define EXPECT(cond)                                                           \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond);       \
      return 1;                                                                \
    }                                                                          \
  } while (0)

int main(void) {
  tccrt_context *ctx = NULL;
  tccrt_model *model = NULL;
  const char junk[] = "TCCBUNDL but nothing else";
  float in[4] = {1, 2, 3, 4}, out[4] = {0, 0, 0, 0};
  void *dev = NULL;

  EXPECT(tccrt_api_version() == TCCRT_API_VERSION);
  /* Succeeds on a GPU machine; elsewhere it must say why. */
  if (tccrt_context_create(TCCRT_DEVICE_CUDA, 0, &ctx) == TCCRT_OK) {
    EXPECT(tccrt_context_destroy(ctx) == TCCRT_OK);
  } else {
    EXPECT(strstr(tccrt_last_error(), "CUDA") != NULL);
  }
  ctx = NULL;
  EXPECT(tccrt_context_create(TCCRT_DEVICE_HOST, 0, &ctx) == TCCRT_OK);

  EXPECT(tccrt_model_load_memory(ctx, junk, sizeof(junk), &model) ==
         TCCRT_ERROR_INVALID_BUNDLE);
  EXPECT(strstr(tccrt_context_last_error(ctx), "truncated bundle") != NULL);
  EXPECT(model == NULL);

  EXPECT(tccrt_malloc(ctx, sizeof(in), &dev) == TCCRT_OK);
  EXPECT(tccrt_copy_to_device(ctx, dev, in, sizeof(in)) == TCCRT_OK);
  EXPECT(tccrt_copy_to_host(ctx, out, dev, sizeof(out)) == TCCRT_OK);
  EXPECT(memcmp(in, out, sizeof(in)) == 0);
  EXPECT(tccrt_free(ctx, dev) == TCCRT_OK);

  EXPECT(tccrt_context_destroy(ctx) == TCCRT_OK);
  puts("ok");
  return 0;
}
