/* The C ABI on a GPU: tc_model_load_on (TC_DEVICE_CUDA), tc_model_run_on_stream, and recovery
 * from CUDA out-of-memory. Loads BUNDLE (test/gpu/oom.fx compiled with --target cuda), runs it
 * with s0 = 4 and checks sum_j x_i * x_j; then asks for s0 = 2^19 (a 1 TiB arena), which must fail
 * with TC_OUT_OF_MEMORY; then runs s0 = 4 again, which must still work.
 *
 *   cuda_capi_check BUNDLE      exit 0: passed; 77: skipped (no usable GPU); 1: failed
 */
#include "tensorc/tensorc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_run(tc_model *model, int64_t n, tc_status_code *code, const char **message) {
  static float x[8];
  int64_t shape[2] = {n, 1};
  for (int i = 0; i < 8; ++i)
    x[i] = (float)(i + 1) * 0.5f;
  tc_tensor input = {TC_F32, 2, shape, n <= 8 ? x : NULL};
  static float big; /* large runs never read the input: their arena fails first */
  if (n > 8)
    input.data = &big;
  tc_tensor output = {TC_F32, 0, NULL, NULL};
  tc_status *status = tc_model_run_on_stream(model, &input, 1, &output, 1, NULL);
  *code = tc_status_get_code(status);
  *message = status ? strdup(tc_status_message(status)) : "";
  tc_status_free(status);
  if (*code != TC_OK)
    return 0;
  int ok = output.rank == 1 && output.shape[0] == n;
  float total = 0;
  for (int64_t j = 0; j < n; ++j)
    total += x[j];
  for (int64_t i = 0; ok && i < n; ++i) {
    float want = x[i] * total;
    ok = fabsf(((float *)output.data)[i] - want) <= 1e-5f + 1e-4f * fabsf(want);
  }
  tc_tensor_free(&output);
  return ok;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: cuda_capi_check BUNDLE\n");
    return 1;
  }
  tc_model *model = NULL;
  tc_device device = {TC_DEVICE_CUDA, 0, -1};
  tc_status *status = tc_model_load_on(argv[1], NULL, &device, &model);
  if (status) {
    const char *message = tc_status_message(status);
    int noGpu = strstr(message, "no CUDA driver") || strstr(message, "cuInit");
    fprintf(stderr, "cuda_capi_check: %s: %s\n", noGpu ? "skipped" : "load failed", message);
    tc_status_free(status);
    return noGpu ? 77 : 1;
  }
  tc_status_code code;
  const char *message;
  int failures = 0;
  if (!check_run(model, 4, &code, &message)) {
    fprintf(stderr, "FAIL: first run: %s\n", message);
    ++failures;
  }
  check_run(model, (int64_t)1 << 19, &code, &message);
  if (code != TC_OUT_OF_MEMORY) {
    fprintf(stderr, "FAIL: a 1 TiB arena gave status %d (%s), expected TC_OUT_OF_MEMORY\n",
            (int)code, message);
    ++failures;
  } else {
    printf("out of memory reported: %s\n", message);
  }
  if (!check_run(model, 4, &code, &message)) {
    fprintf(stderr, "FAIL: run after the out-of-memory error: %s\n", message);
    ++failures;
  }
  tc_model_free(model);
  printf("%s\n", failures ? "cuda_capi_check: FAILED" : "cuda_capi_check: passed");
  return failures ? 1 : 0;
}
