"""Per-round spread of each comparison in this run (iops.txt: target workload rep IOPS,
from the results database): the log ratio's standard deviation against the question's
baseline, beside each side's own run-to-run spread. Run: python3 spread.py"""

import collections
import math
import statistics as st
from pathlib import Path

d: dict[tuple[str, str], dict[int, float]] = collections.defaultdict(dict)
for line in (Path(__file__).parent / "iops.txt").read_text().splitlines():
    t, w, rep, iops = line.split()
    d[(t, w)][int(rep)] = float(iops)
base = {"btrfs": "btrfs-raid0", "xfs": "xfs-4k", "ext4": "ext4-4k"}
for (t, w), v in sorted(d.items()):
    b = base[t.split("-")[0]]
    cv = st.stdev([math.log(x) for x in v.values()])
    if t == b:
        print(f"{t:18} {w:14} baseline      n={len(v)} run-to-run {cv:.3f}")
        continue
    bv = d[(b, w)]
    lr = [math.log(v[r] / bv[r]) for r in v if r in bv]
    sd = st.stdev(lr)
    print(f"{t:18} {w:14} per-round log ratio sd {sd:.3f} (n={len(lr)}), run-to-run {cv:.3f}")
