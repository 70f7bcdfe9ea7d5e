#!/usr/bin/env python3
"""Random tensor-map specs for the differential sweep against the real driver.

Writes one `tmakit check` JSON line per spec to stdout. The mix is built to find the rules
the driver enforces beyond its documentation: most specs obey every documented rule with
values spread over the whole legal range (boundaries included); the rest break one rule
at a time, so a documented rule the driver does not enforce shows up too.

    gen_specs.py --count 200000 --seed 1 > specs.jsonl
    tmakit check --jsonl specs.jsonl --driver --json > verdicts.jsonl
"""
import argparse
import json
import random

DTYPES = {
    "UINT8": 1, "UINT16": 2, "UINT32": 4, "INT32": 4, "UINT64": 8, "INT64": 8,
    "FLOAT16": 2, "FLOAT32": 4, "FLOAT64": 8, "BFLOAT16": 2, "FLOAT32_FTZ": 4,
    "TFLOAT32": 4, "TFLOAT32_FTZ": 4,
}
FLOATS = {"FLOAT16", "FLOAT32", "FLOAT64", "BFLOAT16", "FLOAT32_FTZ", "TFLOAT32", "TFLOAT32_FTZ"}
SPAN = {"NONE": 0, "32B": 32, "64B": 64, "128B": 128}


def pick_dim(r):
    u = r.random()
    if u < 0.35:
        return r.randint(1, 300)
    if u < 0.55:
        return r.randint(1, 1 << 16)
    if u < 0.70:
        return 1 << r.randint(0, 32)
    if u < 0.80:
        return r.randint(1, 1 << 32)
    if u < 0.88:
        return (1 << 32) - r.randint(0, 3)
    return r.randint(1, 100000)


def pick_box(r, esize, interleave, swizzle, inner):
    if inner and interleave == "NONE":
        per16 = max(1, 16 // esize)
        limit = 256
        if swizzle != "NONE" and r.random() < 0.8:
            limit = min(limit, SPAN[swizzle] // esize)
        return per16 * r.randint(1, max(1, limit // per16))
    u = r.random()
    if u < 0.4:
        return r.randint(1, 256)
    if u < 0.7:
        return 1 << r.randint(0, 8)
    return r.randint(1, 32)


def nested_strides(r, dims, esize, align):
    strides = []
    prev = dims[0] * esize
    for d in range(1, len(dims)):
        s = -(-prev // align) * align
        if r.random() < 0.3:
            s += align * r.randint(0, 64)
        strides.append(s)
        prev = s * dims[d]
    return strides


def random_strides(r, n, align):
    out = []
    for _ in range(n):
        u = r.random()
        if u < 0.5:
            out.append(align * r.randint(1, 1 << 20))
        elif u < 0.7:
            out.append(align * r.randint(1, 64))
        elif u < 0.85:
            out.append(align << r.randint(0, 36))
        else:
            out.append(align * r.randint(1, (1 << 40) // align - 1))
    return out


def base_spec(r, kind):
    dtype = r.choice(list(DTYPES))
    esize = DTYPES[dtype]
    interleave = r.choices(["NONE", "16B", "32B"], [0.7, 0.15, 0.15])[0]
    swizzle = r.choice(["NONE", "32B", "64B", "128B"])
    if kind == "tiled":
        rank = r.randint(3, 5) if interleave != "NONE" else r.randint(1, 5)
    else:
        rank = r.randint(3, 5)
    align = 32 if interleave == "32B" else 16
    dims = [pick_dim(r) for _ in range(rank)]
    # Keep nested strides below 2^40 by shrinking outer dims when needed.
    for _ in range(40):
        strides = nested_strides(r, dims, esize, align)
        if not strides or strides[-1] < (1 << 40):
            break
        i = r.randrange(rank)
        dims[i] = max(1, dims[i] // 16)
    if r.random() < 0.25:
        strides = random_strides(r, rank - 1, align)
    spec = {
        "encode": kind, "dataType": dtype, "rank": rank,
        "globalAddress": align * r.randint(0, (1 << 44) // align) if r.random() < 0.9 else
        r.choice([0, 256, 1 << 47, (1 << 64) - 256, (1 << 63)]),
        "globalDim": dims, "globalStrides": strides,
        "elementStrides": [1] * rank if r.random() < 0.6 else [r.randint(1, 8) for _ in range(rank)],
        "interleave": interleave, "swizzle": swizzle,
        "l2Promotion": r.choice(["NONE", "64B", "128B", "256B"]),
        "oobFill": "NAN_REQUEST_ZERO_FMA" if dtype in FLOATS and r.random() < 0.3 else "NONE",
    }
    if kind == "tiled":
        spec["boxDim"] = [pick_box(r, esize, interleave, swizzle, d == 0) for d in range(rank)]
        if r.random() < 0.2:  # boxes as large as allowed
            spec["boxDim"] = [spec["boxDim"][0]] + [r.choice([128, 256, r.randint(1, 256)])
                                                    for _ in range(rank - 1)]
    else:
        limit = {3: 32768, 4: 128, 5: 16}[rank]
        lower, upper = [], []
        for _ in range(rank - 2):
            a = r.randint(-limit, limit - 1)
            b = r.randint(-limit, limit - 1)
            if r.random() < 0.5:
                a, b = min(a, b), max(a, b)
            lower.append(a)
            upper.append(b)
        spec["pixelBoxLowerCorner"] = lower
        spec["pixelBoxUpperCorner"] = upper
        per16 = max(1, 16 // esize)
        cmax = 256
        if swizzle != "NONE" and interleave == "NONE" and r.random() < 0.8:
            cmax = SPAN[swizzle] // esize
        spec["channelsPerPixel"] = (per16 * r.randint(1, max(1, cmax // per16))
                                    if r.random() < 0.7 else r.randint(1, 256))
        spec["pixelsPerColumn"] = r.choice([r.randint(1, 1024), 1 << r.randint(0, 10),
                                           r.randint(1, 64)])
    return spec


def mutate(r, s):
    """Break (or stretch) one thing."""
    rank = s["rank"]
    if rank == 0 or rank > 5 or len(s["globalDim"]) != rank:
        return s
    m = r.randrange(20)
    if m == 0:
        s["globalAddress"] += r.choice([1, 2, 4, 8, 16, 24])
    elif m == 1:
        s["globalDim"][r.randrange(rank)] = r.choice([0, (1 << 32) + 1, (1 << 32), 1 << 33])
    elif m == 2 and rank > 1:
        i = r.randrange(rank - 1)
        s["globalStrides"][i] = r.choice([s["globalStrides"][i] + r.choice([1, 4, 8, 16]), 0,
                                          1 << 40, (1 << 40) - 16, (1 << 40) + 16, 16, 32])
    elif m == 3 and "boxDim" in s:
        s["boxDim"][r.randrange(rank)] = r.choice([0, 257, 512, 256, 255, 1])
    elif m == 4 and "boxDim" in s:
        s["boxDim"][0] = r.randint(1, 256)
    elif m == 5:
        s["elementStrides"][r.randrange(rank)] = r.choice([0, 9, 16, 8, 7])
    elif m == 6:
        s["swizzle"] = r.choice(["32B", "64B", "128B"])
    elif m == 7:
        s["interleave"] = r.choice(["NONE", "16B", "32B"])
    elif m == 8:
        s["oobFill"] = "NAN_REQUEST_ZERO_FMA"
    elif m == 9:
        if s["encode"] == "tiled":
            new_rank = r.choice([0, 1, 2, 6])
        else:
            new_rank = r.choice([1, 2, 6])
        s["rank"] = new_rank
        for key in ("globalDim", "boxDim", "elementStrides"):
            if key in s:
                s[key] = (s[key] + [1] * 6)[:new_rank]
        s["globalStrides"] = (s["globalStrides"] + [1 << 20] * 6)[:max(0, new_rank - 1)]
        if s["encode"] == "im2col":
            n = max(0, new_rank - 2)
            s["pixelBoxLowerCorner"] = (s["pixelBoxLowerCorner"] + [0] * 6)[:n]
            s["pixelBoxUpperCorner"] = (s["pixelBoxUpperCorner"] + [0] * 6)[:n]
    elif m == 10 and s["encode"] == "im2col" and rank > 2:
        limit = {3: 32768, 4: 128, 5: 16}[rank]
        key = r.choice(["pixelBoxLowerCorner", "pixelBoxUpperCorner"])
        s[key][r.randrange(rank - 2)] = r.choice([limit, -limit - 1, limit - 1, -limit, 0])
    elif m == 11 and s["encode"] == "im2col":
        s["channelsPerPixel"] = r.choice([0, 257, 512, 1, 255, 256, r.randint(1, 256)])
    elif m == 12 and s["encode"] == "im2col":
        s["pixelsPerColumn"] = r.choice([0, 1025, 2048, 1024, 1])
    elif m == 13 and rank > 1:
        # strides not nested: shrink one below the extent of the dimension before it
        i = r.randrange(rank - 1)
        s["globalStrides"][i] = 16 * r.randint(1, 8)
    elif m == 14 and rank > 2:
        i = r.randrange(1, rank - 1)
        s["globalStrides"][i] = s["globalStrides"][i - 1]
    elif m == 15:
        s["globalDim"][r.randrange(rank)] = r.randint(1, 1 << 32)
    elif m == 16 and "boxDim" in s:
        # box larger than the tensor
        d = r.randrange(rank)
        s["globalDim"][d] = r.randint(1, max(1, s["boxDim"][d]))
    elif m == 17:
        s["globalAddress"] = r.choice([0, 16, (1 << 64) - 16, 1 << 56, 1 << 48])
    elif m == 18 and "boxDim" in s:
        s["boxDim"] = [r.randint(1, 256) for _ in range(rank)]
    else:
        s["elementStrides"] = [r.randint(1, 8) for _ in range(rank)]
    return s


def wild_spec(r):
    """Every field drawn independently over the whole range its type allows, as a user
    fuzzing the API would: most such specs break several rules at once."""
    kind = "tiled" if r.random() < 0.6 else "im2col"
    dtype = r.choice(list(DTYPES))
    rank = r.randint(1, 5) if kind == "tiled" else r.randint(3, 5)
    big = lambda: r.choice([r.randint(1, 1 << 32), r.randint(1, 4096), 1 << r.randint(0, 32)])
    spec = {
        "encode": kind, "dataType": dtype, "rank": rank,
        "globalAddress": r.choice([16 * r.randint(0, 1 << 40), 16 << r.randint(40, 59),
                                   (1 << r.randint(44, 63)) + r.choice([-16, 0, 16]),
                                   r.randint(0, (1 << 64) - 1)]) & ((1 << 64) - 1),
        "globalDim": [big() for _ in range(rank)],
        "globalStrides": [r.choice([16 * r.randint(1, 1 << 20), 16 * r.randint(1, (1 << 36) - 1),
                                    r.randint(1, 1 << 40), 16 << r.randint(0, 36)])
                          for _ in range(rank - 1)],
        "elementStrides": [r.choice([1, 1, 1, r.randint(1, 8)]) for _ in range(rank)],
        "interleave": r.choice(["NONE", "NONE", "16B", "32B"]),
        "swizzle": r.choice(["NONE", "32B", "64B", "128B"]),
        "l2Promotion": r.choice(["NONE", "64B", "128B", "256B"]),
        "oobFill": r.choice(["NONE", "NAN_REQUEST_ZERO_FMA"]),
    }
    if kind == "tiled":
        spec["boxDim"] = [r.choice([r.randint(1, 256), 1 << r.randint(0, 8), 8 * r.randint(1, 32)])
                          for _ in range(rank)]
    else:
        limit = {3: 32768, 4: 128, 5: 16}[rank]
        spec["pixelBoxLowerCorner"] = [r.randint(-limit, limit - 1) for _ in range(rank - 2)]
        spec["pixelBoxUpperCorner"] = [r.randint(-limit, limit - 1) for _ in range(rank - 2)]
        spec["channelsPerPixel"] = r.choice([r.randint(1, 256), 8 * r.randint(1, 32)])
        spec["pixelsPerColumn"] = r.choice([r.randint(1, 1024), 1 << r.randint(0, 10)])
    return spec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=100000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mutated", type=float, default=0.4, help="share of specs with one mutation")
    ap.add_argument("--wild", type=float, default=0.0, help="share of specs drawn by wild_spec")
    a = ap.parse_args()
    r = random.Random(a.seed)
    out = []
    for _ in range(a.count):
        if r.random() < a.wild:
            s = wild_spec(r)
            out.append(json.dumps(s, separators=(",", ":")))
            continue
        s = base_spec(r, "tiled" if r.random() < 0.7 else "im2col")
        if r.random() < a.mutated:
            s = mutate(r, s)
            if r.random() < 0.3:
                s = mutate(r, s)
        s["globalAddress"] &= (1 << 64) - 1
        out.append(json.dumps(s, separators=(",", ":")))
    print("\n".join(out))


if __name__ == "__main__":
    main()
