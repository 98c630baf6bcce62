import random, sqlite3
con = sqlite3.connect("db/app.sqlite")
con.execute("PRAGMA journal_mode=WAL")
con.execute("PRAGMA synchronous=FULL")
con.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, k INTEGER, v BLOB)")
r = random.Random(7)
for txn in range(300):
    with con:
        for _ in range(10):
            con.execute("INSERT INTO t (k, v) VALUES (?, ?)", (r.randrange(10**6), r.randbytes(200)))
        con.execute("SELECT count(*) FROM t WHERE k < ?", (r.randrange(10**6),)).fetchone()
con.close()
