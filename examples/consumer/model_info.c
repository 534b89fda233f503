/* Prints a compiled tensorc bundle's inputs and outputs through the runtime's C ABI:
 *   model_info BUNDLE
 * one line each, "input x f32 [-1, 1024]" (-1: a symbolic dim). */
#include <tensorc/tensorc.h>

#include <stdio.h>

static const char *const kDTypes[] = {"f64", "f32", "f16", "bf16", "i64", "i32", "i16",
                                      "i8",  "u8",  "u16", "u32",  "u64", "bool"};

static int report(tc_status *status) {
  fprintf(stderr, "model_info: %s\n", tc_status_message(status));
  tc_status_free(status);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: model_info BUNDLE\n");
    return 1;
  }
  tc_model *model = NULL;
  tc_status *status = tc_model_load(argv[1], NULL, &model);
  if (status)
    return report(status);
  for (int output = 0; output < 2; ++output) {
    size_t count = 0;
    status = output ? tc_model_num_outputs(model, &count) : tc_model_num_inputs(model, &count);
    for (size_t i = 0; !status && i < count; ++i) {
      tc_tensor_info info;
      status =
          output ? tc_model_output_info(model, i, &info) : tc_model_input_info(model, i, &info);
      if (status)
        break;
      printf("%s %s %s [", output ? "output" : "input", info.name, kDTypes[info.dtype]);
      for (int64_t d = 0; d < info.rank; ++d)
        printf("%s%lld", d ? ", " : "", (long long)info.dims[d]);
      printf("]\n");
    }
    if (status) {
      tc_model_free(model);
      return report(status);
    }
  }
  tc_model_free(model);
  return 0;
}
