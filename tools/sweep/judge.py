#!/usr/bin/env python3
"""Joins specs with `tmakit check --driver --json` verdicts into corpus lines.

Each corpus line is the spec with one more key, "driver": "ok" or the driver's error name,
so a corpus file is itself valid `tmakit check` input (unknown keys are ignored).

    judge.py specs.jsonl verdicts.jsonl > corpus.jsonl
"""
import json
import sys


def main():
    specs, verdicts = sys.argv[1], sys.argv[2]
    with open(specs) as fs, open(verdicts) as fv:
        for spec_line, verdict_line in zip(fs, fv):
            v = json.loads(verdict_line)
            if "driver" not in v:  # malformed spec: the driver never saw it
                continue
            spec = json.loads(spec_line)
            spec["driver"] = v["driver"]
            print(json.dumps(spec, separators=(",", ":")))


if __name__ == "__main__":
    main()
