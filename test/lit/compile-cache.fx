# Identical kernels are generated once; the compile cache; bundles that do not depend on -j.
# Two branches of the same shape, kept apart (--max-fusions 0), compute the same kernel body on
# different buffers: the CPU library exports both names (one code), the CUDA launches of the
# second call the first's function.
# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b --target cpu,cuda --cuda-arch sm_80 --no-cache -q --max-fusions 0 && python3 -c "import json,sys; [print('LAUNCH', l['name'], l.get('cuda_symbol', '-')) for l in json.load(open(sys.argv[1]))['launches']]" $d/b/manifest.json | FileCheck %s --check-prefix=DEDUP && grep -c '__global__' $d/b/src/kernels.cu | FileCheck %s --check-prefix=GLOBALS && nm -D --defined-only $d/b/cpu/x86_64.so | FileCheck %s --check-prefix=SYMBOLS && rm -r $d
# The CPU bundle runs both kernels right (the interpreter is the oracle).
# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b --no-cache -q --max-fusions 0 && tensorc run $d/b --random-inputs 3 --dim s0=3 --outputs $d/c.safetensors > /dev/null && tensorc run %s --interp --random-inputs 3 --dim s0=3 --outputs $d/i.safetensors > /dev/null && python3 %S/compare_outputs.py $d/c.safetensors $d/i.safetensors && rm -r $d
# Two compiles at once into one cache both succeed with the same bundle; a third is a hit and
# copies that bundle; compiles with -j 1 and -j 2 and no cache give it too.
# RUN: d=$(mktemp -d) && export TENSORC_CACHE_DIR=$d/cache && { tensorc compile %s -o $d/a --target cpu,cuda --cuda-arch sm_80 -q & p=$!; tensorc compile %s -o $d/b --target cpu,cuda --cuda-arch sm_80 -q; wait $p; } && diff -r $d/a $d/b && tensorc compile %s -o $d/c --target cpu,cuda --cuda-arch sm_80 2>&1 | FileCheck %s --check-prefix=HIT && diff -r $d/a $d/c && tensorc compile %s -o $d/j1 --target cpu,cuda --cuda-arch sm_80 --no-cache -j 1 -q && tensorc compile %s -o $d/j2 --target cpu,cuda --cuda-arch sm_80 --no-cache -j 2 -q && diff -r $d/j1 $d/j2 && diff -r $d/a $d/j1 && rm -r $d
# The manifest says nothing about where or when it was compiled.
# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b --no-cache -q && not grep -e "$d" -e /tmp -e '"time' $d/b/manifest.json && rm -r $d
# DEDUP: LAUNCH [[FIRST:poi_[a-z_]*_0]] -
# DEDUP: LAUNCH {{poi_[a-z_]*_1}} [[FIRST]]
# GLOBALS: {{^1$}}
# SYMBOLS-DAG: T [[FIRST:poi_[a-z_]*_0]]
# SYMBOLS-DAG: T {{poi_[a-z_]*_1$}}
# HIT: from the compile cache
graph(%x: f32[s0, 64], %y: f32[s0, 64]):
  %a : f32[s0, 64] = call_function[target=aten.tanh](args=(%x,))
  %b : f32[s0, 64] = call_function[target=aten.tanh](args=(%y,))
  return (%a, %b)
