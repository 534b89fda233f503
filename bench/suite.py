"""The real-model suite: models written by others (torchvision, Hugging Face transformers built from
configs with random weights, no hub), exported with torch.onnx's dynamo exporter.

One line per model in SUITE: a name, a builder returning (module, example inputs) and a kind.
Builders are deterministic (seeded on the CPU), so the process that exports a model and the one
that times PyTorch on it hold the same weights (`weights_digest` checks it).

    python3 bench/suite.py list
    python3 bench/suite.py export resnet50 f16 OUT_DIR [--batch N]   # OUT_DIR/model.onnx + inputs.safetensors

bench/real.py (GPU: against eager PyTorch, torch.compile and reduce-overhead) and bench/run.py
--suite real (CPU: against onnxruntime) use it.
"""
import hashlib
import json
import os
import sys
import time

SEQ = 128      # tokens per sequence for the language models
IMAGE = 224    # image side for the vision models
BATCH = 1      # the default; `export ... --batch N` and `bench/real.py prepare --batch N` change it
OPSET = 20


def torchvision_model(name, **kwargs):
    def build(torch, batch):
        import torchvision
        module = getattr(torchvision.models, name)(weights=None, **kwargs)
        for layer in module.modules():  # ViT's head starts at zero: every logit would be 0
            if isinstance(layer, torch.nn.Linear) and not layer.weight.any():
                torch.nn.init.normal_(layer.weight, std=0.02)
        calibrate_batch_norm(torch, module)
        return module, {"x": torch.randn(batch, 3, IMAGE, IMAGE)}
    return build


def calibrate_batch_norm(torch, module, passes=2):
    """Sets batch-norm statistics from random images, as training would: with the freshly
    initialized ones (mean 0, variance 1) activations shrink layer after layer until MobileNetV3's
    and EfficientNet's outputs are ~1e-15 in f32 and 0 in f16, which any result would match."""
    norms = [m for m in module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # a plain average over the passes
    module.train()
    with torch.no_grad():
        for _ in range(passes):
            module(torch.randn(4, 3, IMAGE, IMAGE))


def hf_model(model_class, config_class, mask=False, **config):
    """A transformers model from a config (random weights); input_ids, plus an attention_mask
    with the last quarter of positions padded when `mask`."""
    def build(torch, batch):
        import transformers
        cfg = getattr(transformers, config_class)(**config)
        module = getattr(transformers, model_class)(cfg)
        inputs = {"input_ids": torch.randint(0, cfg.vocab_size, (batch, SEQ))}
        if mask:
            attention = torch.ones(batch, SEQ, dtype=torch.int64)
            attention[:, SEQ - SEQ // 4:] = 0
            inputs["attention_mask"] = attention
        return module, inputs
    return build


# name: (builder, kind). Add a model in a line.
SUITE = {
    "resnet50": (torchvision_model("resnet50"), "vision"),
    "resnext50": (torchvision_model("resnext50_32x4d"), "vision"),
    "mobilenet_v3": (torchvision_model("mobilenet_v3_large"), "vision"),
    "efficientnet_b0": (torchvision_model("efficientnet_b0"), "vision"),
    "regnet_y": (torchvision_model("regnet_y_800mf"), "vision"),
    "densenet121": (torchvision_model("densenet121"), "vision"),
    "convnext_t": (torchvision_model("convnext_tiny"), "vision"),
    "vit_b16": (torchvision_model("vit_b_16"), "vision"),
    "swin_t": (torchvision_model("swin_t"), "vision"),
    "bert": (hf_model("BertModel", "BertConfig", mask=True), "text"),
    "distilbert": (hf_model("DistilBertModel", "DistilBertConfig", mask=True), "text"),
    "gpt2": (hf_model("GPT2Model", "GPT2Config"), "text"),
    "llama": (hf_model("LlamaModel", "LlamaConfig", hidden_size=1024, intermediate_size=2816,
                       num_hidden_layers=4, num_attention_heads=16, num_key_value_heads=4,
                       vocab_size=32000), "text"),
    "t5_encoder": (hf_model("T5EncoderModel", "T5Config", d_model=512, d_ff=2048, num_layers=6,
                            num_heads=8), "text"),
}
DTYPES = ("f32", "f16")


class Wrapper:
    """Returns the model's main output as one tensor (logits, or the last hidden state)."""

    @staticmethod
    def make(torch, module):
        class Main(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, *args):
                out = self.inner(*args)
                if hasattr(out, "last_hidden_state"):
                    return out.last_hidden_state
                if isinstance(out, (tuple, list)):
                    return out[0]
                return out
        return Main(module)


def torch_dtype(torch, dtype):
    return {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dtype]


def build(torch, name, dtype, seed=0, batch=BATCH):
    """(module in eval mode and `dtype` on the CPU, ordered dict of CPU input tensors with
    `batch` images or sequences). The weights do not depend on the batch."""
    if name not in SUITE:
        raise SystemExit(f"suite: unknown model '{name}' (models: {', '.join(SUITE)})")
    torch.manual_seed(seed)
    module, inputs = SUITE[name][0](torch, batch)
    module = Wrapper.make(torch, module).eval().to(torch_dtype(torch, dtype))
    inputs = {k: (v.to(torch_dtype(torch, dtype)) if v.is_floating_point() else v)
              for k, v in inputs.items()}
    return module, inputs


def weights_digest(torch, module):
    """sha256 over the state dict (names, dtypes, bytes), to check two builds agree."""
    digest = hashlib.sha256()
    for key, value in sorted(module.state_dict().items()):
        digest.update(key.encode())
        tensor = value.detach().cpu().contiguous()
        digest.update(str(tensor.dtype).encode())
        digest.update(tensor.view(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def export(name, dtype, out_dir, batch=BATCH):
    """Exports one model at a fixed batch to OUT_DIR/model.onnx (dynamo exporter, opset OPSET)
    and writes its inputs as OUT_DIR/inputs.safetensors under the ONNX graph's input names;
    returns a record."""
    import torch
    import onnx
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                    "models"))
    import safetensors_np

    os.makedirs(out_dir, exist_ok=True)
    module, inputs = build(torch, name, dtype, batch=batch)
    start = time.perf_counter()
    path = os.path.join(out_dir, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(module, tuple(inputs.values()), path, dynamo=True,
                          opset_version=OPSET, external_data=False, verbose=False)
    export_s = time.perf_counter() - start
    graph = onnx.load(path, load_external_data=False).graph
    initializers = {i.name for i in graph.initializer}
    names = [i.name for i in graph.input if i.name not in initializers]
    if len(names) != len(inputs):
        raise RuntimeError(f"{name}: the exported graph has inputs {names}, the model "
                           f"{list(inputs)}")
    arrays = {n: v.numpy() for n, v in zip(names, inputs.values())}
    safetensors_np.save(os.path.join(out_dir, "inputs.safetensors"), arrays)
    record = {"model": name, "dtype": dtype, "batch": batch, "export_s": export_s,
              "inputs": names,
              "torch": torch.__version__, "weights_sha256": weights_digest(torch, module)}
    with open(os.path.join(out_dir, "export.json"), "w") as f:
        json.dump(record, f, indent=1)
    return record


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "list":
        for name, (_, kind) in SUITE.items():
            print(f"{name}\t{kind}")
        return 0
    args = sys.argv[1:]
    batch = BATCH
    if len(args) == 6 and args[0] == "export" and args[4] == "--batch" and args[5].isdigit() \
            and int(args[5]) >= 1:
        batch, args = int(args[5]), args[:4]
    if len(args) == 4 and args[0] == "export":
        record = export(args[1], args[2], args[3], batch)
        print(json.dumps(record))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
