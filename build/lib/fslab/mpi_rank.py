"""`python -m fslab.mpi_rank ARGS`: one rank of a multi-host run (`fslab run --hosts`),
started by `mpiexec` (docs/multihost.md).

Rank 0 is `fslab run ARGS` itself: it owns the results database and drives the run. The
other ranks wait for its orders, one point at a time, in the IOR pattern:

1. `provision`: every rank makes the point's target in its own work directory
   (`<workdir>/rank<N>`); the statuses are gathered: one failure fails the point
   everywhere.
2. `job`: rank 0 sends its engine job; each rank rebases its paths into its own target,
   drops its page cache, waits at a barrier, and runs it; a time-based job stops after
   the same duration everywhere (the stonewall). The reports are gathered and merged
   (`fslab.rank_merge`).
3. `teardown`, and at the end `stop`.

MPI carries only these orders and the reports: the engine itself knows nothing of it.
The other ranks journal their side effects in `<workdir>/rank<N>.journal.db` on their
own host: when a rank dies, Open MPI ends them all, and `fslab cleanup` undoes what the
journals say (`fslab run --hosts` runs it itself on its host after a failure).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fslab import guard
from fslab.engine import EngineRun, Report, SeriesPoint, find_engine, run_job
from fslab.environment import drop_caches
from fslab.errors import FslabError
from fslab.procs import end_at_once_on_signals
from fslab.rank_merge import RankFacts, RankReport, merge

_ACTIVE: Ranks | None = None


def active() -> Ranks | None:
    """The ranks of this run when it is rank 0 of a multi-host run, else None."""
    return _ACTIVE


def _rebase(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str) and (value == old or value.startswith(old + "/")):
        return new + value[len(old) :]
    return value


def rebase_job(job: Mapping[str, Any], old: Path, new: Path) -> dict[str, Any]:
    """Rank 0's job with its paths (inside rank 0's target) moved into this rank's."""
    return {k: _rebase(v, str(old), str(new)) for k, v in job.items()}


@dataclass(frozen=True)
class RankedRun:
    """What one run on every rank gave: the aggregate and each rank's own report."""

    run: EngineRun
    ranks: list[RankReport]
    facts: RankFacts | None
    errors: list[str]


class Ranks:
    """Rank 0's side: sends the orders, gathers the answers."""

    def __init__(self, comm: Any) -> None:
        self.comm = comm
        self.size: int = comm.Get_size()
        self.host = _host()
        self.stopped = False
        found = list(comm.allgather((self.host, os.getpid())))
        self.hosts: list[str] = [h for h, _ in found]
        """Each rank's host, by rank (rank 0's first)."""
        self.local_pids = {pid for h, pid in found[1:] if h == self.host}
        """The other ranks on rank 0's host: their engines are the workload too, not
        foreign work that spoils the measurement (telemetry)."""

    def _order(self, order: dict[str, Any]) -> list[Any]:
        self.comm.bcast(order, root=0)
        return list(self.comm.gather(None, root=0))[1:]

    def start(self, study_text: str, scale: float, workdir: Path) -> None:
        errors = [e for e in self._order({"op": "start", "study": study_text, "scale": scale,
                                          "workdir": str(workdir)}) if e]  # fmt: skip
        if errors:
            raise FslabError("the other ranks cannot start: " + "; ".join(errors))

    def slots(self) -> dict[str, int]:
        """Ranks per host."""
        out: dict[str, int] = {}
        for h in self.hosts:
            out[h] = out.get(h, 0) + 1
        return out

    def provision(self, point_id: str, per_host: int | None) -> None:
        """Every taking part rank makes the point's target: the first `per_host` ranks of
        each host (all when None)."""
        order = {"op": "provision", "point": point_id, "per_host": per_host}
        errors = [e for e in self._order(order) if e]
        if errors:
            self.teardown()
            raise FslabError(
                "a rank could not make its target: " + "; ".join(errors),
                hint="every rank makes the target in its own work directory: check the "
                "tools and space on every host",
            )

    def run_job(
        self, job: dict[str, Any], base: Path, progress_cb: Callable[[SeriesPoint], None] | None
    ) -> RankedRun:
        """`job` on every taking part rank at once (rank 0's own through `run_job`),
        merged."""
        self.comm.bcast({"op": "job", "job": job, "base": str(base)}, root=0)
        drop_caches()
        self.comm.Barrier()
        try:
            mine = run_job(job, progress_cb=progress_cb)
        finally:
            # The others answer whatever happened here: the next order must find them
            # waiting for it, not for this gather.
            answers = self.comm.gather(None, root=0)
        reports = [RankReport(0, self.host, mine.report)]
        errors: list[str] = []
        for r, answer in enumerate(answers[1:], start=1):
            if answer.get("idle"):
                continue
            if answer.get("error"):
                errors.append(f"rank {r} ({answer['host']}): {answer['error']}")
            else:
                report = Report.model_validate(answer["report"])
                reports.append(RankReport(r, answer["host"], report))
        if errors:
            return RankedRun(mine, reports, None, errors)
        merged, facts = merge(reports)
        code = max([mine.exit_code, *(a.get("exit_code", 0) for a in answers[1:])])
        run = EngineRun(report=merged, document=merged.model_dump(mode="json", by_alias=True),
                        stdout=merged.model_dump_json(by_alias=True), stderr=mine.stderr,
                        exit_code=code)  # fmt: skip
        return RankedRun(run, reports, facts, errors)

    def teardown(self) -> None:
        self._order({"op": "teardown"})

    def stop(self) -> None:
        """Ends the other ranks (their work directories removed first); once."""
        if not self.stopped:
            self.stopped = True
            self._order({"op": "stop"})


def _host() -> str:
    from mpi4py import MPI

    return str(MPI.Get_processor_name())


def _worker(comm: Any) -> int:
    """A rank other than 0: carry out rank 0's orders until `stop`."""
    from fslab.store.db import ResultsWriter
    from fslab.store.lock import exclusive
    from fslab.study.load import parse_study
    from fslab.study.plan import Plan, expand
    from fslab.targets.journal import make_dir, undo_refs
    from fslab.targets.provision import Provisioned, provision, teardown

    rank, host = comm.Get_rank(), _host()
    hosts = [h for h, _ in comm.allgather((host, os.getpid()))]
    local = hosts[:rank].count(host)  # this rank's index among its host's ranks
    store: ResultsWriter | None = None
    plan: Plan | None = None
    workdir: Path | None = None
    made: Any = None
    prov: Provisioned | None = None
    held = contextlib.ExitStack()
    while True:
        order = comm.bcast(None, root=0)
        op = order["op"]
        if op == "job":
            answer: dict[str, Any] = {"host": host}
            if prov is None:  # not taking part in this point (`ranks`)
                comm.Barrier()
                comm.gather({"host": host, "idle": True}, root=0)
                continue
            job = rebase_job(order["job"], Path(order["base"]), prov.workdir)
            try:
                drop_caches()
            except FslabError as e:
                answer["error"] = e.message
            comm.Barrier()  # every rank reaches it, whatever happened before
            if "error" not in answer:
                try:
                    done = run_job(job, engine=find_engine())
                    answer |= {"report": done.document, "exit_code": done.exit_code}
                except FslabError as e:
                    answer["error"] = e.message
            comm.gather(answer, root=0)
            continue
        error: str | None = None
        try:
            if op == "start":
                plan = expand(parse_study(order["study"], "study"), float(order["scale"]))
                workdir = Path(order["workdir"]) / f"rank{rank}"
                workdir.parent.mkdir(parents=True, exist_ok=True)
                # A journal that outlives this process: when a rank is killed, Open MPI
                # ends them all, and `fslab cleanup` (run by `fslab run --hosts` itself
                # after a failure) undoes what it says.
                store = ResultsWriter.open(workdir.parent / f"rank{rank}.journal.db")
                # Held while this rank lives; whatever ends it (Open MPI's SIGKILL too),
                # its guard then undoes what the journal says is still there.
                held.enter_context(exclusive(store.path, f"rank {rank}"))
                guard.start(store.path, rank_journal=True)
                _, made = make_dir(store.journal(None), workdir)
            elif op == "provision":
                assert plan is not None and workdir is not None
                point = next(p for p in plan.points if p.id == order["point"])
                per_host = order.get("per_host")
                if per_host is None or local < int(per_host):
                    assert store is not None
                    prov = provision(point.target, workdir, store.journal(None), plan.scale)
            elif op in ("teardown", "stop"):
                if prov is not None and store is not None:
                    teardown(prov, store.journal(None))
                    prov = None
                if op == "stop" and made is not None and store is not None:
                    undo_refs([made], store.journal(None))
                if op == "stop" and store is not None and not store.open_journal_entries():
                    held.close()
                    store.close()
                    for suffix in ("", "-wal", "-shm"):
                        Path(f"{store.path}{suffix}").unlink(missing_ok=True)
                    store = None
        except (FslabError, StopIteration, OSError) as e:
            error = f"rank {rank} ({host}): {getattr(e, 'message', None) or e}"
        comm.gather(error, root=0)
        if op == "stop":
            return 0


def main(argv: list[str]) -> int:
    global _ACTIVE
    from mpi4py import MPI

    end_at_once_on_signals()
    comm = MPI.COMM_WORLD
    if comm.Get_rank() != 0:
        return _worker(comm)
    _ACTIVE = Ranks(comm)
    from fslab.cli import main as cli_main

    code: int = 0
    try:
        cli_main(["run", *argv])  # click exits with the command's status
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    finally:
        _ACTIVE.stop()
    return code


if __name__ == "__main__":
    # Run as `python -m fslab.mpi_rank`, this module is `__main__`; the runner asks
    # `fslab.mpi_rank.active()`, which must be the same module's state.
    from fslab import mpi_rank as _imported

    sys.exit(_imported.main(sys.argv[1:]))
