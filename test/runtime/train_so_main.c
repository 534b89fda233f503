/* Trains with a `tensorc compile --train --emit=so` model library the way a deployment would:
 * dlopen and dlsym only. Runs STEPS training steps on f32 data inputs (the manifest's
 * training.data order), printing "step N: loss L" like `tensorc train`, saves the state, reloads
 * it into a second model from the same library, and checks that both then take the same step.
 *
 *   train_so_main MODEL.so STEPS STATE.safetensors DATA.bin:DIMS...
 */
#include "tensorc/tensorc.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TENSORS 8
#define MAX_RANK 8

typedef tc_status *(*load_fn)(const char *, const tc_load_options *, tc_model **);
typedef tc_status *(*step_fn)(tc_model *, const tc_tensor *, size_t, double *);
typedef tc_status *(*state_fn)(tc_model *, const char *);
typedef tc_status *(*run_fn)(tc_model *, const tc_tensor *, size_t, tc_tensor *, size_t);
typedef void (*free_model_fn)(tc_model *);
typedef const char *(*message_fn)(const tc_status *);
typedef tc_status_code (*code_fn)(const tc_status *);
typedef void (*free_status_fn)(tc_status *);

static void *handle;
static message_fn message;
static free_status_fn freeStatus;

static void *symbol(const char *name) {
  void *address = dlsym(handle, name);
  if (!address) {
    fprintf(stderr, "train_so_main: no symbol %s\n", name);
    exit(1);
  }
  return address;
}

static void check(tc_status *status, const char *what) {
  if (!status)
    return;
  fprintf(stderr, "train_so_main: %s: %s\n", what, message(status));
  freeStatus(status);
  exit(1);
}

int main(int argc, char **argv) {
  if (argc < 5 || argc - 4 > MAX_TENSORS) {
    fprintf(stderr, "usage: train_so_main MODEL.so STEPS STATE.safetensors DATA.bin:DIMS...\n");
    return 2;
  }
  handle = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    fprintf(stderr, "train_so_main: %s\n", dlerror());
    return 1;
  }
  load_fn load = (load_fn)symbol("tc_model_load");
  step_fn step = (step_fn)symbol("tc_model_train_step");
  state_fn save = (state_fn)symbol("tc_model_save_state");
  state_fn restore = (state_fn)symbol("tc_model_load_state");
  free_model_fn freeModel = (free_model_fn)symbol("tc_model_free");
  code_fn code = (code_fn)symbol("tc_status_get_code");
  message = (message_fn)symbol("tc_status_message");
  freeStatus = (free_status_fn)symbol("tc_status_free");

  int numData = argc - 4;
  tc_tensor data[MAX_TENSORS];
  int64_t shapes[MAX_TENSORS][MAX_RANK];
  for (int i = 0; i < numData; ++i) {
    char *spec = argv[4 + i], *colon = strrchr(spec, ':');
    if (!colon) {
      fprintf(stderr, "train_so_main: '%s' is not PATH:DIMS\n", spec);
      return 2;
    }
    *colon = '\0';
    size_t count = 1;
    data[i].rank = 0;
    for (char *dim = strtok(colon + 1, "x"); dim && data[i].rank < MAX_RANK;
         dim = strtok(NULL, "x")) {
      shapes[i][data[i].rank++] = strtoll(dim, NULL, 10);
      count *= (size_t)shapes[i][data[i].rank - 1];
    }
    data[i].dtype = TC_F32;
    data[i].shape = shapes[i];
    data[i].data = malloc(count * sizeof(float));
    FILE *file = fopen(spec, "rb");
    if (!file || fread(data[i].data, sizeof(float), count, file) != count) {
      fprintf(stderr, "train_so_main: %s: cannot read %zu floats\n", spec, count);
      return 1;
    }
    fclose(file);
  }

  tc_model *model = NULL, *restored = NULL;
  tc_load_options options = {1, NULL};
  check(load(NULL, &options, &model), "tc_model_load");
  int steps = atoi(argv[2]);
  double loss = 0;
  for (int s = 1; s <= steps; ++s) {
    check(step(model, data, (size_t)numData, &loss), "tc_model_train_step");
    printf("step %d: loss %.9g\n", s, loss);
  }
  /* Wrong data count: an error status, and the model keeps working. */
  tc_status *bad = step(model, data, (size_t)numData - 1, &loss);
  if (!bad || code(bad) != TC_RUN_ERROR) {
    fprintf(stderr, "train_so_main: a step with too few inputs did not fail as a run error\n");
    return 1;
  }
  freeStatus(bad);

  check(save(model, argv[3]), "tc_model_save_state");
  check(load(NULL, &options, &restored), "tc_model_load (second model)");
  check(restore(restored, argv[3]), "tc_model_load_state");
  double next = 0, nextRestored = 0;
  check(step(model, data, (size_t)numData, &next), "tc_model_train_step");
  check(step(restored, data, (size_t)numData, &nextRestored), "tc_model_train_step (restored)");
  printf("next step: loss %.9g, from the saved state: %.9g\n", next, nextRestored);
  if (next != nextRestored) {
    fprintf(stderr, "train_so_main: the restored state took a different step\n");
    return 1;
  }
  freeModel(model);
  freeModel(restored);
  for (int i = 0; i < numData; ++i)
    free(data[i].data);
  return 0;
}
