import sqlite3, sys, math, statistics as st
db = sqlite3.connect(sys.argv[1])
rows = db.execute("select p.workload, p.target, r.rep, s.t_s, s.iops, s.ramp from run r join point p on p.id=r.point_id join series s on s.run_id=r.id where r.status='ok' order by p.workload,p.target,r.rep,s.t_s").fetchall()
runs={}
for w,t,rep,ts,iops,ramp in rows:
    runs.setdefault((w,t),{}).setdefault(rep,[]).append((ts,iops,ramp))
for (w,t),reps in runs.items():
    within=[]; means=[]
    for rep,pts in sorted(reps.items()):
        v=[i for ts,i,r in pts if not r]
        within.append(st.stdev(v)/st.mean(v)); means.append(st.mean(v))
        if rep<2: print("   ",w,t,rep," ".join("%.0f"%i for ts,i,r in pts))
    n=len(v)
    print(w,t,"within-run per-s cv %.1f%% -> expected mean cv %.1f%%, between-run cv %.1f%% (n=%d s)"%(100*st.mean(within),100*st.mean(within)/math.sqrt(n),100*st.stdev(means)/st.mean(means),n))
