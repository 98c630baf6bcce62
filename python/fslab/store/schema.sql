-- fslab results database, schema version 14 (PRAGMA user_version; versions 4 and 5
-- changed no table: they re-derive run_value for metrics the catalog gained; version 6
-- added `look`, version 7 `integrity`, version 8 `rank`, version 9 `run_fact.disturbers`,
-- version 10 `study.design` and `run_fact.rep`, version 11 `run_fact.foreign_cpu_pct`,
-- version 12 `run_fact.workload_write_bytes` and `run_fact.dirty_rise_bytes`, version 13
-- `run.engine_shape`, version 14 `origin` and `run.origin_id`).
-- The readable source of truth; migrations.py moves older files forward.
-- Column names are the study's words: `threads`, `iodepth`, `bs`, ... (one word per concept).

CREATE TABLE study (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    path        TEXT,               -- the study file as given
    toml        TEXT NOT NULL,      -- its text, so results carry what produced them
    created_at  REAL NOT NULL,      -- unix seconds
    design      TEXT                -- 'blocked': a group's targets ran back to back in each
                                    -- round, compared per round; NULL: independent (older)
) STRICT;

-- The machine a run ran on: kernel, CPU, memory, tool versions.
CREATE TABLE environment (
    id          INTEGER PRIMARY KEY,
    hash        TEXT NOT NULL UNIQUE,
    kernel      TEXT NOT NULL,
    cpu_model   TEXT NOT NULL,
    cores       INTEGER NOT NULL,
    mem_bytes   INTEGER NOT NULL,
    tools       TEXT NOT NULL       -- JSON {"fio": "3.33", "mkfs.ext4": "1.47.0", ...}
) STRICT;

-- One point of the plan: a target x a workload x one value per sweep axis.
-- `id` is a hash of the normalized configuration: the resume key.
CREATE TABLE point (
    id          TEXT PRIMARY KEY,
    study_id    INTEGER NOT NULL REFERENCES study(id),
    seq         INTEGER NOT NULL,   -- order in the plan
    target      TEXT NOT NULL,      -- target name
    workload    TEXT NOT NULL,      -- workload name
    kind        TEXT NOT NULL,      -- block | files | oltp | ...
    target_spec TEXT NOT NULL,      -- JSON of the target as written (normalized)
    params      TEXT NOT NULL       -- JSON {"rw": "randread", "bs": 8192, "threads": 4, ...}
) STRICT;

-- One repetition of a point.
CREATE TABLE run (
    id          INTEGER PRIMARY KEY,
    point_id    TEXT NOT NULL REFERENCES point(id),
    rep         INTEGER NOT NULL,   -- 0-based repetition
    status      TEXT NOT NULL CHECK (status IN ('running', 'ok', 'failed', 'interrupted')),
    started_at  REAL NOT NULL,
    ended_at    REAL,
    environment_id INTEGER REFERENCES environment(id),
    effective   TEXT,               -- JSON: mkfs/mount options in effect, tool output
    engine_json TEXT,               -- what the run's kind stores of it: engine_shape says
    runtime_s   REAL,
    error       TEXT,
    engine_shape TEXT,              -- report | reports | pgbench | integrity | fio_file (v13)
    origin_id   INTEGER,            -- origin(id): where an imported run came from (v14;
                                    -- NULL: measured into this database)
    UNIQUE (point_id, rep)
) STRICT;

-- Where imported runs came from (version 14, `fslab import`; fslab/store/merge.py): the
-- source database or bundle, the label its targets were given (`ext4@LABEL`; NULL: none),
-- when. A blocked design pairs runs by round within one origin, never across.
CREATE TABLE origin (
    id          INTEGER PRIMARY KEY,
    label       TEXT,
    source      TEXT NOT NULL,
    imported_at REAL NOT NULL
) STRICT;

-- Per-operation results of a run (op: the engine's, `read`, `write`, `copy`, `txn`, ...).
CREATE TABLE metric (
    run_id      INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    op          TEXT NOT NULL,
    ios         INTEGER NOT NULL,
    bytes       INTEGER NOT NULL,
    iops        REAL NOT NULL,
    bw_bytes    REAL NOT NULL,
    lat_min_ns  INTEGER NOT NULL,
    lat_mean_ns REAL NOT NULL,
    lat_stdev_ns REAL NOT NULL,
    lat_max_ns  INTEGER NOT NULL,
    lat_p50_ns  INTEGER NOT NULL,
    lat_p90_ns  INTEGER NOT NULL,
    lat_p95_ns  INTEGER NOT NULL,
    lat_p99_ns  INTEGER NOT NULL,
    lat_p999_ns INTEGER NOT NULL,
    lat_p9999_ns INTEGER NOT NULL,
    hist        TEXT NOT NULL,      -- HdrHistogram V2+DEFLATE base64, mergeable
    PRIMARY KEY (run_id, op)
) STRICT;

-- The engine's time series (one row per interval and op).
CREATE TABLE series (
    run_id      INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    t_s         REAL NOT NULL,
    op          TEXT NOT NULL,
    ramp        INTEGER NOT NULL,
    iops        REAL NOT NULL,
    bw_bytes    REAL NOT NULL,
    lat_mean_ns REAL NOT NULL,
    lat_p99_ns  INTEGER NOT NULL,
    PRIMARY KEY (run_id, t_s, op)
) STRICT;

-- Every side effect, written BEFORE it happens, so a killed run can be undone
-- (`fslab cleanup`). state: pending (about to happen, may have), done, undone.
CREATE TABLE journal (
    id          INTEGER PRIMARY KEY,
    run_id      INTEGER REFERENCES run(id),
    action      TEXT NOT NULL,      -- image | loop | mkfs | mount | mkdir | fscrypt_key | postgres | inject
    subject     TEXT NOT NULL,      -- the path or device it concerns
    details     TEXT NOT NULL,      -- JSON: what undo needs (e.g. the image behind a loop device)
    state       TEXT NOT NULL CHECK (state IN ('pending', 'done', 'undone')),
    created_at  REAL NOT NULL
) STRICT;

-- What the machine did during a run (version 2): the sampler's series as JSON, and the
-- metrics derived from it, one row each (device bytes, write and space amplification,
-- peaks, CPU, page cache, contamination). Names are the sampler's summary keys.
CREATE TABLE telemetry (
    run_id      INTEGER PRIMARY KEY REFERENCES run(id) ON DELETE CASCADE,
    interval_s  REAL NOT NULL,
    data        TEXT NOT NULL
) STRICT;

CREATE TABLE run_metric (
    run_id      INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    value       REAL NOT NULL,
    PRIMARY KEY (run_id, name)
) STRICT;

-- What compare needs of each completed run, derived when it is stored (version 3;
-- fslab/store/derive.py says how, and rebuilds them from the tables above): its compared
-- values packed per run, and the facts its warnings are judged by.
CREATE TABLE value_layout (
    id          INTEGER PRIMARY KEY,
    keys        TEXT NOT NULL UNIQUE    -- JSON [[op, metric], ...]: what run_value.data holds
) STRICT;
CREATE TABLE run_value (
    run_id      INTEGER PRIMARY KEY REFERENCES run(id) ON DELETE CASCADE,
    layout_id   INTEGER NOT NULL REFERENCES value_layout(id),
    data        BLOB NOT NULL           -- float64 little-endian, one per layout key
) STRICT;
CREATE TABLE run_fact (
    run_id      INTEGER PRIMARY KEY REFERENCES run(id) ON DELETE CASCADE,
    runtime_s   REAL,                   -- run.runtime_s, here so compare never reads `run`
    intervals   INTEGER NOT NULL,
    contaminated_intervals INTEGER NOT NULL,
    reasons     TEXT NOT NULL,          -- comma-separated: foreign_cpu, steal, memory_pressure
    available_min_bytes REAL,
    workload_read_bytes REAL,
    device_read_bytes REAL,
    trend_drift REAL,
    trend_p     REAL,
    engine_warnings TEXT NOT NULL,      -- JSON [[kind, op or null, message, hint or null], ...]
    limits      TEXT NOT NULL,          -- JSON {check: max}: what a verdict judged by (ms)
    disturbers  TEXT NOT NULL DEFAULT '[]', -- JSON [[name, pid, cpu_s, cpu_pct], ...] (version 9):
                                        -- the foreign processes in its contaminated intervals
    rep         INTEGER,                -- run.rep, here so compare never reads `run` (version 10):
                                        -- its round or pass, what a blocked design pairs by
    foreign_cpu_pct REAL,               -- CPU other processes used over the run, % of one CPU
                                        -- (version 11): what a blocked design judges by
    workload_write_bytes REAL,          -- what a block or application run wrote, measured
                                        -- part (version 12)
    dirty_rise_bytes REAL               -- the largest rise of dirty page-cache memory over the
                                        -- measured part (version 12; NULL: not measured so)
) STRICT;

-- Adaptive repetition (version 6): each look after a round, from the study's `repeat.min`
-- on, with every target's headline verdict against its baseline at the look's level, so
-- the path by which each point stopped repeating can be audited (`fslab.stats.sequential`).
CREATE TABLE look (
    study_id    INTEGER NOT NULL REFERENCES study(id),
    round       INTEGER NOT NULL,   -- rounds done at this look (1-based)
    point_id    TEXT NOT NULL REFERENCES point(id),
    op          TEXT NOT NULL,      -- the headline row's operation ('' for a row-less point)
    level       REAL NOT NULL,      -- alpha of each look (fslab.stats.sequential.look_level)
    seed        INTEGER NOT NULL,   -- the rounds' random order
    runs        INTEGER NOT NULL,   -- completed runs of the point at this look
    verdict     TEXT,      -- better, worse, equivalent, inconclusive, none (NULL: baseline)
    ratio       REAL,
    low         REAL,
    high        REAL,
    state       TEXT NOT NULL,      -- open | decided | pooled | bounded | undecidable | futile | alone | budget: the comparison's (the baseline's row: its targets')
    at          REAL NOT NULL,      -- unix seconds
    PRIMARY KEY (study_id, round, point_id, op)
) STRICT;

-- Integrity runs (version 7, `kind = "integrity"`): what the file system did with one
-- injected fault (fslab.kinds.integrity; docs/integrity.md).
CREATE TABLE integrity (
    run_id      INTEGER PRIMARY KEY REFERENCES run(id) ON DELETE CASCADE,
    fault       TEXT NOT NULL,      -- bitflip | zero_block | random_block | lost_write | misdirected | torn
    region      TEXT NOT NULL,      -- data | metadata
    outcome     TEXT NOT NULL,      -- repaired | detected | silent_wrong | silent_stale | unaffected
    errno       INTEGER,            -- the first error the read after the fault met (NULL: none)
    repaired_by TEXT,               -- read | scrub (NULL: not repaired)
    detail      TEXT NOT NULL       -- JSON: injections, each read's block counts, check, kernel lines
) STRICT;

-- Multi-host runs (version 8, `fslab run --hosts`): each rank's own results beside the
-- aggregate the run's rows hold (fslab.rank_merge; docs/multihost.md). The ranks' evenness
-- (start skew, span, imbalance, first and last done) is in run_metric as `ranks.*`.
CREATE TABLE rank (
    run_id      INTEGER NOT NULL REFERENCES run(id) ON DELETE CASCADE,
    rank        INTEGER NOT NULL,
    host        TEXT NOT NULL,
    status      TEXT NOT NULL,      -- the engine's: ok | failed | interrupted
    start_unix_s REAL NOT NULL,     -- measured start (after the ramp)
    runtime_s   REAL NOT NULL,
    ios         INTEGER NOT NULL,
    bytes       INTEGER NOT NULL,
    report      TEXT NOT NULL,      -- the rank's engine report, as it printed it
    PRIMARY KEY (run_id, rank)
) STRICT;

-- (point_id, status) covers the study's runs and their status: no read of `run` itself,
-- whose rows hold the engine's whole report (version 3; it was point_id alone).
CREATE INDEX run_point ON run(point_id, status);
CREATE INDEX journal_open ON journal(state) WHERE state != 'undone';
