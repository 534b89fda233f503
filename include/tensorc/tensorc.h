/* tensorc's stable C ABI: load a compiled model bundle and run it (usable from C and C++). */
#ifndef TENSORC_TENSORC_H
#define TENSORC_TENSORC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Errors: every function returning tc_status* returns NULL on success, or a status the caller
 * owns and releases with tc_status_free. No function aborts or lets an exception escape.
 */
typedef struct tc_status tc_status;

typedef enum tc_status_code {
  TC_OK = 0,
  TC_INVALID_ARGUMENT = 1, /* a NULL pointer, an index out of range, a wrong input or buffer */
  TC_LOAD_ERROR = 2,       /* the bundle is missing, corrupt or not runnable on this machine */
  TC_RUN_ERROR = 3,        /* the run failed (inputs against the manifest's checks, a kernel) */
  TC_OUT_OF_MEMORY = 4,
  TC_INTERNAL = 5
} tc_status_code;

tc_status_code tc_status_get_code(const tc_status *status);
/* The message; valid until tc_status_free. "" for NULL (success). */
const char *tc_status_message(const tc_status *status);
void tc_status_free(tc_status *status);

/* Element types; the values are fixed. */
typedef enum tc_dtype {
  TC_F64 = 0,
  TC_F32 = 1,
  TC_F16 = 2,
  TC_BF16 = 3,
  TC_I64 = 4,
  TC_I32 = 5,
  TC_I16 = 6,
  TC_I8 = 7,
  TC_U8 = 8,
  TC_U16 = 9,
  TC_U32 = 10,
  TC_U64 = 11,
  TC_BOOL = 12
} tc_dtype;

/* Bytes per element, 0 for an unknown value. */
size_t tc_dtype_size(tc_dtype dtype);

typedef struct tc_model tc_model;

typedef struct tc_load_options {
  int32_t threads;     /* threads running kernels, the caller's included; 0 = one per core */
  const char *variant; /* NULL or "" = the best CPU variant this machine supports */
} tc_load_options;

/* Loads the bundle directory `path`. `options` may be NULL (defaults). On success *model is set
 * and must be released with tc_model_free.
 * `path` NULL or "" loads the model embedded in the library that defines this function: one
 * built by `tensorc compile --emit=so`, which dlopen(..., RTLD_LOCAL) may load next to others.
 * Anywhere else that is a TC_INVALID_ARGUMENT. */
tc_status *tc_model_load(const char *path, const tc_load_options *options, tc_model **model);
/* Where a model's kernels run. */
typedef enum tc_device_kind { TC_DEVICE_CPU = 0, TC_DEVICE_CUDA = 1 } tc_device_kind;
typedef struct tc_device {
  tc_device_kind kind;
  int32_t index;       /* CUDA device ordinal (TC_DEVICE_CUDA) */
  int32_t cuda_graphs; /* CUDA-graph replay: -1 as compiled (-O reduce-overhead), 0 off, 1 on */
} tc_device;
/* tc_model_load on a chosen device; `device` NULL means the CPU. A TC_DEVICE_CUDA model needs a
 * bundle compiled with --target cuda and an NVIDIA driver; errors say which is missing, or that
 * the bundle's archs do not fit the GPU ("bundle built for sm_90; device 0 (...) is sm_80"). */
tc_status *tc_model_load_on(const char *path, const tc_load_options *options,
                            const tc_device *device, tc_model **model);
void tc_model_free(tc_model *model);

tc_status *tc_model_num_inputs(const tc_model *model, size_t *count);
tc_status *tc_model_num_outputs(const tc_model *model, size_t *count);

/* A signature entry. `name` and `dims` are owned by the model and live as long as it does;
 * a symbolic dim (e.g. the batch) reads -1. */
typedef struct tc_tensor_info {
  const char *name;
  tc_dtype dtype;
  int64_t rank;
  const int64_t *dims;
} tc_tensor_info;

tc_status *tc_model_input_info(const tc_model *model, size_t index, tc_tensor_info *info);
tc_status *tc_model_output_info(const tc_model *model, size_t index, tc_tensor_info *info);

/* A dense, row-major tensor. */
typedef struct tc_tensor {
  tc_dtype dtype;
  int64_t rank;
  const int64_t *shape;
  void *data;
} tc_tensor;

/*
 * Runs the model. `inputs` are only read.
 * Each output is either
 *   - caller-provided: data != NULL, with dtype, rank and shape equal to the result's (known from
 *     the input shapes); the result is written into data (by the kernels themselves, or copied
 *     there when the buffer overlaps an input or another output); or
 *   - library-allocated: data == NULL on entry; on success dtype, rank, shape and data are set
 *     to memory the library owns, released with tc_tensor_free.
 * On error, no library-allocated output is left behind (those fields are reset to NULL/0). An
 * error found before the model's first kernel (inputs, output buffers) leaves caller-provided
 * outputs untouched; one during its kernels (a fallback op failing, a GPU fault) may leave them
 * partly written.
 * Calls on one model may come from several threads; they run one at a time.
 */
tc_status *tc_model_run(tc_model *model, const tc_tensor *inputs, size_t num_inputs,
                        tc_tensor *outputs, size_t num_outputs);

/* tc_model_run with the GPU work queued on the caller's CUDA stream (a CUstream or
 * cudaStream_t; NULL = the model's own stream), after work already queued there. Inputs and
 * outputs are host tensors, so the call returns once the stream has reached the end of the
 * model's work. A CPU model accepts only NULL. */
tc_status *tc_model_run_on_stream(tc_model *model, const tc_tensor *inputs, size_t num_inputs,
                                  tc_tensor *outputs, size_t num_outputs, void *cuda_stream);
/* Training bundles (`tensorc compile --train`). One step (forward, backward, optimizer update)
 * on the data inputs: the manifest's training.data in order, i.e. the model's inputs, then the
 * label. Parameters and optimizer state live in the model, start from the bundle's weights and
 * move on with each step; *loss receives the step's loss. An inference bundle is
 * TC_INVALID_ARGUMENT. */
tc_status *tc_model_train_step(tc_model *model, const tc_tensor *data, size_t num_data,
                               double *loss);
/* Writes the parameters and optimizer state as .safetensors (by input name), atomically. */
tc_status *tc_model_save_state(tc_model *model, const char *path);
/* Replaces them from a file tc_model_save_state wrote (names, dtypes and shapes checked). */
tc_status *tc_model_load_state(tc_model *model, const char *path);

/* Frees an output tc_model_run allocated (never a caller-provided one) and resets its fields. */
void tc_tensor_free(tc_tensor *tensor);

#ifdef __cplusplus
}
#endif

#endif /* TENSORC_TENSORC_H */
