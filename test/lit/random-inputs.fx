# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b > /dev/null 2>&1 && tensorc run $d/b --random-inputs 7 --dim s0=3 --outputs $d/run.safetensors > /dev/null && tensorc-run $d/b --random-inputs 7 --dim s0=3 --outputs $d/rt.safetensors > /dev/null && tensorc run %s --interp --random-inputs 7 --dim s0=3 --outputs $d/interp.safetensors > /dev/null && cmp $d/run.safetensors $d/rt.safetensors && cmp $d/run.safetensors $d/interp.safetensors && rm -r $d
# RUN: d=$(mktemp -d) && tensorc compile %s -o $d/b > /dev/null 2>&1 && tensorc run $d/b --random-inputs 7 --dim s0=3 --outputs $d/a.safetensors > /dev/null && tensorc-run $d/b --random-inputs 8 --dim s0=3 --outputs $d/b.safetensors > /dev/null && not cmp -s $d/a.safetensors $d/b.safetensors && rm -r $d
# `tensorc run --random-inputs SEED` (bundle or --interp) and the runtime-only `tensorc-run
# --random-inputs SEED` generate the same inputs (one generator, shared): the model returns
# copies of its inputs of each dtype, so the outputs are the inputs, byte for byte. Another
# seed gives other data.
graph(%x: f32[s0, 5], %h: f16[4], %i: i64[s0, 2], %m: bool[6], %u: u8[3]):
  %xc : f32[s0, 5] = call_function[target=aten.clone](args=(%x,))
  %hc : f16[4] = call_function[target=aten.clone](args=(%h,))
  %ic : i64[s0, 2] = call_function[target=aten.clone](args=(%i,))
  %mc : bool[6] = call_function[target=aten.clone](args=(%m,))
  %uc : u8[3] = call_function[target=aten.clone](args=(%u,))
  return (%xc, %hc, %ic, %mc, %uc)
