"""The cases of bench/cuda_kernels.py (GEMMs, convolutions, depthwise layers, probes and tuning
sweeps) and its `prepare` step, which writes them to cases.json and has the kit tool render and
compile them. Only `prepare` needs this file; `run` reads the kit's manifest."""
import json
import os
import subprocess

from cuda_kernels import select


def gemm(name, m, n, k, dtype, math_mode="", epilogue="store"):
    c = {"name": name, "op": "gemm", "dtype": dtype, "m": m, "n": n, "k": k, "epilogue": epilogue}
    if math_mode:
        c["math"] = math_mode
    return c


def conv(name, h, c, oc, k, stride, dtype, math_mode="", n=1):
    case = {"name": name, "op": "conv", "dtype": dtype, "n": n, "h": h, "w": h, "c": c, "oc": oc,
            "kh": k, "kw": k, "stride": stride, "pad": k // 2, "epilogue": "store"}
    if math_mode:
        case["math"] = math_mode
    return case


def depthwise(name, h, c, k, stride, dtype, n=1):
    return {"name": name, "op": "depthwise", "dtype": dtype, "n": n, "h": h, "w": h, "c": c,
            "kh": k, "kw": k, "stride": stride, "pad": k // 2, "epilogue": "store"}


# ResNet-50 v1.5 (stride on the 3x3), batch 1: (input size, C, OC, kernel, stride), distinct.
RESNET50 = [(224, 3, 64, 7, 2),
            (56, 64, 64, 1, 1), (56, 64, 64, 3, 1), (56, 64, 256, 1, 1), (56, 256, 64, 1, 1),
            (56, 256, 128, 1, 1), (56, 128, 128, 3, 2), (28, 128, 512, 1, 1), (56, 256, 512, 1, 2),
            (28, 512, 128, 1, 1), (28, 128, 128, 3, 1),
            (28, 512, 256, 1, 1), (28, 256, 256, 3, 2), (14, 256, 1024, 1, 1), (28, 512, 1024, 1, 2),
            (14, 1024, 256, 1, 1), (14, 256, 256, 3, 1),
            (14, 1024, 512, 1, 1), (14, 512, 512, 3, 2), (7, 512, 2048, 1, 1), (14, 1024, 2048, 1, 2),
            (7, 2048, 512, 1, 1), (7, 512, 512, 3, 1)]
# Depthwise layers (input size, C, kernel, stride): MobileNetV3-Large, EfficientNet-B0, ConvNeXt-T.
DEPTHWISE = [("mbv3", 112, 16, 3, 1), ("mbv3", 112, 64, 3, 2), ("mbv3", 56, 72, 3, 1),
             ("mbv3", 56, 72, 5, 2), ("mbv3", 28, 120, 5, 1), ("mbv3", 28, 240, 3, 2),
             ("mbv3", 14, 200, 3, 1), ("mbv3", 14, 480, 3, 1), ("mbv3", 14, 672, 5, 2),
             ("mbv3", 7, 960, 5, 1),
             ("effb0", 112, 32, 3, 1), ("effb0", 112, 96, 3, 2), ("effb0", 56, 144, 5, 2),
             ("effb0", 28, 240, 3, 2), ("effb0", 14, 480, 5, 1), ("effb0", 14, 672, 5, 2),
             ("effb0", 7, 1152, 3, 1),
             ("convnext", 56, 96, 7, 1), ("convnext", 28, 192, 7, 1), ("convnext", 14, 384, 7, 1),
             ("convnext", 7, 768, 7, 1)]
BERT = [(2304, 768), (768, 768), (3072, 768), (768, 3072)]  # (N, K) at M = 128


def mma_reference(case):
    """The same case on the mma.sync kernel (the heuristic for a target without wgmma)."""
    c = dict(case, name="mma_" + case["name"], arch="sm_90")
    return c


def all_cases():
    cases = []
    for size in (1024, 4096):
        cases.append(gemm(f"mm{size}_f16", size, size, size, "f16"))
        cases.append(gemm(f"mm{size}_f32", size, size, size, "f32", "simt"))
        cases.append(gemm(f"mm{size}_tf32", size, size, size, "f32", "tf32"))
    cases.append(gemm("mm4096_bf16", 4096, 4096, 4096, "bf16"))
    for m in (1, 8, 16):
        for n, k in ((768, 768), (3072, 768), (768, 3072), (4096, 4096)):
            cases.append(gemm(f"b1_m{m}_n{n}_k{k}_f16", m, n, k, "f16"))
    cases.append(gemm("b1_m16_n4096_k4096_bf16", 16, 4096, 4096, "bf16"))
    cases.append(gemm("b1_m1_n4096_k4096_f32", 1, 4096, 4096, "f32", "simt"))
    for n, k in BERT:
        cases.append(gemm(f"bert_n{n}_k{k}_f16", 128, n, k, "f16"))
        cases.append(gemm(f"bert_n{n}_k{k}_f32", 128, n, k, "f32", "simt"))
        cases.append(gemm(f"vit_n{n}_k{k}_f32", 197, n, k, "f32", "simt"))
        cases.append(gemm(f"bert_n{n}_k{k}_tf32", 128, n, k, "f32", "tf32"))
    cases.append(gemm("gpt2_lmhead_n50257_k768_f16", 128, 50257, 768, "f16"))
    cases.append(gemm("resnet_fc_m1_n1000_k2048_f16", 1, 1000, 2048, "f16"))
    for h, c, oc, k, s in RESNET50:
        base = f"r50_{h}_{c}to{oc}_k{k}s{s}"
        cases.append(conv(base + "_f16", h, c, oc, k, s, "f16"))
        cases.append(conv(base + "_f32", h, c, oc, k, s, "f32", "simt"))
        cases.append(conv(base + "_tf32", h, c, oc, k, s, "f32", "tf32"))
    for net, h, c, k, s in DEPTHWISE:
        cases.append(depthwise(f"dw_{net}_{h}_c{c}_k{k}s{s}_f16", h, c, k, s, "f16"))
    for net, h, c, k, s in DEPTHWISE[-4:]:
        cases.append(depthwise(f"dw_{net}_{h}_c{c}_k{k}s{s}_f32", h, c, k, s, "f32"))
    # The mma.sync kernel on what now takes the Hopper kernel (f16 GEMMs with M > 16, pointwise
    # f16 convolutions): the comparison in one run.
    refs = [c for c in cases if c["dtype"] == "f16" and (
        (c["op"] == "gemm" and c["m"] > 16) or (c["op"] == "conv" and c["kh"] == 1 and
                                                  c["stride"] == 1))]
    cases += [mma_reference(c) for c in refs]
    # Fixed costs: one tiny tile of work (launch, one DRAM round trip, epilogue).
    for kernel in ("mma", "wgmma"):
        c = gemm(f"probe_{kernel}_m64_n64_k64_f16", 64, 64, 64, "f16")
        if kernel == "mma":
            c["arch"] = "sm_90"
        cases.append(c)
    c = gemm("probe_mma_m128_n768_k64_f16", 128, 768, 64, "f16")
    c["arch"] = "sm_90"
    cases.append(c)
    cases.append(gemm("probe_wgmma_m128_n768_k64_f16", 128, 768, 64, "f16"))
    return cases + sweep_cases()


# Tuning data in the same run: configurations besides the heuristic's for a few shapes.
SWEEPS = [
    ("mm4096_f16", dict(m=4096, n=4096, k=4096), [
        (128, 256, 32, 2, 4, 3, 1), (128, 256, 32, 2, 4, 4, 1), (128, 128, 32, 2, 4, 4, 1),
        (128, 128, 32, 2, 2, 4, 1), (128, 128, 64, 2, 2, 3, 1)]),
    ("bert_n768_k768_f16", dict(m=128, n=768, k=768), [
        (128, 64, 32, 2, 2, 4, 4), (64, 64, 32, 2, 2, 4, 1), (64, 64, 32, 2, 2, 4, 2),
        (64, 64, 64, 2, 2, 4, 3), (32, 64, 32, 1, 4, 4, 1), (128, 128, 32, 2, 4, 4, 6)]),
    ("bert_n3072_k768_f16", dict(m=128, n=3072, k=768), [
        (128, 128, 32, 2, 4, 4, 1), (128, 128, 32, 2, 4, 4, 3), (128, 64, 32, 2, 2, 4, 1),
        (64, 64, 32, 2, 2, 4, 1)]),
    ("b1_m1_n4096_k4096_f16", dict(m=1, n=4096, k=4096), [
        (16, 64, 64, 1, 4, 6, 5), (16, 64, 64, 1, 4, 6, 8), (16, 128, 64, 1, 4, 6, 4),
        (16, 64, 128, 1, 4, 4, 4), (16, 64, 64, 1, 4, 4, 2)]),
    ("b1_m16_n768_k3072_f16", dict(m=16, n=768, k=3072), [
        (16, 64, 64, 1, 4, 6, 16), (16, 64, 64, 1, 4, 6, 8), (16, 64, 128, 1, 4, 4, 8)]),
]
CONV_SWEEPS = [
    ("r50_56_64to64_k3s1_f16", (56, 64, 64, 3, 1), [
        (64, 64, 32, 2, 2, 4, 1), (64, 64, 32, 2, 2, 4, 2), (128, 64, 32, 2, 2, 4, 3),
        (128, 64, 64, 2, 2, 3, 2), (32, 64, 32, 1, 4, 4, 1)]),
    ("r50_7_512to512_k3s1_f16", (7, 512, 512, 3, 1), [
        (64, 64, 64, 2, 2, 6, 16), (64, 64, 64, 2, 2, 4, 8), (64, 64, 32, 2, 2, 6, 8),
        (64, 128, 64, 2, 2, 4, 8)]),
    ("r50_28_128to512_k1s1_f16", (28, 128, 512, 1, 1), [
        (64, 64, 32, 2, 2, 4, 1), (128, 64, 32, 2, 2, 4, 1), (64, 128, 32, 2, 2, 4, 1)]),
]

# Strict f32 on CUDA cores: (bm, bn, split-K); 8 x 8 outputs a thread, BK 8, two stages. The
# transformer shapes at M = 128 (BERT/GPT-2 s128) and M = 197 (ViT-B/16): how many warps an SM
# needs (a 64x64 tile is 2 warps, 128x128 is 8) against split-K's partial sums.
SIMT_SHAPES = [("bert", 128, 768, 768), ("bert", 128, 2304, 768), ("bert", 128, 3072, 768),
               ("bert", 128, 768, 3072), ("vit", 197, 768, 768), ("vit", 197, 2304, 768),
               ("vit", 197, 3072, 768), ("vit", 197, 768, 3072), ("llama", 128, 1024, 1024),
               ("llama", 128, 5632, 1024), ("llama", 128, 1024, 2816), ("swin", 3136, 288, 96),
               ("swin", 3136, 384, 96), ("swin", 3136, 96, 384), ("swin", 784, 576, 192),
               ("swin", 196, 1152, 384), ("swin", 49, 3072, 768), ("mm", 1024, 1024, 1024)]
SIMT_SWEEPS = [
    (f"{model}_m{m}_n{n}_k{k}_f32", dict(m=m, n=n, k=k),
     [(bm, bn, split) for bm, bn in ((64, 64), (128, 64), (128, 128)) if m > 64 or bm == 64
      for split in (1, 2, 3, 4, 6, 8, 12, 16) if k // 8 // split >= 8])
    for model, m, n, k in SIMT_SHAPES]

# Deeper K slices on the SIMT kernel (BK 16 and 32 instead of 8): (bm, bn, split, bk) for the
# transformer shapes, whose latency-bound blocks multiply 8-deep slices between loads.
SIMT_BK_SWEEPS = [
    (f"{model}_m{m}_n{n}_k{k}_f32", dict(m=m, n=n, k=k),
     [(bm, bn, split, bk) for bm, bn in ((64, 64), (128, 64), (128, 128)) if m > 64 or bm == 64
      for split in (1, 2, 4, 8) for bk in (16, 32) if k // bk // split >= 2])
    for model, m, n, k in SIMT_SHAPES if model in ("bert", "vit", "llama")]

# The Hopper kernel: (bm, bn, stages, split-K cluster, epilogue columns).
WG_SWEEPS = [
    ("mm4096_f16", dict(m=4096, n=4096, k=4096), [
        (128, 256, 4, 1, 32), (128, 256, 3, 1, 64), (128, 192, 4, 1, 64), (128, 128, 4, 1, 64),
        (128, 128, 5, 1, 64), (128, 128, 6, 1, 32)]),
    ("bert_n768_k768_f16", dict(m=128, n=768, k=768), [
        (128, 64, 3, 1, 64), (128, 64, 3, 2, 64), (128, 64, 2, 4, 64), (128, 64, 2, 6, 64),
        (128, 64, 2, 8, 64), (64, 64, 3, 2, 64), (64, 64, 3, 4, 64), (64, 64, 2, 6, 64),
        (128, 128, 2, 4, 128), (128, 128, 2, 8, 128), (64, 32, 3, 4, 32)]),
    ("bert_n2304_k768_f16", dict(m=128, n=2304, k=768), [
        (128, 64, 4, 2, 64), (128, 64, 3, 3, 64), (128, 128, 4, 2, 128), (128, 128, 3, 4, 128),
        (64, 64, 4, 2, 64)]),
    ("bert_n3072_k768_f16", dict(m=128, n=3072, k=768), [
        (128, 64, 6, 1, 64), (128, 64, 4, 2, 64), (128, 64, 3, 3, 64), (128, 128, 5, 1, 64),
        (128, 128, 4, 2, 128), (128, 128, 3, 4, 128), (128, 256, 3, 1, 32)]),
    ("bert_n768_k3072_f16", dict(m=128, n=768, k=3072), [
        (128, 64, 6, 2, 64), (128, 64, 4, 4, 64), (128, 64, 4, 8, 64), (64, 64, 6, 4, 64),
        (64, 64, 4, 6, 64), (128, 128, 4, 8, 128)]),
    ("b1_m16_n4096_k4096_f16", dict(m=16, n=4096, k=4096), [
        (64, 64, 6, 1, 64), (64, 64, 6, 2, 64), (64, 128, 6, 1, 64), (64, 32, 8, 1, 32)]),
    ("b1_m1_n768_k768_f16", dict(m=1, n=768, k=768), [(64, 64, 4, 2, 64), (64, 32, 4, 3, 32)]),
]
# Run 3: the hypotheses of run 2's analysis (NOTES.md, "Run 3: predictions"). These launch a
# block per unit (grid_limit 0: blocks beyond what fits wait for a slot; two 64x32 blocks share
# an SM), where run 2's sweeps inherited the heuristic's persistent grid.
WG_SWEEPS_RUN3 = [
    # H1: unsplit narrow tiles beat clusters at M = 128 (per-SM ingest ~55 GB/s, a cluster
    # ~2.5 us); the heuristic's picks first, then neighbours and run 2's best
    ("bert_n768_k768_f16", dict(m=128, n=768, k=768), [
        (64, 32, 8, 1, 32), (64, 64, 8, 1, 64), (64, 16, 8, 1, 16), (64, 32, 7, 2, 32),
        (128, 64, 6, 1, 64)]),
    ("bert_n2304_k768_f16", dict(m=128, n=2304, k=768), [
        (64, 64, 8, 1, 64), (64, 32, 8, 1, 32), (128, 64, 6, 1, 64), (64, 128, 8, 1, 64),
        (64, 64, 7, 2, 64)]),
    ("bert_n3072_k768_f16", dict(m=128, n=3072, k=768), [
        (64, 64, 8, 1, 64), (64, 32, 8, 1, 32), (64, 128, 8, 1, 64)]),
    ("bert_n768_k3072_f16", dict(m=128, n=768, k=3072), [
        (64, 64, 8, 4, 64), (64, 32, 8, 2, 32), (64, 32, 8, 4, 32), (64, 64, 8, 2, 64),
        (64, 16, 8, 4, 16), (64, 32, 8, 1, 32)]),
    # H2: ring depth at a fixed tile (12 K slices a block): 3, 5, 8 stages
    ("bert_n3072_k768_f16", dict(m=128, n=3072, k=768), [
        (64, 64, 3, 1, 64), (64, 64, 5, 1, 64)]),
    # H3: what a cluster costs at nearly no work (one tile, 4 K slices; 24 tiles, 4 K slices)
    ("probe_m64_n64_k256_f16", dict(m=64, n=64, k=256), [
        (64, 64, 5, 1, 64), (64, 64, 3, 2, 64), (64, 64, 2, 4, 64)]),
    ("probe_m128_n768_k256_f16", dict(m=128, n=768, k=256), [
        (64, 64, 5, 1, 64), (64, 64, 3, 2, 64), (64, 64, 2, 4, 64)]),
    # H5: mm1024 without a cluster
    ("mm1024_f16", dict(m=1024, n=1024, k=1024), [
        (64, 128, 8, 1, 64), (128, 64, 6, 1, 64), (128, 128, 5, 1, 64), (128, 128, 4, 2, 128)]),
]
WG_CONV_SWEEPS = [
    ("r50_56_64to256_k1s1_f16", (56, 64, 256, 1, 1), [
        (128, 64, 2, 1, 64), (128, 128, 2, 1, 64), (64, 64, 2, 1, 64), (64, 128, 2, 1, 64)]),
    ("r50_28_512to128_k1s1_f16", (28, 512, 128, 1, 1), [
        (64, 64, 4, 1, 64), (64, 64, 4, 2, 64), (128, 64, 4, 2, 64), (64, 32, 4, 2, 32)]),
    ("r50_7_2048to512_k1s1_f16", (7, 2048, 512, 1, 1), [
        (64, 64, 4, 2, 64), (64, 64, 4, 4, 64), (64, 64, 3, 8, 64), (64, 32, 4, 8, 32),
        (64, 128, 4, 4, 128)]),
]
# H6: pointwise convolutions at 14x14 and 7x7 (run 2: 0.27-0.6x) on the small-problem model's
# picks and neighbours; H7: two 64x32 blocks per SM with the maximum carveout (cv at the end).
WG_CONV_SWEEPS_RUN3 = [
    ("r50_14_1024to512_k1s1_f16", (14, 1024, 512, 1, 1), [
        (64, 32, 8, 1, 32), (64, 16, 8, 1, 16), (64, 64, 8, 2, 64), (64, 64, 8, 1, 64)]),
    ("r50_14_1024to256_k1s1_f16", (14, 1024, 256, 1, 1), [
        (64, 32, 8, 1, 32), (64, 16, 8, 1, 16), (64, 32, 8, 2, 32)]),
    ("r50_7_2048to512_k1s1_f16", (7, 2048, 512, 1, 1), [
        (64, 32, 8, 4, 32), (64, 16, 8, 4, 16), (64, 32, 8, 2, 32)]),
    ("r50_28_512to256_k1s1_f16", (28, 512, 256, 1, 1), [
        (64, 32, 8, 1, 32), (64, 64, 8, 1, 64), (128, 64, 6, 1, 64)]),
]
WG_CARVEOUT_SWEEPS = [
    ("bert_n2304_k768_f16", dict(m=128, n=2304, k=768), (64, 32, 8, 1, 32)),
    ("bert_n3072_k768_f16", dict(m=128, n=3072, k=768), (64, 32, 8, 1, 32)),
]
# The mma.sync kernel with the maximum shared-memory carveout (does the driver's default
# carveout keep blocks from sharing an SM?).
CARVEOUT_SWEEPS = [
    ("mm1024_f16", gemm, (1024, 1024, 1024)), ("bert_n768_k768_f16", gemm, (128, 768, 768)),
    ("r50_56_64to256_k1s1_f16", conv, (56, 64, 256, 1, 1)),
    ("r50_14_256to256_k3s1_f16", conv, (14, 256, 256, 3, 1)),
]


def config(cfg):
    bm, bn, bk, wm, wn, stages, split = cfg
    return {"bm": bm, "bn": bn, "bk": bk, "warps_m": wm, "warps_n": wn, "stages": stages,
            "split_k": split}


def wg_config(cfg, grid_limit=None):
    bm, bn, stages, split, epi = cfg
    c = {"kernel": "wgmma", "bm": bm, "bn": bn, "bk": 64, "stages": stages, "split_k": split,
         "epi_cols": epi}
    if grid_limit is not None:
        c["grid_limit"] = grid_limit
    return c


def sweep_cases():
    cases = []
    for base, dims, cfgs in SWEEPS:
        for cfg in cfgs:
            c = gemm(f"sweep_{base}_" + "_".join(map(str, cfg)), dims["m"], dims["n"], dims["k"],
                     "f16")
            c["config"] = config(cfg)
            cases.append(c)
    for base, dims, cfgs in SIMT_SWEEPS:
        for bm, bn, split in cfgs:
            c = gemm(f"sweep_simt_{base}_{bm}_{bn}_{split}", dims["m"], dims["n"], dims["k"],
                     "f32", "simt")
            c["config"] = config((bm, bn, 8, 0, 0, 2, split))
            cases.append(c)
    for base, dims, cfgs in SIMT_BK_SWEEPS:
        for bm, bn, split, bk in cfgs:
            c = gemm(f"sweep_simtbk_{base}_{bm}_{bn}_{split}_{bk}", dims["m"], dims["n"],
                     dims["k"], "f32", "simt")
            c["config"] = config((bm, bn, bk, 0, 0, 2, split))
            cases.append(c)
    for base, (h, c_, oc, k, s), cfgs in CONV_SWEEPS:
        for cfg in cfgs:
            c = conv(f"sweep_{base}_" + "_".join(map(str, cfg)), h, c_, oc, k, s, "f16")
            c["config"] = config(cfg)
            cases.append(c)
    for sweeps, grid in ((WG_SWEEPS, None), (WG_SWEEPS_RUN3, 0)):
        for base, dims, cfgs in sweeps:
            for cfg in cfgs:
                c = gemm(f"sweep_wg_{base}_" + "_".join(map(str, cfg)), dims["m"], dims["n"],
                         dims["k"], "f16")
                c["config"] = wg_config(cfg, grid)
                cases.append(c)
    for sweeps, grid in ((WG_CONV_SWEEPS, None), (WG_CONV_SWEEPS_RUN3, 0)):
        for base, (h, c_, oc, k, s), cfgs in sweeps:
            for cfg in cfgs:
                c = conv(f"sweep_wg_{base}_" + "_".join(map(str, cfg)), h, c_, oc, k, s, "f16")
                c["config"] = wg_config(cfg, grid)
                cases.append(c)
    for base, dims, cfg in WG_CARVEOUT_SWEEPS:
        c = gemm(f"sweep_cv_wg_{base}_" + "_".join(map(str, cfg)), dims["m"], dims["n"],
                 dims["k"], "f16")
        c["config"], c["carveout"] = wg_config(cfg, 0), 100
        cases.append(c)
    for base, make, dims in CARVEOUT_SWEEPS:
        c = make(f"sweep_cv_{base}", *dims, "f16")
        c["arch"], c["carveout"] = "sm_90", 100
        cases.append(c)
    return cases


def prepare(args):
    cases = select(all_cases(), args.cases)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "cases.json")
    with open(path, "w") as f:
        json.dump(cases, f, indent=1)
    command = [args.tool, "kit", path, args.out, "--arch", args.arch, "--sms", str(args.sms)]
    if args.watchdog:
        command += ["--watchdog", str(args.watchdog)]
    subprocess.run(command, check=True)
    # Options the kit tool does not know, for the runner.
    manifest_path = os.path.join(args.out, "manifest.json")
    manifest = json.load(open(manifest_path))
    by_name = {c["name"]: c for c in cases}
    for entry in manifest["kernels"]:
        if "carveout" in by_name[entry["name"]]:
            entry["carveout"] = by_name[entry["name"]]["carveout"]
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1)
    size = sum(os.path.getsize(os.path.join(args.out, f)) for f in os.listdir(args.out))
    print(f"kit: {len(cases)} kernels, {size / 2**20:.1f} MiB in {args.out}")
