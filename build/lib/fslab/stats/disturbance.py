"""Which completed runs other work disturbed: they are not counted, and measured again.

Alone (an independent design, or a run with no partner in its round): a run is disturbed
when other processes took CPU the workload wanted, or memory pressure stalled it, for a
second or more (`RunFacts.disturbed`, judged per interval by `fslab.telemetry.series`).

Within its block (a blocked design: a group's targets run back to back in each round and
are compared by the round's ratios): what slows every run of a round alike cancels in
those ratios, so foreign CPU disturbs a run only where it was *more* than over the least
disturbed run of the same block, by more than the foreign-CPU threshold (10% of a CPU)
over the whole run. A burst that hit one target's run and not its partner's is caught; a
steady neighbour (a browser, a CI runner's other job) beside every run of the round is
not, and the study goes on deciding (bench/busy-demo measures both sides of this).
Memory pressure is still judged alone: it may come from the workload itself, which is
what the targets differ in.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence

from fslab.stats.warnings import RunFacts
from fslab.telemetry.series import Thresholds

FOREIGN_CPU_EXCESS_PCT = Thresholds().foreign_cpu_pct
"""Foreign CPU over a run, % of one CPU, above that over its block's least disturbed run
at which a blocked run counts as disturbed (the per-interval threshold, over the run)."""


def disturbed_in_block(block: Sequence[RunFacts]) -> list[RunFacts]:
    """The runs of one block (a round's runs of one group, each target once) that other
    work disturbed, judged against each other; alone when the block has one run or a run
    whose foreign CPU was not recorded (older results)."""
    alone = [f for f in block if f.disturbed]
    if not alone or len(block) < 2:
        return alone
    loads = [f.foreign_cpu_pct for f in block]
    if any(x is None for x in loads):
        return alone
    least = min(x for x in loads if x is not None)
    return [
        f
        for f in alone
        if "memory_pressure" in f.reasons
        or (f.foreign_cpu_pct or 0.0) - least > FOREIGN_CPU_EXCESS_PCT
    ]


def disturbed_runs(runs: Iterable[tuple[RunFacts, Hashable | None]]) -> list[RunFacts]:
    """Of these completed runs, each with its block (None: judged alone), the ones other
    work disturbed, in the order given. Only the blocks of runs disturbed alone are
    looked at: a run no interval of which was disturbed is never disturbed in a block."""
    runs = list(runs)
    suspect = {b for f, b in runs if b is not None and f.disturbed}
    blocks: dict[Hashable, list[RunFacts]] = {}
    for f, b in runs:
        if b in suspect:
            blocks.setdefault(b, []).append(f)
    hit = {f.run_id for members in blocks.values() for f in disturbed_in_block(members)}
    return [f for f, b in runs if f.run_id in hit or (b is None and f.disturbed)]
