#!/usr/bin/env python3
"""Checks tools/export_fx.py: torch modules exported as FX-text, read back and run by tensorc,
compared with torch's own outputs (rtol 1e-3, atol 1e-5; f16 results 1e-2).

Three steps, each run when what it needs is there, so the work can be split between a machine
with torch and one with tensorc:
  1. always: export_fx.py's torch-free self-test (the writer and the ATen mapping), and the
     `writer` case: its sample program with random weights, written like an export, with a
     float64 numpy reference (so tensorc's parser is checked against the writer without torch);
  2. with torch (or --export-only): each case is exported into --out DIR as CASE.fx +
     CASE.safetensors, with its inputs (CASE.inputs.safetensors) and torch's outputs
     (CASE.expected.safetensors); a module using an unmapped op must fail naming the node;
  3. with --tensorc: each case in DIR is run by `tensorc run --interp` (and, with --compiled,
     compiled and run as a CPU bundle) and compared with torch's outputs.

    check_export_fx.py --tensorc build/tools/tensorc/tensorc [--compiled]    # torch + tensorc
    check_export_fx.py --export-only --out DIR       # on a machine with torch only: carry DIR
    check_export_fx.py --tensorc ... --from DIR      # later, where tensorc is
Prints `N passed, M failed`; exits non-zero on a failure.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "models"))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import export_fx  # noqa: E402
import safetensors_np  # noqa: E402


# ---- the cases (built only when torch is there) -------------------------------------------------

def cases(torch):
    nn, F = torch.nn, torch.nn.functional

    class Mlp(nn.Module):
        """A small MLP: 128 -> 512 -> 512 -> 64 with exact GELU."""

        def __init__(self):
            super().__init__()
            self.fc1, self.fc2, self.fc3 = nn.Linear(128, 512), nn.Linear(512, 512), \
                nn.Linear(512, 64)

        def forward(self, x):
            return self.fc3(F.gelu(self.fc2(F.gelu(self.fc1(x)))))

    class Seed003(nn.Module):
        """seed-003: 3 x [Linear 128, LayerNorm, SiLU]."""

        def __init__(self):
            super().__init__()
            self.fc = nn.ModuleList(nn.Linear(128, 128) for _ in range(3))
            self.ln = nn.ModuleList(nn.LayerNorm(128) for _ in range(3))

        def forward(self, x):
            for fc, ln in zip(self.fc, self.ln):
                x = F.silu(ln(fc(x)))
            return x

    class ConvBlock(nn.Module):
        """MobileNetV2-like: conv-BN-ReLU6, inverted residual (depthwise), pools, classifier."""

        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16),
                                      nn.ReLU6())
            self.expand = nn.Sequential(nn.Conv2d(16, 64, 1, bias=False), nn.BatchNorm2d(64),
                                        nn.ReLU6())
            self.dw = nn.Sequential(nn.Conv2d(64, 64, 3, 1, 1, groups=64, bias=False),
                                    nn.BatchNorm2d(64), nn.ReLU6())
            self.project = nn.Sequential(nn.Conv2d(64, 16, 1, bias=False), nn.BatchNorm2d(16))
            self.fc = nn.Linear(16, 10)
            for m in self.modules():  # non-trivial running statistics
                if isinstance(m, nn.BatchNorm2d):
                    m.running_mean.uniform_(-0.2, 0.2)
                    m.running_var.uniform_(0.8, 1.2)
                    m.weight.data.uniform_(0.8, 1.2)
                    m.bias.data.uniform_(-0.1, 0.1)

        def forward(self, x):
            x = self.stem(x)
            x = x + self.project(self.dw(self.expand(x)))
            x = F.max_pool2d(x, 3, 2, 1)
            x = F.avg_pool2d(x, 2)
            return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))

    class Gpt2Mini(nn.Module):
        """GPT-2 in small: token + learned position embeddings, pre-LN blocks with fused QKV,
        causal SDPA, tanh GELU, final LN, LM head tied to the token embedding."""

        def __init__(self, vocab=97, seq=16, hidden=64, heads=4, layers=2):
            super().__init__()
            self.heads, self.seq = heads, seq
            self.wte, self.wpe = nn.Embedding(vocab, hidden), nn.Embedding(seq, hidden)
            self.blocks = nn.ModuleList()
            for _ in range(layers):
                self.blocks.append(nn.ModuleDict(dict(
                    ln_1=nn.LayerNorm(hidden), c_attn=nn.Linear(hidden, 3 * hidden),
                    c_proj=nn.Linear(hidden, hidden), ln_2=nn.LayerNorm(hidden),
                    c_fc=nn.Linear(hidden, 4 * hidden), mlp_proj=nn.Linear(4 * hidden, hidden))))
            self.ln_f = nn.LayerNorm(hidden)
            self.register_buffer("positions", torch.arange(seq), persistent=False)

        def forward(self, ids):
            b, s = ids.shape
            x = self.wte(ids) + self.wpe(self.positions)
            for blk in self.blocks:
                q, k, v = blk["c_attn"](blk["ln_1"](x)).split(x.shape[-1], dim=2)
                q, k, v = (t.view(b, s, self.heads, -1).transpose(1, 2) for t in (q, k, v))
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                x = x + blk["c_proj"](a.transpose(1, 2).reshape(b, s, -1))
                x = x + blk["mlp_proj"](F.gelu(blk["c_fc"](blk["ln_2"](x)), approximate="tanh"))
            return F.linear(self.ln_f(x), self.wte.weight)

    class BertLayer(nn.Module):
        """A post-LN encoder layer with an additive mask input and explicit attention math."""

        def __init__(self, hidden=64, heads=4):
            super().__init__()
            self.heads = heads
            self.qkv = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(3))
            self.out, self.ln1 = nn.Linear(hidden, hidden), nn.LayerNorm(hidden, eps=1e-12)
            self.ff1, self.ff2 = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)
            self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

        def forward(self, x, mask):
            b, s, h = x.shape
            q, k, v = (lin(x).view(b, s, self.heads, -1).permute(0, 2, 1, 3) for lin in self.qkv)
            scores = q @ k.transpose(-1, -2) / (h // self.heads) ** 0.5 + mask
            ctx = (scores.softmax(-1) @ v).permute(0, 2, 1, 3).reshape(b, s, h)
            x = self.ln1(x + self.out(ctx))
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # SDPA, float mask
            x = x + y.transpose(1, 2).reshape(b, s, h)
            return self.ln2(x + self.ff2(F.gelu(self.ff1(x))))

    class Misc(nn.Module):
        """Odd corners: bool buffers, masked_fill, where with a number, cat/split/select/slice,
        reductions, a dtype cast, rsub, clamp, stack and var."""

        def __init__(self):
            super().__init__()
            self.register_buffer("mask", torch.tril(torch.ones(5, 5, dtype=torch.bool)))
            self.w = nn.Parameter(torch.randn(5, 5))

        def forward(self, x):
            s = (x @ x.transpose(-1, -2)) / 3
            s = s.masked_fill(~self.mask, float("-inf")).softmax(-1)
            w = torch.where(self.mask, s, -1e4) + self.w
            out = torch.cat([w.mean(-1), w.sum(-1), w.amax(-1)], -1)
            a, b = out.split([5, 10], -1)
            c = torch.stack([a, 1 - b[..., :5]], 1).clamp(-5e3, 5e3)
            return c.var(-1, keepdim=True), out.view(3, 3, 5)[:, 0, 1:3].to(torch.float16), x.sum(0)

    class Unsupported(nn.Module):
        def forward(self, x):
            return torch.flip(x, [1]) + 1

    g = torch.Generator().manual_seed(1)
    u = lambda *s: torch.rand(*s, generator=g) * 2 - 1  # noqa: E731
    mask = torch.zeros(2, 1, 1, 8)
    mask[..., 6:] = -10000.0
    # name -> (module class, example inputs, dynamic batch)
    return {
        "mlp": (Mlp, (u(4, 128),), True),
        "seed003": (Seed003, (u(8, 128),), True),
        "convblock": (ConvBlock, (u(2, 3, 32, 32),), True),
        "gpt2_mini": (Gpt2Mini, (torch.randint(0, 97, (2, 16), generator=g),), True),
        "bert_layer": (BertLayer, (u(2, 8, 64), mask), True),
        "misc": (Misc, (u(3, 5, 4),), False),
        "unsupported": (Unsupported, (u(2, 3),), False),
    }


# Expected failures: case -> text the error must contain.
EXPECTED_ERRORS = {"unsupported": "node 'flip' (aten.flip.default)"}


def writer_case(out_dir):
    """Step 1's case: export_fx's sample program (random weights) and numpy's outputs."""
    rng = np.random.default_rng(3)
    weights = {"p_fc_weight": rng.uniform(-1, 1, (4, 8)).astype(np.float32),
               "p_fc_bias": rng.uniform(-1, 1, 4).astype(np.float32)}
    x = rng.uniform(-2, 2, (5, 8)).astype(np.float32)
    export_fx.write(export_fx.sample_program(weights), os.path.join(out_dir, "writer.fx"))
    safetensors_np.save(os.path.join(out_dir, "writer.inputs.safetensors"), {"x": x})
    want = export_fx.sample_reference(weights, x).astype(np.float32)
    safetensors_np.save(os.path.join(out_dir, "writer.expected.safetensors"), {"out0": want})


def export_cases(out_dir, only):
    """Step 2: exports each case into out_dir; returns (passed, failures)."""
    import torch

    passed, failures = 0, []
    os.makedirs(out_dir, exist_ok=True)
    for name, (cls, inputs, dynamic) in cases(torch).items():
        if only and name not in only:
            continue
        torch.manual_seed(0)
        module = cls().eval()
        shapes = tuple({0: torch.export.Dim("batch", min=1, max=1024)} for _ in inputs) \
            if dynamic else None
        path = os.path.join(out_dir, f"{name}.fx")
        try:
            with torch.no_grad():
                ep = torch.export.export(module, inputs, dynamic_shapes=shapes)
                program = export_fx.describe_exported_program(ep, [f"check_export_fx.py: {name}"])
                export_fx.write(program, path)
                expected = module(*inputs)
        except export_fx.ExportError as error:
            want = EXPECTED_ERRORS.get(name)
            if want and want in str(error):
                print(f"{name}: export failed as expected: {error}")
                passed += 1
            else:
                failures.append(f"{name}: export failed: {error}")
            continue
        if name in EXPECTED_ERRORS:
            failures.append(f"{name}: export should have failed with '{EXPECTED_ERRORS[name]}'")
            continue
        expected = expected if isinstance(expected, tuple) else (expected,)
        user = [p.name for p in program.placeholders if p.data is None]
        safetensors_np.save(os.path.join(out_dir, f"{name}.inputs.safetensors"),
                            {n: t.numpy() for n, t in zip(user, inputs)})
        safetensors_np.save(os.path.join(out_dir, f"{name}.expected.safetensors"),
                            {f"out{i}": t.detach().numpy() for i, t in enumerate(expected)})
        print(f"{name}: exported ({len(program.nodes)} ATen nodes)")
        passed += 1
    with open(os.path.join(out_dir, "torch_version.json"), "w") as f:
        json.dump({"torch": torch.__version__}, f)
    return passed, failures


def compare(label, got, want):
    rtol, atol = (1e-2, 1e-2) if want.dtype == np.float16 else (1e-3, 1e-5)
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"{label}: got {got.dtype}{list(got.shape)}, want {want.dtype}{list(want.shape)}"
    g, w = got.astype(np.float64), want.astype(np.float64)
    err = np.abs(g - w)
    bad = ~((err <= atol + rtol * np.abs(w)) | (np.isinf(w) & (g == w)))
    print(f"  {label}: max abs err {np.nanmax(err) if err.size else 0:.3g}, {int(bad.sum())} of "
          f"{bad.size} outside rtol {rtol:g} / atol {atol:g}")
    return f"{label}: mismatch" if bad.any() else None


def output_names(fx_path):
    """The value names of the .fx file's return line, in order."""
    text = open(fx_path).read()
    line = [ln for ln in text.splitlines() if ln.strip().startswith("return")][-1]
    return re.findall(r"%(\w+)", line)


def run_cases(tensorc, out_dir, compiled, only):
    """Step 3: runs every exported case in out_dir with tensorc; returns (passed, failures)."""
    passed, failures = 0, []
    names = sorted(f[:-len(".expected.safetensors")] for f in os.listdir(out_dir)
                   if f.endswith(".expected.safetensors"))
    for name in names:
        if only and name not in only:
            continue
        fx = os.path.join(out_dir, f"{name}.fx")
        inputs = os.path.join(out_dir, f"{name}.inputs.safetensors")
        expected = list(safetensors_np.load(
            os.path.join(out_dir, f"{name}.expected.safetensors")).values())
        outs = output_names(fx)
        with tempfile.TemporaryDirectory() as tmp:
            outputs = os.path.join(tmp, "out.safetensors")
            runs = [("interp", [tensorc, "run", fx, "--interp"])]
            if compiled:
                bundle = os.path.join(tmp, "bundle")
                proc = subprocess.run([tensorc, "compile", fx, "-o", bundle],
                                      capture_output=True, text=True)
                if proc.returncode != 0:
                    failures.append(f"{name}: tensorc compile failed: {proc.stderr.strip()}")
                else:
                    runs.append(("compiled", [tensorc, "run", bundle]))
            for label, command in runs:
                proc = subprocess.run(command + ["--inputs", inputs, "--outputs", outputs],
                                      capture_output=True, text=True)
                if proc.returncode != 0:
                    failures.append(f"{name} {label}: {proc.stderr.strip()}")
                    continue
                got = safetensors_np.load(outputs)
                problems = [compare(f"{name} {label} {o}", got[o], want)
                            for o, want in zip(outs, expected)]
                problems = [p for p in problems if p]
                failures.extend(problems)
                passed += not problems
    return passed, failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensorc", help="tensorc binary (step 3)")
    parser.add_argument("--compiled", action="store_true", help="also compile and run bundles")
    parser.add_argument("--out", help="where the exported cases go (default: a temporary dir)")
    parser.add_argument("--from", dest="from_dir", help="run cases exported earlier into DIR")
    parser.add_argument("--export-only", action="store_true", help="steps 1 and 2 only")
    parser.add_argument("--case", action="append", help="only these cases")
    args = parser.parse_args()

    passed, failures = 0, []
    if export_fx.self_test() == 0:
        passed += 1
    else:
        failures.append("export_fx self-test")

    tmp = None
    out_dir = args.from_dir or args.out
    if out_dir is None:
        tmp = tempfile.mkdtemp(prefix="export_fx_")
        out_dir = tmp
    try:
        if not args.from_dir:
            os.makedirs(out_dir, exist_ok=True)
            writer_case(out_dir)
            try:
                import torch  # noqa: F401
            except ImportError:
                if args.export_only:
                    print("check_export_fx: --export-only needs torch", file=sys.stderr)
                    return 2
                print("check_export_fx: torch is not installed: export cases skipped")
            else:
                p, f = export_cases(out_dir, args.case)
                passed, failures = passed + p, failures + f
        if args.tensorc and not args.export_only:
            p, f = run_cases(args.tensorc, out_dir, args.compiled, args.case)
            passed, failures = passed + p, failures + f
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    for failure in failures:
        print(f"FAIL {failure}")
    print(f"{passed} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
