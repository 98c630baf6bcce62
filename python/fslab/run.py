"""Runs a plan: for each (repetition, point) provision the target, run the point's kind's
run step (`fslab.kinds`: drop caches, run the engine or a program under telemetry,
store), tear down. Every side effect is journaled before it happens (by
`fslab.targets`, into the results database); finished runs are committed at once, so a
re-run resumes where the last one stopped.

Interruption: a first SIGINT/SIGTERM while the engine runs is passed to it, it reports
what ran, the run is stored as `interrupted`, the target is torn down and the study
stops. Outside the engine the same signal stops at the next safe place. During teardown
signals are held off until it is complete; `fslab cleanup` undoes what a SIGKILL left.
"""

from __future__ import annotations

import math
import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from fslab import mpi_rank
from fslab.catalog import entry
from fslab.cleanup import undo_open
from fslab.compare import CompareError, compare_results, disturbers_of
from fslab.engine import EngineRun, Report, SeriesPoint, find_engine, judge_steady, run_job
from fslab.environment import describe
from fslab.errors import EngineError, ExitStatus, FslabError, JobError
from fslab.procs import handles_signals
from fslab.rank_merge import with_steady
from fslab.report import findings
from fslab.report.format import disturbed_by
from fslab.report.job_summary import live_summary, stored_summary
from fslab.stats import sequential
from fslab.stats.disturbance import disturbed_in_block
from fslab.stats.sequential import look_level
from fslab.stats.warnings import RunFacts
from fslab.store.db import ResultsWriter, StoreFull
from fslab.store.derive import ENGINE_WRITE_OPS
from fslab.store.query import ResultsError, study_results
from fslab.study.plan import Plan, Point
from fslab.targets.fstoken import Made
from fslab.targets.journal import JournalRef, make_dir, undo_refs
from fslab.targets.provision import Provisioned, provision, teardown
from fslab.targets.spec import TargetSpec
from fslab.telemetry import Sampler, Telemetry, devices_under, statvfs_used_bytes


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


class Interrupted(FslabError):
    exit_status = ExitStatus.INTERRUPTED


@dataclass
class Outcome:
    ok: int = 0
    failed: int = 0
    skipped: int = 0
    interrupted: bool = False
    failures: list[str] = field(default_factory=list)
    rounds: int = 0
    """An adaptive study's rounds run (or found done)."""
    undecided: list[str] = field(default_factory=list)
    """An adaptive study's points still undecided at the end (labels): at `max`, or
    when the budget was spent (`budget_spent`)."""
    settled: int = 0
    """An adaptive study's points that stopped repeating because they were decided (or
    cannot be)."""
    by_family: int = 0
    """Of those, the points undecided alone whose family's pooled interval decided them
    (`fslab.stats.sequential.State.POOLED`)."""
    bounded: int = 0
    """Of those, the points left undecided but bounded within the study's `repeat.bound`
    (`fslab.stats.sequential.State.BOUNDED`), not counting the family's."""
    futile: list[str] = field(default_factory=list)
    """An adaptive study's points that stopped early without a verdict: `max` runs would
    likely not decide them at the noise seen (`fslab.stats.sequential.futile`)."""
    budget_spent: bool = False
    disturbed: list[RunFacts] = field(default_factory=list)
    """Runs other work disturbed: not counted, measured again (who: their `disturbers`)."""
    shared: list[RunFacts] = field(default_factory=list)
    """Runs other work shared the machine with alike across their round (a blocked
    design): counted (who: their `disturbers`)."""


@dataclass
class Progress:
    """What the runner tells whoever shows progress (the CLI's rich bar)."""

    start: Callable[[int, int], None] = lambda total, done: None
    point: Callable[[str], None] = lambda label: None
    live: Callable[[str], None] = lambda line: None
    advance: Callable[[str, str], None] = lambda status, result: None
    """A run ended: its status and what it stored (`read 52,000 IOPS 203 MiB/s`; empty
    when it stored nothing)."""


class _Signals:
    """SIGINT/SIGTERM outside the engine: remember, stop at the next safe place."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.holding = False

    def handler(self, signum: int, _frame: FrameType | None) -> None:
        self.received = signum
        if not self.holding:
            raise KeyboardInterrupt

    @contextmanager
    def installed(self) -> Iterator[None]:
        if not handles_signals():
            yield  # a rank: a signal ends it at once, and its guard undoes what it made
            return
        old = {s: signal.signal(s, self.handler) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for s, h in old.items():
                signal.signal(s, h)

    @contextmanager
    def held(self) -> Iterator[None]:
        """Teardown must finish: signals only mark that the user wants to stop."""
        was, self.holding = self.holding, True
        try:
            yield
        finally:
            self.holding = was


class Watch:
    """The telemetry sampler around one engine run, and the space the run used."""

    def __init__(
        self, prov: Provisioned, interval_s: float, *, also: Provisioned | None = None,
        space_at: Path | None = None, pids: Callable[[], set[int]] | None = None,
    ) -> None:  # fmt: skip
        # `also`: a second target the run touches (a copy's source); `space_at`: where
        # the run stores new data (default: the target's work directory).
        self.workdir = space_at or prov.workdir
        self.used_before = statvfs_used_bytes(self.workdir, sync=True)
        # Our own process and its children (the engine) are the workload.
        me = os.getpid()
        self.interval_s = interval_s
        devices = [*prov.devices, *(also.devices if also else [])]
        # `pids`: more processes that are the workload (a database server and its
        # backends, which are not our children).
        # And the processes serving the file systems (a FUSE daemon).
        servers = {*prov.servers, *(also.servers if also else ())}
        self.sampler = Sampler(
            devices_under(devices),
            interval_s,
            lambda: {me} | servers | (pids() if pids else set()),
        )
        self.sampler.start()
        self.telemetry: Telemetry | None = None
        self.measured_from_unix_s: float | None = None

    def follow(self, then: Callable[[SeriesPoint], None]) -> Callable[[SeriesPoint], None]:
        """An engine progress callback that also notes when the run's measured part began
        (its first interval past the ramp), so the derived device figures leave out the
        layout of its files and its ramp (`Telemetry.since`), as its results do."""

        def seen(point: SeriesPoint) -> None:
            if self.measured_from_unix_s is None and not point.ramp:
                self.measured_from_unix_s = time.time() - point.dur_s
                # The scheduled samples may all fall before this in a short run: one
                # now gives the measured part an interval of its own (issue #33).
                self.sampler.mark()
            then(point)

        return seen

    def stop(self) -> None:
        # Buffered writes reach the devices at writeback, after the job: flush them while
        # the sampler still watches, so device bytes and write amplification see them.
        os.sync()
        self.telemetry = self.sampler.stop()

    def summary(self, written: int, stored: int) -> dict[str, Any]:
        """Derived metrics: `written` bytes the workload wrote, `stored` bytes of data it
        newly stored (for space amplification)."""
        if self.telemetry is None:
            return {}
        measured, since = self.telemetry, None
        if self.measured_from_unix_s is not None:
            since = self.measured_from_unix_s - self.telemetry.started_unix_s
            measured = self.telemetry.since(since)
            if measured is not self.telemetry:
                # The devices' figures start at the first whole interval of the measured
                # part: set the workload's writes against the same span.
                end = measured.series[-1].t_s
                written = round(written * min(1.0, measured.duration_s / (end - since)))
        out = measured.summary(
            workload_written_bytes=written or None,
            space_used_before=self.used_before,
            space_used_after=statvfs_used_bytes(self.workdir, sync=True),
            logical_bytes=stored or None,
        )
        # When the measured part began, seconds into the telemetry (absent: the whole run).
        out["measured_from_s"] = since if measured is not self.telemetry else None
        return out

    def data(self) -> dict[str, Any]:
        return self.telemetry.to_dict() if self.telemetry else {}

    def store_block(self, db: ResultsWriter, run_id: int, report: Report) -> None:
        # Space amplification is about data newly stored: the file(s) laid out now.
        layout = report.layout.bytes if report.layout else 0
        if report.steady_state is None:
            written = sum(r.bytes for r in report.results if r.op in ENGINE_WRITE_OPS)
        else:
            # Its results are its steady window's; the devices were watched throughout.
            written = report.measured_bytes(("write", "log"))
        if self.measured_from_unix_s is None:
            written += layout  # the devices' figures are the whole run's, layout included
        db.store_telemetry(run_id, self.interval_s, self.data(), self.summary(written, layout))


class Runner:
    def __init__(
        self,
        plan: Plan,
        db: ResultsWriter,
        study_id: int,
        workdir: Path,
        progress: Progress | None = None,
        *,
        force: bool = False,
        confirmed: frozenset[str] = frozenset(),
        made: Made | None = None,
    ) -> None:
        self.force = force
        self.confirmed = confirmed
        self.made: Made = made or {}
        self.plan = plan
        self.db = db
        self.study_id = study_id
        self.workdir = workdir
        self.progress = progress or Progress()
        self.signals = _Signals()
        self.engine = find_engine()
        self.env_id = db.environment_id(describe(self.engine))
        self.kept: dict[str, Provisioned] = {}
        self.ranks = mpi_rank.active()
        """The other ranks of a multi-host run (`fslab run --hosts`), else None."""
        self.ran: dict[int, tuple[Point, int]] = {}
        """The runs this command completed: their point and repetition."""
        self._block_of = {p.group_key: b for b in self._blocks() for p in b if plan.blocked}

    def run(self) -> Outcome:
        out = Outcome()
        for p in self.plan.points:
            spec = p.target.model_dump(mode="json", exclude_none=True)
            self.db.add_point(
                p.id, self.study_id, p.seq, p.target.name, p.workload, p.kind, spec, p.params
            )
        with self.signals.installed():
            made_workdir: JournalRef | None = None
            try:
                made_workdir = self._make_workdir()
                if self.ranks is not None:
                    text = self.db.con.execute(
                        "SELECT toml FROM study WHERE id = ?", (self.study_id,)
                    ).fetchone()[0]
                    self.ranks.start(text, self.plan.scale, self.workdir)
                if self.plan.study.adaptive:
                    self._rounds(out)
                else:
                    self._fixed(out)
            except KeyboardInterrupt:
                out.interrupted = True
            finally:
                with self.signals.held():
                    for kept in self.kept.values():
                        teardown(kept, self.db.journal(None))
                    self.kept.clear()
                    if self.ranks is not None:
                        self.ranks.stop()  # their directories go before the work directory
                    if made_workdir is not None:
                        # Kept (the entry stays open) while something else is in it.
                        undo_refs([made_workdir], self.db.journal(None))
                    self.db.record_unmarked()
        # After the teardown, which must finish; on the way out of an error it is not
        # read (the database may be what failed).
        out.disturbed, out.shared = self._disturbed_here()
        return out

    def _fixed(self, out: Outcome) -> None:
        """`repeat = N`: every point N times, repetitions interleaved; then, for each block
        (a group's targets in a blocked design, else a point) short of N undisturbed
        repetitions because other work disturbed some, more repetitions of the whole block
        (`rep` N and up), up to N more in all."""
        todo = [(rep, p) for rep, p in self.plan.runs() if rep not in self.db.done_reps(p.id)]
        out.skipped = len(self.plan.runs()) - len(todo)
        total = len(self.plan.runs())
        self.progress.start(total, out.skipped)
        for rep, point in todo:
            if not self._step(rep, point, out):
                return
        n = self.plan.study.repeat_min
        for block in self._blocks():
            while True:
                done = set().union(*(self.db.done_reps(p.id) for p in block))
                lost = {rep for rep in done if self._disturbed(block[0], rep)}
                if not lost or len(done - lost) >= n or len(done) >= 2 * n:
                    break
                # The whole block again: a blocked design pairs a round's runs.
                rep = max(done) + 1
                total += len(block)
                self.progress.start(total, total - len(block))
                for point in self.plan.round_order(rep, block):
                    if not self._step(rep, point, out):
                        return

    def _judged(self, point: Point, rep: int, run_id: int) -> str | None:
        """What the progress line says of a run other work shared the machine with, judged
        against its block's runs so far (`run` judges again at the end); None when
        nothing shared it."""
        block = self._block(point)
        facts = self.db.block_facts([p.id for p in block], rep)
        mine = [f for f in facts if f.run_id == run_id]
        if not any(f.disturbed for f in mine):
            return None
        who = disturbed_by(disturbers_of(mine), 1) or "memory pressure"
        if len(facts) == 1 and len(block) > 1:
            # The first of its round: what its partners saw decides.
            return f"shared the machine ({who}), judged with its round"
        if any(f.run_id == run_id for f in disturbed_in_block(facts)):
            return f"disturbed, not counted ({who})"
        return f"shared the machine with its round alike ({who}), counted"

    def _disturbed_here(self) -> tuple[list[RunFacts], list[RunFacts]]:
        """This command's runs that other work disturbed, each judged with its whole
        block as it stands now (a later partner may have shown an earlier run disturbed,
        or not); and those other work shared the machine with alike across their block,
        which count."""
        blocks = {
            (point.group_key if self.plan.blocked else point.id, rep): (point, rep)
            for point, rep in self.ran.values()
        }
        hit: list[RunFacts] = []
        shared: list[RunFacts] = []
        for point, rep in blocks.values():
            facts = self.db.block_facts([p.id for p in self._block(point)], rep)
            out = {f.run_id for f in disturbed_in_block(facts)}
            for f in facts:
                if f.run_id in self.ran and f.disturbed:
                    (hit if f.run_id in out else shared).append(f)
        return sorted(hit, key=lambda f: f.run_id), sorted(shared, key=lambda f: f.run_id)

    def _block(self, point: Point) -> list[Point]:
        """The points judged with `point`: its group's (a blocked design), else itself."""
        return self._block_of.get(point.group_key, [point]) if self.plan.blocked else [point]

    def _blocks(self) -> list[list[Point]]:
        """The points whose runs of a round are judged and run again together: a group's
        targets (a blocked design), else each point alone; in plan order."""
        if not self.plan.blocked:
            return [[p] for p in self.plan.points]
        return self.plan.blocks(self.plan.points)

    def _disturbed(self, point: Point, rep: int) -> list[RunFacts]:
        """The runs of `point`'s block at repetition `rep` that other work disturbed, as
        far as they have run (`fslab.stats.disturbance`)."""
        return disturbed_in_block(self.db.block_facts([p.id for p in self._block(point)], rep))

    def _step(self, rep: int, point: Point, out: Outcome) -> bool:
        """Runs repetition `rep` of `point`; False when the study must stop (a signal)."""
        if self.signals.received:
            out.interrupted = True
            return False
        self.db.check_space()  # a run that could not be stored is not started
        status, run_id = self._one(rep, point, out)
        rates = self.db.run_rates(run_id)
        said = stored_summary(point.kind, rates)
        if status == "ok":
            self.ran[run_id] = (point, rep)
            said = self._judged(point, rep, run_id) or said
        self.progress.advance(status, said)
        if status == "interrupted":
            out.interrupted = True
            return False
        return True

    def _rounds(self, out: Outcome) -> None:
        """`repeat = { min, max }`: rounds of every point still undecided, in a fresh
        random order each, with a look after each from `min` on (`fslab.stats.sequential`)."""
        st = self.plan.study
        level = look_level(st.repeat_min, st.repeat_max, paired=self.plan.blocked)
        points = self.plan.points
        todo = {p.id for p in points}
        futile: set[str] = set()
        by_family: set[str] = set()
        bounded: set[str] = set()
        done = {p.id: self.db.done_reps(p.id) for p in points}
        # The bar's total grows by each round's points after the `min` rounds.
        total = len(points) * st.repeat_min
        finished = sum(len({r for r in done[p.id] if r < st.repeat_min}) for p in points)
        self.progress.start(total, finished)
        for rnd in range(st.repeat_max):
            out.rounds = rnd + 1
            order = self.plan.round_order(rnd, [p for p in points if p.id in todo])
            found = sum(rnd in done[p.id] for p in order)
            if rnd >= st.repeat_min:
                total += len(order)
                finished += found
                self.progress.start(total, finished)
            for point in order:
                if rnd in done[point.id]:
                    out.skipped += 1
                    continue
                if rnd >= st.repeat_min and self._spent():
                    out.budget_spent = True
                    break
                if not self._step(rnd, point, out):
                    return
                finished += 1
            if rnd + 1 < st.repeat_min:
                continue
            todo, futile, by_family, bounded = self._look(rnd + 1, level, budget=out.budget_spent)
            if not todo or out.budget_spent:
                break
        by_id = {p.id: p for p in points}
        out.undecided = [by_id[i].label() for i in sorted(todo, key=lambda i: by_id[i].seq)]
        out.settled = len(points) - len(todo)
        out.by_family = len(by_family - todo)
        out.bounded = len(bounded - todo - by_family)
        out.futile = [by_id[i].label() for i in sorted(futile, key=lambda i: by_id[i].seq)]

    def _spent(self) -> bool:
        budget = self.plan.study.budget_s
        return budget is not None and self.db.run_time_s(self.study_id) >= budget

    def _look(
        self, round_: int, level: float, *, budget: bool
    ) -> tuple[set[str], set[str], set[str], set[str]]:
        """Judges the study's runs so far at `level`, stores the look, and returns the
        points still to repeat: each target some comparison of which is still open, and
        each baseline one of whose targets is (`fslab.stats.sequential`). A point of a kind
        with nothing to compare (an integrity run's outcome is a word) has its `min` runs
        and nothing more to decide. Second: the points stopped as futile; third: the points
        with a comparison their family's pooled interval settled; fourth: the points with a
        comparison bounded within the study's `repeat.bound`."""
        every = {p.id for p in self.plan.points if entry(p.kind).compared}
        try:
            results = study_results(self.db.con, self.study_id, self.db.path)
            comparison = compare_results(results, study=self.plan.study.name, alpha=level)
        except (ResultsError, CompareError):
            return every, set(), set(), set()  # nothing completed yet to judge
        rows: list[tuple[str, str, int, str | None, float | None, float | None,
                         float | None, str]] = []  # fmt: skip
        todo: set[str] = set()
        futile: set[str] = set()
        by_family: set[str] = set()
        bounded: set[str] = set()
        answered = findings.answers(comparison)
        pooled = findings.pooled(comparison, answered)
        repeat_max = self.plan.study.repeat_max
        hopeless = findings.futile_families(comparison, repeat_max, answered)
        looked = sequential.look(comparison, repeat_max, pooled, hopeless, self.plan.study.bound)
        for g in looked:
            todo |= g.open_points
            futile |= {p for t, p in g.points.items()
                       if g.targets.get(t) is sequential.State.FUTILE}  # fmt: skip
            by_family |= {g.points[v.target] for v in g.verdicts
                          if v.state is sequential.State.POOLED}  # fmt: skip
            bounded |= {g.points[v.target] for v in g.verdicts
                        if v.state is sequential.State.BOUNDED}  # fmt: skip
            for v in g.verdicts:
                j = v.judgement
                # A comparison's own state; the baseline's row has its targets'.
                state = v.state if j else g.targets.get(v.target, g.state)
                said = "budget" if budget and state is sequential.State.OPEN else str(state)
                rows.append((
                    g.points[v.target], v.op, v.runs, j.decision.word if j else None,
                    _finite(j.ratio if j else None), _finite(j.low if j else None),
                    _finite(j.high if j else None), said,
                ))  # fmt: skip
        self.db.add_look(self.study_id, round_, level, self.plan.seed, rows)
        # A point no group holds (none of its runs completed yet) runs again too.
        held = {p for g in comparison.groups for p in g.points.values()}
        return ((todo | (every - held)) & every, futile & every, by_family & every,
                bounded & every)  # fmt: skip

    def _make_workdir(self) -> JournalRef | None:
        """Makes the work directory if it does not exist, as a directory fslab owns
        (removed after the run once empty); an existing one is used as it is."""
        if os.path.lexists(self.workdir):
            return None
        _, ref = make_dir(self.db.journal(None), self.workdir, if_empty=True)
        return ref

    def _target(self, spec: TargetSpec, run_id: int) -> tuple[Provisioned, bool]:
        """The provisioned target for a run, and whether to tear it down after it."""
        if self.plan.study.reuse:
            if spec.name not in self.kept:
                self.kept[spec.name] = self._provision(spec, run_id)
            return self.kept[spec.name], False
        return self._provision(spec, run_id), True

    def _provision(self, spec: TargetSpec, run_id: int) -> Provisioned:
        prov = provision(
            spec,
            self.workdir,
            self.db.journal(run_id),
            scale=self.plan.scale,
            force=self.force,
            confirmed=self.confirmed,
            made=self.made,
        )
        if spec.device is not None:
            # The file system just made is fslab's own for the next run on this device:
            # this process made it (None: no token need be read to prove it).
            self.made = {**self.made, prov.effective["uuid"]: None}
        return prov

    # -- what a kind's run step gets (`fslab.kinds.base.RunContext`) -----------------------

    def watch(
        self, prov: Provisioned, interval_s: float, *, also: Provisioned | None = None,
        space_at: Path | None = None, pids: Callable[[], set[int]] | None = None,
    ) -> Watch:  # fmt: skip
        if self.ranks is not None:
            # The other ranks on this host (and their engines) are this run's load too.
            ours, given = self.ranks.local_pids, pids

            def pids() -> set[int]:
                return ours | (given() if given else set())

        return Watch(prov, interval_s, also=also, space_at=space_at, pids=pids)

    def live(self, line: str) -> None:
        self.progress.live(line)

    def run_engine(
        self,
        run_id: int,
        job: dict[str, Any],
        prov: Provisioned,
        progress_cb: Callable[[SeriesPoint], None] | None = None,
    ) -> EngineRun:
        if self.ranks is None:
            return run_job(job, engine=self.engine, progress_cb=progress_cb)
        # Every rank runs the whole `runtime` (the stonewall): a rank that stopped once
        # its own rate was steady would leave the others to run alone.
        steady = dict(job) if job.get("steady_state") else None
        job = {k: v for k, v in job.items() if not k.startswith("steady_")}
        job["steady_state"] = False
        ranked = self.ranks.run_job(job, prov.workdir, progress_cb)
        if ranked.errors:
            raise FslabError(
                "; ".join(ranked.errors),
                hint="every rank runs the same job on its own target; see that host",
            )
        assert ranked.facts is not None
        self.db.add_ranks(
            run_id, [(r.rank, r.host, r.report) for r in ranked.ranks], ranked.facts.as_dict()
        )
        if not steady:
            return ranked.run
        # The summed series judged by the job's own keys and the engine's own rule; the
        # results stay the whole stonewall (the ranks' latencies are whole-run histograms).
        return with_steady(ranked.run, judge_steady(steady, ranked.run.report.series.points,
                                                    engine=self.engine))  # fmt: skip

    def engine_live(self, prefix: str = "") -> Callable[[SeriesPoint], None]:
        return lambda point: self.progress.live(prefix + live_summary(point))

    @contextmanager
    def other_target(self, name: str, run_id: int) -> Iterator[Provisioned]:
        spec = self.plan.study.target_named(name)
        prov, owned = self._target(spec, run_id)
        try:
            yield prov
        finally:
            with self.signals.held():
                if owned:
                    teardown(prov, self.db.journal(run_id))

    def _one(self, rep: int, point: Point, out: Outcome) -> tuple[str, int]:
        label = f"{point.label()} #{rep + 1}"
        self.progress.point(label)
        run_id = self.db.start_run(point.id, rep, self.env_id)
        prov: Provisioned | None = None
        owned = False
        status = "failed"
        ranked = False
        try:
            prov, owned = self._target(point.target, run_id)
            if self.ranks is not None:
                per_host = point.params.get("ranks")
                self.ranks.provision(point.id, int(per_host) if per_host is not None else None)
                ranked = True
            elif int(point.params.get("ranks", 1)) > 1:
                raise FslabError(
                    f"`ranks = {point.params['ranks']}` needs a multi-host run",
                    hint="run the study with `--hosts HOST:SLOTS,...` (docs/multihost.md)",
                )
            status, err = point.kind_spec.run(self, run_id, point, prov)
            if status == "failed":
                out.failed += 1
                out.failures.append(f"{label}: {err}")
            elif status == "ok":
                out.ok += 1
            return status, run_id
        except KeyboardInterrupt:
            status = "interrupted"
            self.db.finish_run(run_id, status, error="interrupted before the engine reported")
            raise
        except StoreFull:
            raise  # nothing more can be stored: the study stops (after the teardown below)
        except (JobError, EngineError, FslabError) as e:
            # A point that cannot run is recorded and the study goes on.
            msg = e.message + (f" ({e.hint})" if e.hint else "")
            if isinstance(e, EngineError) and e.stderr:
                # The engine's own words; after a crash, what it said last and how it ended.
                said = e.stderr.strip()
                msg = said if e.verbatim else f"{e.message}; it said: {said[-2000:]}"
            self.db.finish_run(run_id, "failed", error=msg)
            out.failed += 1
            out.failures.append(f"{label}: {msg}")
            return "failed", run_id
        finally:
            with self.signals.held():
                if ranked and self.ranks is not None:
                    self.ranks.teardown()
                if prov is not None and owned:
                    teardown(prov, self.db.journal(run_id))
                if prov is None or owned:
                    # Whatever a half-made target left behind: only entries this process
                    # wrote, never others a database may hold under this run's id.
                    undo_open(self.db, run_id, only=self.db.recorded)
