/*===- tccrt.h - the tcc runtime C API --------------------------*- C -*-===*\
|*                                                                          *|
|* libtccrt loads a compiled tcc model (a "bundle", docs/bundle-format.md)  *|
|* and runs it on a device. C99; docs/runtime.md has a worked example.      *|
|*                                                                          *|
|* Conventions:                                                             *|
|*  - Every function returns a tccrt_status; TCCRT_OK is 0. On failure the  *|
|*    context's last error (tccrt_context_last_error) says why in one line. *|
|*    Every failure also sets the calling thread's last error               *|
|*    (tccrt_last_error), which is the only place to look when there is no  *|
|*    context yet (tccrt_context_create) or a NULL context was passed.      *|
|*  - Out-parameters are written only on success.                           *|
|*  - Calls on a context and its models from several threads are safe and *|
|*    serialized (each holds the context's lock); use one context per      *|
|*    thread for concurrency. Bindings are the model's, shared by threads. *|
|*  - Buffers bound to inputs and outputs are device memory of the          *|
|*    context's device (on the host: ordinary memory), must stay valid      *|
|*    until the model is destroyed or rebound, and must not overlap.        *|
|*  - A bundle contains machine code: load only bundles you trust.          *|
|*                                                                          *|
\*===----------------------------------------------------------------------===*/
#ifndef TCCRT_H
#define TCCRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* C++ callers (and libtccrt itself) see the enums with a fixed int type, so
 * that any int a C caller passes is a valid value there too. */
#ifdef __cplusplus
#define TCCRT_INT_ENUM : int
#else
#define TCCRT_INT_ENUM
#endif

/** Bumped on incompatible changes of this header. */
#define TCCRT_API_VERSION 1

typedef enum tccrt_status TCCRT_INT_ENUM {
  TCCRT_OK = 0,
  TCCRT_ERROR_INVALID_ARGUMENT = 1, /**< NULL pointer, bad index, wrong size */
  TCCRT_ERROR_INVALID_BUNDLE = 2,   /**< corrupt, truncated or malformed */
  TCCRT_ERROR_UNAVAILABLE = 3,      /**< device or target not available */
  TCCRT_ERROR_NOT_FOUND = 4,        /**< no input/output of that name */
  TCCRT_ERROR_UNBOUND = 5,          /**< run with an input/output unbound */
  TCCRT_ERROR_OUT_OF_MEMORY = 6,
  TCCRT_ERROR_RUN_FAILED = 7, /**< a model's run-time check failed */
  TCCRT_ERROR_IO = 8,         /**< cannot read a file */
  TCCRT_ERROR_DEVICE = 9      /**< a device/driver call failed */
} tccrt_status;

typedef enum tccrt_device_kind TCCRT_INT_ENUM {
  TCCRT_DEVICE_HOST = 0, /**< CPU threads; runs bundles with target "host" */
  TCCRT_DEVICE_CUDA = 1, /**< an NVIDIA GPU; runs bundles with target sm_NN */
  TCCRT_DEVICE_HIP = 2   /**< an AMD GPU; runs bundles with target gfxNNN */
} tccrt_device_kind;

/** Element types, as the model format names them (tccrt_dtype_name). */
typedef enum tccrt_dtype TCCRT_INT_ENUM {
  TCCRT_F64 = 0,
  TCCRT_F32 = 1,
  TCCRT_F16 = 2,
  TCCRT_BF16 = 3,
  TCCRT_F8E4M3 = 4,
  TCCRT_F8E5M2 = 5,
  TCCRT_I8 = 6,
  TCCRT_I32 = 7,
  TCCRT_I64 = 8,
  TCCRT_BOOL = 9 /**< one byte, 0 or 1 */
} tccrt_dtype;

/** A device and its resources (threads, driver context). */
typedef struct tccrt_context tccrt_context;
/** A bundle loaded on a context: code, params, arena, bindings. */
typedef struct tccrt_model tccrt_model;

/** Describes a model input or output. Pointers stay valid while the model
 *  lives. */
typedef struct tccrt_tensor_info {
  const char *name;
  tccrt_dtype dtype;
  const char *dtype_name; /**< "f32", "bf16", ... */
  int32_t rank;
  const int64_t *shape; /**< `rank` dimensions, row-major */
  size_t bytes;         /**< size a bound buffer must have */
} tccrt_tensor_info;

/** TCCRT_API_VERSION of the library actually loaded. */
int tccrt_api_version(void);
/** "ok", "invalid argument", ...: never NULL. */
const char *tccrt_status_string(tccrt_status status);
/** "f32", ...; "?" for an unknown value. */
const char *tccrt_dtype_name(tccrt_dtype dtype);
/** Bytes per element; 0 for an unknown value. */
size_t tccrt_dtype_size(tccrt_dtype dtype);

/** The calling thread's last error message ("" if none). Valid until the
 *  thread's next tccrt call. */
const char *tccrt_last_error(void);

/** Creates a context on device `device_index` of `kind` (0 for the host).
 *  The host uses TCC_NUM_THREADS threads when set, else one per core. CUDA
 *  loads the driver (libcuda.so.1) at the first call and uses the device's
 *  primary context with a stream of its own; HIP loads the HIP runtime
 *  (libamdhip64.so) at the first call and uses the device with a stream of its
 *  own. Without a driver/runtime or a device they fail with
 *  TCCRT_ERROR_UNAVAILABLE. */
tccrt_status tccrt_context_create(tccrt_device_kind kind, int device_index,
                                  tccrt_context **out);
/** Destroys a context; its models must have been destroyed. NULL is a
 *  no-op. */
tccrt_status tccrt_context_destroy(tccrt_context *ctx);
/** The context's last error message ("" if none). Valid until the next call
 *  on the context. */
const char *tccrt_context_last_error(const tccrt_context *ctx);

/** Device memory helpers, so that applications (and `tcc run`) can stage
 *  inputs and outputs for any device. `tccrt_free(ctx, NULL)` is a no-op. */
tccrt_status tccrt_malloc(tccrt_context *ctx, size_t bytes, void **out);
tccrt_status tccrt_free(tccrt_context *ctx, void *ptr);
tccrt_status tccrt_copy_to_device(tccrt_context *ctx, void *dst,
                                  const void *src, size_t bytes);
tccrt_status tccrt_copy_to_host(tccrt_context *ctx, void *dst, const void *src,
                                size_t bytes);

/** Loads a bundle file: validates it, uploads the params, allocates the
 *  arena and loads the kernels for the context's device. Only regular files
 *  are read (else TCCRT_ERROR_IO). A model whose params, arena, inputs and
 *  outputs exceed the memory the device has available fails with
 *  TCCRT_ERROR_OUT_OF_MEMORY, with the figures, before allocating. */
tccrt_status tccrt_model_load_file(tccrt_context *ctx, const char *path,
                                   tccrt_model **out);
/** Same from memory; `data` is copied and need not outlive the call. */
tccrt_status tccrt_model_load_memory(tccrt_context *ctx, const void *data,
                                     size_t size, tccrt_model **out);
/** Frees the model's device memory and code. NULL is a no-op. */
tccrt_status tccrt_model_destroy(tccrt_model *model);

/** The model's name (the bundle's "model"). */
tccrt_status tccrt_model_name(const tccrt_model *model, const char **out);
tccrt_status tccrt_model_num_inputs(const tccrt_model *model, size_t *out);
tccrt_status tccrt_model_num_outputs(const tccrt_model *model, size_t *out);
tccrt_status tccrt_model_input_info(const tccrt_model *model, size_t index,
                                    tccrt_tensor_info *out);
tccrt_status tccrt_model_output_info(const tccrt_model *model, size_t index,
                                     tccrt_tensor_info *out);
/** Index of the input/output called `name` (the first, for an output listed
 *  twice); TCCRT_ERROR_NOT_FOUND if there is none. */
tccrt_status tccrt_model_find_input(const tccrt_model *model, const char *name,
                                    size_t *index);
tccrt_status tccrt_model_find_output(const tccrt_model *model, const char *name,
                                     size_t *index);

/** Binds device memory to an input or output. `bytes` must equal the
 *  tensor's size; `data` may be NULL only when that size is 0. On a GPU the
 *  memory must be 16-byte aligned (tccrt_malloc's always is). */
tccrt_status tccrt_model_bind_input(tccrt_model *model, size_t index,
                                    const void *data, size_t bytes);
tccrt_status tccrt_model_bind_output(tccrt_model *model, size_t index,
                                     void *data, size_t bytes);
tccrt_status tccrt_model_bind_input_by_name(tccrt_model *model,
                                            const char *name, const void *data,
                                            size_t bytes);
tccrt_status tccrt_model_bind_output_by_name(tccrt_model *model,
                                             const char *name, void *data,
                                             size_t bytes);

/** Runs the model once on the bound buffers and waits for it. Fails with
 *  TCCRT_ERROR_UNBOUND if an input or output is unbound and with
 *  TCCRT_ERROR_RUN_FAILED, and the model's message (e.g. "index out of range
 *  in /nodes/3 (gather)"), when one of its run-time checks fired. */
tccrt_status tccrt_model_run(tccrt_model *model);

/** Sets a model option; unknown names or values fail with
 *  TCCRT_ERROR_INVALID_ARGUMENT. Options:
 *  - "cuda_graph": "1" records the run's launches as a CUDA graph at the next
 *    run and replays the graph in later runs, which saves the host's launch
 *    overheads; binding a different buffer discards the graph (it is
 *    recorded again). "0" (the default) launches kernel by kernel. CUDA and
 *    HIP contexts (there a HIP graph) only: "1" fails with
 *    TCCRT_ERROR_UNAVAILABLE on the host.
 *  - "grid_dependency": "1" (the default) lets a kernel that the compiler
 *    made wait for its predecessor's grid (CUDA, compute capability 9.0 and
 *    later; the manifest's "grid_dependency") start while the kernel before
 *    it still runs (programmatic dependent launch), hiding the launch gap.
 *    "0" launches every kernel after the previous one has ended. Any
 *    context accepts it; it changes nothing where there is no such kernel.
 *  - "graph_concurrency": "1" (the default) records a CUDA graph whose
 *    launches wait only for the earlier ones they share memory with (one
 *    writing it), so that independent branches run side by side; "0"
 *    records the launches as a chain, in order. Where the driver refuses
 *    the edges the graph is recorded as a chain (tccrt_model_graph_order
 *    says why). Any context accepts it. */
tccrt_status tccrt_model_set_option(tccrt_model *model, const char *name,
                                    const char *value);

/** How the graph that option "cuda_graph" recorded orders its work: "" when
 *  none is recorded yet; "concurrent: E edges among W pieces of work";
 *  "chain" (option "graph_concurrency" off, or a device without it), or
 *  "chain: " and why the driver refused the concurrent one. The string is
 *  valid until the next call on the model. */
tccrt_status tccrt_model_graph_order(const tccrt_model *model,
                                     const char **out);

/** Runs the model `runs` times back to back and writes each run's time in
 *  milliseconds to ms[0 .. runs). On CUDA and HIP the times are between
 *  device events recorded around each run's work (cu/hipEventElapsedTime),
 *  and the runs are queued without waiting for each other, so host overheads
 *  between runs are not counted; the status counters are checked after every
 *  256 runs (each run zeroes them first, so this checks the last). On the
 *  host each time is the steady clock around a whole run. Errors as
 *  tccrt_model_run. */
tccrt_status tccrt_model_time_runs(tccrt_model *model, size_t runs,
                                   double *ms);

/** One launch of a run, in the order a run queues them (the bundle's
 *  "launches"; the init launches run once at load and are not among them).
 *  Pointers stay valid while the model lives. */
typedef struct tccrt_launch_info {
  /** The kernel's symbol; NULL for a copy between buffers. */
  const char *kernel;
  /** 1: a GPU launch, `grid` blocks of `block` threads in x, y, z. 0: a
   *  host launch (or a copy), `grid[0]` work items split over the threads
   *  (the bytes copied, for a copy), the rest 1. */
  int32_t gpu;
  int64_t grid[3];
  int64_t block[3];
} tccrt_launch_info;

/** The number of launches a run queues (tccrt_model_launch_info). */
tccrt_status tccrt_model_num_launches(const tccrt_model *model, size_t *out);
tccrt_status tccrt_model_launch_info(const tccrt_model *model, size_t index,
                                     tccrt_launch_info *out);

/** Runs the model `runs` times and times every launch of every run: with
 *  L = tccrt_model_num_launches, launch_ms[r * L + i] is launch i of run r
 *  in milliseconds, gap_ms[r * L + i] (when gap_ms is not NULL) the time
 *  the device spent before it waiting for it to be queued, and run_ms[r]
 *  (when not NULL) the whole run. The launches are queued one by one, never
 *  through a graph (option "cuda_graph" is ignored here). On CUDA and HIP a
 *  device event is recorded before and after each launch on the one stream
 *  and a launch's time is between its two events. Where the device ran out
 *  of work before a launch, the wait for the host to record its first event
 *  is in gap_ms, not in the launch's time, but the host's time to queue the
 *  launch itself after that event is (microseconds): times with gaps near
 *  zero are the device's alone. A run's time spans all its events, gaps
 *  included. On the host each launch runs to completion and is timed with
 *  the steady clock (gaps are the runtime's bookkeeping between launches).
 *  Errors as tccrt_model_time_runs. */
tccrt_status tccrt_model_profile_runs(tccrt_model *model, size_t runs,
                                      double *launch_ms, double *gap_ms,
                                      double *run_ms);

#ifdef __cplusplus
}
#endif

#endif /* TCCRT_H */
