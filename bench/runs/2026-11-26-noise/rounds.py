"""Per round: each target's IOPS, its coefficient of variation over the rounds, and each
target's ratio to its baseline round by round with the sd of their logs.
Usage: python rounds.py RESULTS.db"""

import math
import sqlite3
import statistics as st
import sys

db = sqlite3.connect(sys.argv[1])
rows = db.execute(
    "SELECT p.workload, p.target, r.rep, m.iops FROM run r"
    " JOIN point p ON p.id = r.point_id JOIN metric m ON m.run_id = r.id"
    " WHERE r.status = 'ok' ORDER BY p.workload, r.rep"
).fetchall()
d: dict[str, dict[str, dict[int, float]]] = {}
for w, t, rep, iops in rows:
    d.setdefault(w, {}).setdefault(t, {})[rep] = iops
pairs = {"btrfs-raid1": "btrfs-raid0", "xfs-64k": "xfs-4k"}
for w, ts in d.items():
    for t, reps in ts.items():
        v = [reps[k] for k in sorted(reps)]
        cv = 100 * st.stdev(v) / st.mean(v)
        print(w, t, f"cv {cv:.1f}%", " ".join(f"{x:.0f}" for x in v))
    for t, b in pairs.items():
        if t in ts and b in ts:
            lr = [math.log(ts[t][k] / ts[b][k]) for k in sorted(ts[t]) if k in ts[b]]
            ratios = " ".join(f"{math.exp(x):.3f}" for x in lr)
            print("  ", w, t, "/", b, "ratios", ratios, f"sd {st.stdev(lr):.3f}", "n", len(lr))
