"""The tensor-parallel example on two GPUs against the one-GPU layer (torchrun)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu

EXAMPLE = Path(__file__).with_name("tp_fp8_linear.py")


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                    reason="needs two GPUs")
@pytest.mark.parametrize("tokens", [1, 37, 256])
def test_two_ranks_equal_the_one_gpu_layer(tokens):
    torchrun = shutil.which("torchrun")
    command = ([torchrun] if torchrun else [sys.executable, "-m", "torch.distributed.run"]) + [
        "--standalone", "--nproc-per-node", "2", str(EXAMPLE), "--tokens", str(tokens),
        "--check"]
    env = dict(os.environ, NCCL_NVLS_ENABLE="0")
    run = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    verdicts = re.findall(r"rank (\d)/2: y \((\d+), (\d+)\) .*? both (within|NOT within)",
                          run.stdout)
    assert sorted(v[0] for v in verdicts) == ["0", "1"], run.stdout
    assert all(v[1] == str(tokens) and v[3] == "within" for v in verdicts), run.stdout
