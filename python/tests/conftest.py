"""Fixtures for the tensorc package tests: the seed models, compiled once per session with
tensorc.compile, and helpers to run the `tensorc` driver on the same data."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import tensorc

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(REPO, "models")
sys.path.insert(0, MODELS)
import safetensors_np  # noqa: E402


def model_path(name):
    path = os.path.join(MODELS, name + ".fx")
    if not os.path.exists(os.path.join(MODELS, name + ".safetensors")):
        subprocess.run([sys.executable, os.path.join(MODELS, "make_models.py")], check=True)
    return path


def random_input(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype)


def driver_run(target, inputs, tmp_path, *extra):
    """`tensorc run TARGET --inputs ... --outputs ...` on {name: array}; returns {name: array}."""
    inputs_path = str(tmp_path / "driver_inputs.safetensors")
    outputs_path = str(tmp_path / "driver_outputs.safetensors")
    safetensors_np.save(inputs_path, inputs)
    subprocess.run([tensorc.compiler_path(), "run", target, "--inputs", inputs_path, "--outputs",
                    outputs_path, *extra], check=True, stdout=subprocess.DEVNULL)
    return safetensors_np.load(outputs_path)


def manifest(bundle):
    with open(os.path.join(bundle, "manifest.json")) as f:
        return json.load(f)


@pytest.fixture(scope="session")
def mlp_bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("mlp") / "bundle"
    return tensorc.compile(model_path("mlp"), str(out))


@pytest.fixture(scope="session")
def mlp_library(tmp_path_factory):
    out = tmp_path_factory.mktemp("mlp_so") / "mlp.so"
    return tensorc.compile(model_path("mlp"), str(out), emit="so")


@pytest.fixture(scope="session")
def ln_silu_bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("ln_silu") / "bundle"
    return tensorc.compile(model_path("ln_silu"), str(out))
