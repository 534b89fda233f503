/* Runs `tensorc compile --emit=so` model libraries the way a user would: dlopen and dlsym only,
 * linking nothing of tensorc's. Every library is loaded (and its model created) before any
 * runs, so several models live side by side in this one process.
 *
 *   emit_so_main [--threads N] [--variant V] MODEL.so OUT.bin IN.bin:DIMS... [-- MODEL.so ...]...
 *
 * IN.bin holds an f32 input's raw bytes, DIMS its shape ("8x128"). OUT.bin receives every
 * output's raw bytes, one after the other; each output's shape is printed to stdout.
 */
#include "tensorc/tensorc.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MODELS 8
#define MAX_TENSORS 16
#define MAX_RANK 8

typedef tc_status *(*load_fn)(const char *, const tc_load_options *, tc_model **);
typedef tc_status *(*count_fn)(const tc_model *, size_t *);
typedef tc_status *(*run_fn)(tc_model *, const tc_tensor *, size_t, tc_tensor *, size_t);
typedef void (*free_model_fn)(tc_model *);
typedef void (*free_tensor_fn)(tc_tensor *);
typedef const char *(*message_fn)(const tc_status *);
typedef void (*free_status_fn)(tc_status *);

/* One model library and what it runs on. */
struct job {
  const char *library;
  const char *outputPath;
  int numInputs;
  const char *inputPaths[MAX_TENSORS];
  int64_t shapes[MAX_TENSORS][MAX_RANK];
  int64_t ranks[MAX_TENSORS];
  void *handle;
  tc_model *model;
  run_fn run;
  count_fn numOutputs;
  free_model_fn freeModel;
  free_tensor_fn freeTensor;
  message_fn message;
  free_status_fn freeStatus;
};

static void *symbol(void *handle, const char *library, const char *name) {
  void *address = dlsym(handle, name);
  if (!address) {
    fprintf(stderr, "emit_so_main: %s: no symbol %s\n", library, name);
    exit(1);
  }
  return address;
}

/* "path:8x128" -> path and dims. */
static void parseInput(struct job *job, char *spec) {
  char *colon = strrchr(spec, ':');
  int index = job->numInputs++;
  if (!colon || index >= MAX_TENSORS) {
    fprintf(stderr, "emit_so_main: input '%s' is not PATH:DIMS (or too many inputs)\n", spec);
    exit(2);
  }
  *colon = '\0';
  job->inputPaths[index] = spec;
  job->ranks[index] = 0;
  for (char *dim = strtok(colon + 1, "x"); dim; dim = strtok(NULL, "x")) {
    if (job->ranks[index] == MAX_RANK) {
      fprintf(stderr, "emit_so_main: rank above %d\n", MAX_RANK);
      exit(2);
    }
    job->shapes[index][job->ranks[index]++] = strtoll(dim, NULL, 10);
  }
}

static void *readInput(const char *path, size_t bytes) {
  void *data = malloc(bytes ? bytes : 1);
  FILE *file = fopen(path, "rb");
  if (!data || !file || fread(data, 1, bytes, file) != bytes || fgetc(file) != EOF) {
    fprintf(stderr, "emit_so_main: %s: cannot read exactly %zu bytes\n", path, bytes);
    exit(1);
  }
  fclose(file);
  return data;
}

static void check(struct job *job, tc_status *status, const char *what) {
  if (!status)
    return;
  fprintf(stderr, "emit_so_main: %s: %s: %s\n", job->library, what, job->message(status));
  job->freeStatus(status);
  exit(1);
}

static void load(struct job *job, int threads, const char *variant) {
  /* RTLD_LOCAL: each library keeps its own runtime, so several coexist. */
  job->handle = dlopen(job->library, RTLD_NOW | RTLD_LOCAL);
  if (!job->handle) {
    fprintf(stderr, "emit_so_main: %s\n", dlerror());
    exit(1);
  }
  load_fn loadModel = (load_fn)symbol(job->handle, job->library, "tc_model_load");
  job->run = (run_fn)symbol(job->handle, job->library, "tc_model_run");
  job->numOutputs = (count_fn)symbol(job->handle, job->library, "tc_model_num_outputs");
  job->freeModel = (free_model_fn)symbol(job->handle, job->library, "tc_model_free");
  job->freeTensor = (free_tensor_fn)symbol(job->handle, job->library, "tc_tensor_free");
  job->message = (message_fn)symbol(job->handle, job->library, "tc_status_message");
  job->freeStatus = (free_status_fn)symbol(job->handle, job->library, "tc_status_free");
  tc_load_options options = {threads, variant};
  /* NULL path: the model embedded in this library. */
  check(job, loadModel(NULL, &options, &job->model), "tc_model_load");
}

static void run(struct job *job) {
  tc_tensor inputs[MAX_TENSORS], outputs[MAX_TENSORS];
  for (int i = 0; i < job->numInputs; ++i) {
    size_t count = 1;
    for (int64_t d = 0; d < job->ranks[i]; ++d)
      count *= (size_t)job->shapes[i][d];
    inputs[i].dtype = TC_F32;
    inputs[i].rank = job->ranks[i];
    inputs[i].shape = job->shapes[i];
    inputs[i].data = readInput(job->inputPaths[i], count * sizeof(float));
  }
  size_t numOutputs = 0;
  check(job, job->numOutputs(job->model, &numOutputs), "tc_model_num_outputs");
  if (numOutputs > MAX_TENSORS) {
    fprintf(stderr, "emit_so_main: %zu outputs\n", numOutputs);
    exit(1);
  }
  memset(outputs, 0, sizeof outputs); /* data NULL: the library allocates */
  check(job, job->run(job->model, inputs, (size_t)job->numInputs, outputs, numOutputs),
        "tc_model_run");

  FILE *out = fopen(job->outputPath, "wb");
  if (!out) {
    fprintf(stderr, "emit_so_main: cannot write %s\n", job->outputPath);
    exit(1);
  }
  for (size_t o = 0; o < numOutputs; ++o) {
    size_t count = 1;
    printf("%s output %zu: dtype %d shape [", job->library, o, (int)outputs[o].dtype);
    for (int64_t d = 0; d < outputs[o].rank; ++d) {
      count *= (size_t)outputs[o].shape[d];
      printf("%s%lld", d ? ", " : "", (long long)outputs[o].shape[d]);
    }
    printf("]\n");
    /* Only f32 inputs are generated, and the tested models keep f32 throughout. */
    fwrite(outputs[o].data, sizeof(float), count, out);
    job->freeTensor(&outputs[o]);
  }
  fclose(out);
  for (int i = 0; i < job->numInputs; ++i)
    free(inputs[i].data);
}

int main(int argc, char **argv) {
  struct job jobs[MAX_MODELS];
  int numJobs = 0, threads = 0, arg = 1;
  const char *variant = NULL;
  memset(jobs, 0, sizeof jobs);
  for (; arg + 1 < argc && strncmp(argv[arg], "--", 2) == 0 && argv[arg][2]; arg += 2) {
    if (strcmp(argv[arg], "--threads") == 0)
      threads = atoi(argv[arg + 1]);
    else if (strcmp(argv[arg], "--variant") == 0)
      variant = argv[arg + 1];
    else
      break;
  }
  while (arg < argc) {
    if (numJobs == MAX_MODELS || arg + 1 >= argc) {
      fprintf(stderr, "usage: emit_so_main [--threads N] [--variant V] MODEL.so OUT.bin IN:DIMS... "
                      "[-- MODEL.so OUT.bin IN.bin:DIMS...]...\n");
      return 2;
    }
    struct job *job = &jobs[numJobs++];
    job->library = argv[arg++];
    job->outputPath = argv[arg++];
    for (; arg < argc && strcmp(argv[arg], "--") != 0; ++arg)
      parseInput(job, argv[arg]);
    arg += arg < argc; /* the "--" */
  }
  for (int j = 0; j < numJobs; ++j)
    load(&jobs[j], threads, variant);
  for (int j = 0; j < numJobs; ++j)
    run(&jobs[j]);
  for (int j = 0; j < numJobs; ++j) {
    jobs[j].freeModel(jobs[j].model);
    dlclose(jobs[j].handle);
  }
  return 0;
}
