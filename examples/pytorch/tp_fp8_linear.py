"""A tensor-parallel FP8 linear layer on torch.distributed (NCCL) with tmakit.gemm_fp8.

Column-parallel: the weight W (out_features x in_features) is split by rows (output
features) into one shard per rank; each rank quantises the input once, multiplies it by its
shard with tmakit.gemm_fp8 and the ranks all-gather the column blocks of Y = X W^T. tmakit
stays a kernel library: the distribution is PyTorch's.

    torchrun --nproc-per-node 2 examples/pytorch/tp_fp8_linear.py [--tokens M] [--check]

--check compares the gathered result on every rank with the same layer computed whole on
one GPU (the same quantised operands) and with the exact product of those operands: each
output column comes from the same row of W and the same fp8 input, but the GEMM plans its
tiles and the order of its partial sums by shape, so the two may differ within the error the
GEMM documents (include/tmakit/kernels/gemm.hpp): one bf16 rounding plus 2^-10 of
sum |x w| per element. Exit 0 when every rank's result and the one-GPU result are within
that bound of the exact product.
"""

from __future__ import annotations

import argparse
import os
import sys

# NOTE: NCCL's NVLink SHARP (multicast) path is not used here; keep it off where the host's
# GPUs are shared.
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import tmakit  # noqa: E402

FP8 = torch.float8_e4m3fn
FP8_MAX = torch.finfo(FP8).max  # 448


def quantize(x: torch.Tensor):
    """Per-tensor scaling: x ~ scale * q with q in e4m3's range."""
    scale = x.abs().amax().float().clamp(min=1e-12) / FP8_MAX
    return (x / scale).to(FP8), scale


class ColumnParallelFP8Linear(torch.nn.Module):
    """y = x W^T with W's rows split over the ranks of `group`; every rank returns all of y."""

    def __init__(self, weight: torch.Tensor, group=None):
        super().__init__()
        self.group = group
        self.world = dist.get_world_size(group)
        rank = dist.get_rank(group)
        out_features, in_features = weight.shape
        if out_features % self.world:
            raise ValueError(f"weight: {out_features} output features do not split over "
                             f"{self.world} ranks")
        if in_features % 16:
            raise ValueError(f"weight: in_features = {in_features} is not a multiple of 16 "
                             f"(the FP8 GEMM's K)")
        # NOTE: one scale for the whole weight, agreed by every rank (the amax is reduced), so
        # the shards are exactly the rows of the whole quantised weight.
        amax = weight.abs().amax().float()
        dist.all_reduce(amax, op=dist.ReduceOp.MAX, group=group)
        self.weight_scale = float(amax.clamp(min=1e-12) / FP8_MAX)
        shard = weight.chunk(self.world, dim=0)[rank]
        self.register_buffer("weight_fp8", (shard / self.weight_scale).to(FP8).contiguous())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xq, x_scale = quantize(x)
        local = tmakit.gemm_fp8(xq, self.weight_fp8, scale_a=float(x_scale),
                                scale_b=self.weight_scale)           # (M, N / world)
        gathered = torch.empty((self.world, *local.shape), dtype=local.dtype, device=local.device)
        dist.all_gather_into_tensor(gathered, local, group=self.group)
        return gathered.permute(1, 0, 2).reshape(local.shape[0], -1)  # (M, N)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=256, help="rows of x (M)")
    parser.add_argument("--in-features", type=int, default=4096)
    parser.add_argument("--out-features", type=int, default=8192)
    parser.add_argument("--check", action="store_true",
                        help="compare with the whole layer on one GPU")
    args = parser.parse_args()

    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    if torch.cuda.device_count() < max(world_size, local_rank + 1):
        print(f"tp_fp8_linear: needs a CUDA GPU per rank ({world_size} ranks; this machine has "
              f"{torch.cuda.device_count()}): torchrun --nproc-per-node 2 "
              f"examples/pytorch/tp_fp8_linear.py", file=sys.stderr)
        return 1
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))
    rank, world = dist.get_rank(), dist.get_world_size()

    # Every rank builds the same x and W from one seed (a real model loads its shard).
    gen = torch.Generator(device="cuda").manual_seed(1234)
    x = torch.randn(args.tokens, args.in_features, device="cuda", generator=gen)
    weight = torch.randn(args.out_features, args.in_features, device="cuda", generator=gen) * 0.02

    layer = ColumnParallelFP8Linear(weight)
    y = layer(x)
    torch.cuda.synchronize()
    status = 0
    if args.check:
        # The same layer whole, on this GPU alone: the full quantised weight, one GEMM.
        xq, x_scale = quantize(x)
        wq = (weight / layer.weight_scale).to(FP8)
        scale = float(x_scale) * layer.weight_scale
        whole = tmakit.gemm_fp8(xq, wq, scale_a=float(x_scale), scale_b=layer.weight_scale)
        exact = (xq.double() @ wq.double().T) * scale
        magnitude = (xq.double().abs() @ wq.double().abs().T) * scale
        bound = 2.0 ** -8 * exact.abs() + 2.0 ** -11 * magnitude
        excess = max(((r.double() - exact).abs() - bound).max().item() for r in (y, whole))
        ok = y.shape == whole.shape and excess <= 0
        same = torch.equal(y, whole)
        verdict = torch.tensor([0 if ok else 1], device="cuda")
        dist.all_reduce(verdict)
        status = 0 if verdict.item() == 0 else 1
        # NOTE: one write per line, so that the ranks' lines do not interleave on a shared pipe.
        diff = (y.double() - whole.double()).abs().max().item()
        sys.stdout.write(f"rank {rank}/{world}: y {tuple(y.shape)} "
                         f"{'equal to' if same else 'differs from'} the one-GPU layer (max "
                         f"|diff| {diff:.3g}); both {'within' if ok else 'NOT within'} the "
                         f"GEMM's error bound of the exact product (worst margin "
                         f"{-excess:.3g})\n")
        sys.stdout.flush()
    elif rank == 0:
        print(f"y {tuple(y.shape)} {y.dtype} on {world} ranks")
    dist.destroy_process_group()
    return status


if __name__ == "__main__":
    sys.exit(main())
