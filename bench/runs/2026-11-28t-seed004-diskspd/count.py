#!/usr/bin/env python3
"""Seed 004's slice, counted from `fslab compare --format json` files: per file the
comparisons (headline IOPS row of each point, each target but its question's baseline)
decided (better, worse, equivalent) and bounded within +-10% (inconclusive, interval in
0.90-1.10); across files, any verdict that reversed (better in one, worse in another) or
changed between equivalent and better/worse."""

import json
import sys
from itertools import combinations
from pathlib import Path


def verdicts(path):
    doc = json.loads(Path(path).read_text())
    out = {}
    for g in doc["groups"]:
        for row in g["rows"]:
            if row["metric"] != "iops":
                continue
            for t, v, lo, hi in zip(
                doc["targets"], row["verdict"], row["ratio_low"], row["ratio_high"], strict=True
            ):
                if v in (None, "baseline"):
                    continue
                out[(g["workload"], row["op"], t)] = (v, lo, hi)
    return out


runs = {p: verdicts(p) for p in sys.argv[1:]}
for p, vs in runs.items():
    decided = [k for k, (v, _, _) in vs.items() if v in ("better", "worse", "equivalent")]
    bounded = [
        k
        for k, (v, lo, hi) in vs.items()
        if v == "inconclusive" and lo is not None and lo >= 0.9 and hi <= 1.1
    ]
    print(
        f"{p}: {len(vs)} comparisons, {len(decided)} decided, {len(bounded)} more bounded "
        f"within +-10%"
    )
    for k in sorted(decided):
        v, lo, hi = vs[k]
        print(f"  decided {k}: {v} [{lo:.3f}-{hi:.3f}]")
for (a, va), (b, vb) in combinations(runs.items(), 2):
    for k in va.keys() & vb.keys():
        x, y = va[k][0], vb[k][0]
        if {x, y} == {"better", "worse"}:
            print(f"REVERSED {k}: {x} in {a}, {y} in {b}")
        elif {x, y} <= {"better", "worse", "equivalent"} and x != y:
            print(f"changed {k}: {x} in {a}, {y} in {b}")
