import sqlite3, sys, math, statistics as st, json
db = sqlite3.connect(sys.argv[1])
rows = db.execute("select p.workload, p.target, r.rep, m.iops, r.engine_json from run r join point p on p.id=r.point_id join metric m on m.run_id=r.id where r.status='ok' order by p.workload, r.rep").fetchall()
d = {}
ser = {}
for w,t,rep,iops,ej in rows:
    d.setdefault(w,{}).setdefault(t,{})[rep]=iops
    j = json.loads(ej)
    s = j.get("series") or {}
    ser[(w,t,rep)] = s
pairs = {"btrfs-raid1":"btrfs-raid0","xfs-64k":"xfs-4k","btrfs-raid5":"btrfs-raid0","btrfs-raid10":"btrfs-raid0","btrfs-raid5-wide":"btrfs-raid0","xfs-8k":"xfs-4k","ext4-bigalloc-16k":"ext4-4k","ext4-bigalloc-64k":"ext4-4k"}
for w, ts in d.items():
    for t, reps in ts.items():
        v=[reps[k] for k in sorted(reps)]
        print(w, t, "cv %.1f%%" % (100*st.stdev(v)/st.mean(v)), " ".join("%.0f"%x for x in v))
    for t,b in pairs.items():
        if t in ts and b in ts:
            lr=[math.log(ts[t][k]/ts[b][k]) for k in sorted(ts[t]) if k in ts[b]]
            n=len(lr); s=st.stdev(lr)
            print("  ", w, t, "/", b, "ratios", " ".join("%.3f"%math.exp(x) for x in lr), "sd %.3f"%s, "n",n)
