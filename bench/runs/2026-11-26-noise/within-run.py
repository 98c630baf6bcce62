"""Per run: the spread of its measured seconds against the spread of the runs' means (is
the noise within a run or between runs?). Usage: python within-run.py RESULTS.db"""

import math
import sqlite3
import statistics as st
import sys

db = sqlite3.connect(sys.argv[1])
rows = db.execute(
    "SELECT p.workload, p.target, r.rep, s.t_s, s.iops, s.ramp FROM run r"
    " JOIN point p ON p.id = r.point_id JOIN series s ON s.run_id = r.id"
    " WHERE r.status = 'ok' ORDER BY p.workload, p.target, r.rep, s.t_s"
).fetchall()
runs: dict[tuple[str, str], dict[int, list[tuple[float, float, int]]]] = {}
for w, t, rep, ts, iops, ramp in rows:
    runs.setdefault((w, t), {}).setdefault(rep, []).append((ts, iops, ramp))
for (w, t), reps in runs.items():
    within, means = [], []
    n = 0
    for rep, pts in sorted(reps.items()):
        v = [i for _, i, r in pts if not r]
        n = len(v)
        within.append(st.stdev(v) / st.mean(v))
        means.append(st.mean(v))
        if rep < 2:
            print("   ", w, t, rep, " ".join(f"{i:.0f}" for _, i, _ in pts))
    cv = st.mean(within)
    print(
        w,
        t,
        f"within-run per-s cv {100 * cv:.1f}% -> expected mean cv "
        f"{100 * cv / math.sqrt(n):.1f}%, between-run cv "
        f"{100 * st.stdev(means) / st.mean(means):.1f}% (n={n} s)",
    )
