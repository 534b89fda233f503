/* Hand-written kernels with the generated-kernel calling convention, for the runtime's tests. */
#include <stdint.h>

/* out[i] = a[i] + b[i] over the flat range: args = (a, b, out). */
void tc_test_add_f32(void *const *args, const int64_t *syms, int64_t begin, int64_t end) {
  (void)syms;
  const float *a = (const float *)args[0];
  const float *b = (const float *)args[1];
  float *out = (float *)args[2];
  for (int64_t i = begin; i < end; ++i)
    out[i] = a[i] + b[i];
}

/* out[row] = syms[0] + row: checks the symbol values reach kernels. args = (out). */
void tc_test_fill_batch_f32(void *const *args, const int64_t *syms, int64_t begin, int64_t end) {
  float *out = (float *)args[0];
  for (int64_t row = begin; row < end; ++row)
    out[row] = (float)(syms[0] * 1000 + row);
}

/* What the runtime checks a manifest against (bundle::kernelSignatureTable): the plan these
 * kernels expect, which is RuntimeTest's sampleManifest. */
const char tensorc_kernel_signatures[] =
    "{\"format\":1,\"kernels\":{"
    "\"tc_test_add_f32\":{\"args\":[[\"f32\",[\"batch\",4]],[\"f32\",[\"batch\",4]],"
    "[\"f32\",[\"batch\",4]]],\"range\":\"4*batch\"},"
    "\"tc_test_fill_batch_f32\":{\"args\":[[\"f32\",[\"batch\"]]],\"range\":\"batch\"}},"
    "\"symbols\":[\"batch\"]}";
