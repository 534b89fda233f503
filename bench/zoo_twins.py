"""Torch twins of the zoo models (models/make_zoo.py) for bench/gpu.py: modules with the same
state-dict names, built from the same arrays, so torch runs exactly the model tensorc compiled;
`check-twins` checks each against onnxruntime."""
import numpy as np


def twin_modules(torch):
    """Module classes mirroring models/make_zoo.py, with the same state-dict names."""
    nn, F = torch.nn, torch.nn.functional

    def container(**modules):
        m = nn.Module()
        for name, module in modules.items():
            m.add_module(name, module)
        return m

    def conv_bn(cin, cout, k, stride, fold, groups=1):
        """(conv, bn): the conv carries a bias and the bn is the identity when folded."""
        conv = nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=fold)
        return conv, nn.Identity() if fold else nn.BatchNorm2d(cout, eps=1e-5)

    class Bottleneck(nn.Module):
        def __init__(self, cin, width, stride, fold):
            super().__init__()
            self.conv1, self.bn1 = conv_bn(cin, width, 1, 1, fold)
            self.conv2, self.bn2 = conv_bn(width, width, 3, stride, fold)
            self.conv3, self.bn3 = conv_bn(width, width * 4, 1, 1, fold)
            self.downsample = None
            if stride != 1 or cin != width * 4:
                self.downsample = nn.Sequential(*conv_bn(cin, width * 4, 1, stride, fold))

        def forward(self, x):
            y = F.relu(self.bn1(self.conv1(x)))
            y = F.relu(self.bn2(self.conv2(y)))
            y = self.bn3(self.conv3(y))
            return F.relu(y + (x if self.downsample is None else self.downsample(x)))

    class ResNet50(nn.Module):
        """torchvision's resnet50 layout (v1.5)."""

        def __init__(self, fold=True):
            import make_zoo
            super().__init__()
            self.conv1, self.bn1 = conv_bn(3, 64, 7, 2, fold)
            cin = 64
            for stage, (width, blocks) in enumerate(make_zoo.RESNET50_STAGES):
                layer = []
                for block in range(blocks):
                    layer.append(Bottleneck(cin, width, 2 if block == 0 and stage > 0 else 1,
                                            fold))
                    cin = width * 4
                self.add_module(f"layer{stage + 1}", nn.Sequential(*layer))
            self.fc = nn.Linear(2048, 1000)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, 2, 1)
            for i in range(1, 5):
                x = getattr(self, f"layer{i}")(x)
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))

    def conv_bn_relu6(cin, cout, k, stride, fold, groups=1):
        return nn.Sequential(*conv_bn(cin, cout, k, stride, fold, groups), nn.ReLU6())

    class InvertedResidual(nn.Module):
        def __init__(self, cin, cout, stride, t, fold):
            super().__init__()
            hidden = cin * t
            layers = [conv_bn_relu6(cin, hidden, 1, 1, fold)] if t != 1 else []
            layers.append(conv_bn_relu6(hidden, hidden, 3, stride, fold, groups=hidden))
            layers.extend(conv_bn(hidden, cout, 1, 1, fold))
            self.conv = nn.Sequential(*layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            return x + self.conv(x) if self.residual else self.conv(x)

    class MobileNetV2(nn.Module):
        """torchvision's mobilenet_v2 layout (width 1.0)."""

        def __init__(self, fold=True):
            import make_zoo
            super().__init__()
            cin = make_zoo.MOBILENETV2_STEM
            features = [conv_bn_relu6(3, cin, 3, 2, fold)]
            for t, c, n, s in make_zoo.MOBILENETV2_SETTINGS:
                for i in range(n):
                    features.append(InvertedResidual(cin, c, s if i == 0 else 1, t, fold))
                    cin = c
            features.append(conv_bn_relu6(cin, make_zoo.MOBILENETV2_LAST, 1, 1, fold))
            self.features = nn.Sequential(*features)
            self.classifier = nn.Sequential(nn.Dropout(0.2),
                                            nn.Linear(make_zoo.MOBILENETV2_LAST, 1000))

        def forward(self, x):
            x = F.adaptive_avg_pool2d(self.features(x), 1)
            return self.classifier(torch.flatten(x, 1))

    class Dense(nn.Module):
        """x @ W + b with W [in, out], one addmm (Hugging Face GPT-2's Conv1D)."""

        def __init__(self, n_in, n_out):
            super().__init__()
            self.weight = nn.Parameter(torch.empty(n_in, n_out))
            self.bias = nn.Parameter(torch.empty(n_out))

        def forward(self, x):
            y = torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight)
            return y.view(*x.shape[:-1], y.shape[-1])

    def heads(x, n):  # [B, S, H] -> [B, n, S, H / n]
        return x.view(x.shape[0], x.shape[1], n, -1).transpose(1, 2)

    def merge(x):  # [B, n, S, d] -> [B, S, n * d]
        return x.transpose(1, 2).reshape(x.shape[0], x.shape[2], -1)

    class Bert(nn.Module):
        """make_zoo's BERT-base encoder (post-LN; input: embeddings and an additive mask)."""

        def __init__(self):
            import make_zoo as z
            super().__init__()
            ln = lambda: nn.LayerNorm(z.HIDDEN, eps=1e-12)  # noqa: E731
            self.embeddings = container(LayerNorm=ln())
            self.encoder = container(layer=nn.ModuleList(container(
                attention=container(
                    self=container(query=Dense(z.HIDDEN, z.HIDDEN), key=Dense(z.HIDDEN, z.HIDDEN),
                                   value=Dense(z.HIDDEN, z.HIDDEN)),
                    output=container(dense=Dense(z.HIDDEN, z.HIDDEN), LayerNorm=ln())),
                intermediate=container(dense=Dense(z.HIDDEN, z.FFN)),
                output=container(dense=Dense(z.FFN, z.HIDDEN), LayerNorm=ln()))
                for _ in range(z.LAYERS)))
            self.n_heads = z.HEADS

        def forward(self, x, mask):
            x = self.embeddings.LayerNorm(x)
            for layer in self.encoder.layer:
                att = layer.attention
                q, k, v = (heads(m(x), self.n_heads) for m in
                           (att.self.query, att.self.key, att.self.value))
                ctx = merge(F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
                x = att.output.LayerNorm(x + att.output.dense(ctx))
                h = F.gelu(layer.intermediate.dense(x))
                x = layer.output.LayerNorm(x + layer.output.dense(h))
            return x

    class Gpt2(nn.Module):
        """GPT-2 small, Hugging Face's layout; the LM head is tied to wte."""

        def __init__(self):
            import make_zoo as z
            super().__init__()
            self.wte = nn.Embedding(z.VOCAB, z.HIDDEN)
            self.wpe = nn.Embedding(z.POSITIONS, z.HIDDEN)
            self.h = nn.ModuleList(container(
                ln_1=nn.LayerNorm(z.HIDDEN), ln_2=nn.LayerNorm(z.HIDDEN),
                attn=container(c_attn=Dense(z.HIDDEN, 3 * z.HIDDEN),
                               c_proj=Dense(z.HIDDEN, z.HIDDEN)),
                mlp=container(c_fc=Dense(z.HIDDEN, z.FFN), c_proj=Dense(z.FFN, z.HIDDEN)))
                for _ in range(z.LAYERS))
            self.ln_f = nn.LayerNorm(z.HIDDEN)
            self.n_heads, self.hidden = z.HEADS, z.HIDDEN

        def forward(self, ids):
            positions = torch.arange(ids.shape[1], device=ids.device)
            x = self.wte(ids) + self.wpe(positions)
            for block in self.h:
                q, k, v = block.attn.c_attn(block.ln_1(x)).split(self.hidden, dim=2)
                a = F.scaled_dot_product_attention(heads(q, self.n_heads), heads(k, self.n_heads),
                                                   heads(v, self.n_heads), is_causal=True)
                x = x + block.attn.c_proj(merge(a))
                m = F.gelu(block.mlp.c_fc(block.ln_2(x)), approximate="tanh")
                x = x + block.mlp.c_proj(m)
            return F.linear(self.ln_f(x), self.wte.weight)

    return {"resnet50": ResNet50, "mobilenetv2": MobileNetV2, "bert": Bert, "gpt2": Gpt2}


def make_twin(torch, model, arrays, fold=True):
    """The torch twin of a zoo model with make_zoo's arrays loaded (strictly: every state-dict
    entry from an array of the same name; every named array, i.e. one with a '.', used)."""
    cls = twin_modules(torch)[model]
    module = cls(fold) if model in ("resnet50", "mobilenetv2") else cls()
    state = module.state_dict()
    wanted = {k for k in state if not k.endswith("num_batches_tracked")}
    missing = sorted(wanted - set(arrays))
    unused = sorted(k for k in set(arrays) - wanted if "." in k)
    if missing or unused:
        raise RuntimeError(f"{model} twin: state-dict entries without an array: {missing[:8]}; "
                           f"arrays the twin does not use: {unused[:8]}")
    loaded = {k: torch.from_numpy(np.ascontiguousarray(arrays[k])) for k in wanted}
    for k in state:
        if k.endswith("num_batches_tracked"):
            loaded[k] = state[k]
    module.load_state_dict(loaded, strict=True)
    return module.eval()


def check_twins(args, batch):
    """Each twin on the CPU against onnxruntime running the make_zoo model (f32, `batch`)."""
    import onnxruntime as ort
    import torch
    import make_zoo

    failures = 0
    for model in [m for m in args.models.split(",") if m]:
        fold = model in make_zoo.CONVNETS
        proto, arrays = make_zoo.generate(model, "f32", fold_bn=fold)
        session = ort.InferenceSession(proto.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        del proto
        feeds = make_zoo.example_inputs(model, batch, seed=0)
        want = session.run(None, feeds)[0]
        del session
        twin = make_twin(torch, model, arrays, fold)
        with torch.no_grad():
            got = twin(*[torch.from_numpy(v) for v in feeds.values()]).numpy()
        err = float(np.abs(got.astype(np.float64) - want).max())
        scale = float(np.abs(want).max())
        ok = got.shape == want.shape and err <= 1e-3 * max(1.0, scale)
        failures += not ok
        print(f"{model}: twin vs onnxruntime: output {list(got.shape)}, max |diff| {err:.3g} "
              f"(max |value| {scale:.3g}) -> {'ok' if ok else 'MISMATCH'}")
    print(f"{len(args.models.split(',')) - failures} passed, {failures} failed")
    return 1 if failures else 0
