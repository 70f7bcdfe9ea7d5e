"""Shared fixtures: the `tmakit` CLI to compare against, and the GPU marker's skip rule."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _find_cli():
    # TMAKIT_CLI (scripts/test sets it to its build's binary), else a build folder's, else PATH.
    explicit = os.environ.get("TMAKIT_CLI")
    if explicit:
        return explicit
    for candidate in sorted(REPO.glob("build*/tools/tmakit")):
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("tmakit")


@pytest.fixture(scope="session")
def cli():
    """Runs the `tmakit` CLI: cli(args, input bytes) -> CompletedProcess (text output)."""
    path = _find_cli()
    if path is None:
        pytest.skip("no tmakit CLI: build it (scripts/build) or set TMAKIT_CLI")

    def run(args, data=b""):
        result = subprocess.run([path, *args], input=data, capture_output=True, timeout=600)
        return subprocess.CompletedProcess(result.args, result.returncode,
                                           result.stdout.decode(), result.stderr.decode())

    return run


def _gpu_reason():
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA GPU"
    if torch.cuda.get_device_capability() != (9, 0):
        return f"tmakit's kernels need sm_90a (H100/H200), this is {torch.cuda.get_device_name()}"
    return None


def pytest_collection_modifyitems(config, items):
    reason = None
    checked = False
    for item in items:
        if "gpu" in item.keywords:
            if not checked:
                reason, checked = _gpu_reason(), True
            if reason:
                item.add_marker(pytest.mark.skip(reason=f"gpu: {reason}"))


@pytest.fixture(scope="session")
def fake_cuda_views():
    """Skips a test of fake CUDA tensors (FakeTensorMode) where this torch cannot view one
    without a CUDA driver: torch 2.5 starts CUDA to index a fake CUDA tensor (x[None],
    x[:, ::2]), which on a machine without a driver raises before any tmakit code runs."""
    torch = pytest.importorskip("torch")
    from torch._subclasses.fake_tensor import FakeTensorMode

    try:
        with FakeTensorMode():
            x = torch.empty(4, 4, device="cuda")
            x[None], x[:, ::2]
    except RuntimeError as error:
        pytest.skip(f"this torch ({torch.__version__}) starts CUDA to view a fake CUDA tensor, "
                    f"and there is no driver here: {str(error).splitlines()[0]}")
