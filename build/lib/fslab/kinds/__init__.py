"""The workload kinds, one module each, and their registry.

`KINDS` maps a study's `kind = "..."` to its `Kind` (`fslab.kinds.base`), in the order
messages list them; `kind_of(name)` looks one up. The study model's workload union
(`AnyWorkload`), the study reader's keys, the planner, the pre-flight checks and the
runner all come from here: adding a kind is one module in this package plus one line in
`_ALL` below, its read side in `fslab.catalog` (one module plus one line in `CATALOG`),
and its engine module when the engine runs it (docs/architecture.md, "A workload kind").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Union

from pydantic import Discriminator, Tag

from fslab.errors import FslabError
from fslab.kinds.app import MAILSTORE, OLTP, MailstoreWorkloadSpec, OltpWorkloadSpec
from fslab.kinds.base import Kind, RunContext, RunStatus
from fslab.kinds.block import BLOCK, BlockWorkloadSpec
from fslab.kinds.files import FILES, FilesWorkloadSpec
from fslab.kinds.fio import FIO, FioWorkloadSpec
from fslab.kinds.integrity import INTEGRITY, IntegrityWorkloadSpec
from fslab.kinds.pgbench import PGBENCH, PgbenchWorkloadSpec

_ALL: tuple[Kind, ...] = (BLOCK, FILES, PGBENCH, OLTP, MAILSTORE, INTEGRITY, FIO)
KINDS: dict[str, Kind] = {k.name: k for k in _ALL}
DEFAULT_KIND = BLOCK.name
"""The kind of a workload that names none."""

AnySpec = (
    BlockWorkloadSpec | FilesWorkloadSpec | PgbenchWorkloadSpec | OltpWorkloadSpec
    | MailstoreWorkloadSpec | IntegrityWorkloadSpec | FioWorkloadSpec
)  # fmt: skip
"""Any kind's workload spec, for the type checker (`AnyWorkload` is built from `KINDS`)."""


def kind_of(name: str) -> Kind:
    """The kind named `name`; a name no kind has is a bug here (a study's `kind` is checked
    when it is read)."""
    try:
        return KINDS[name]
    except KeyError:
        raise FslabError(
            f"`{name}` is not a workload kind; the kinds are {', '.join(KINDS)}",
            hint="a results database from a newer fslab may hold kinds this one lacks",
        ) from None


def _tag(data: Any) -> str:
    return str(data.get("kind", DEFAULT_KIND)) if isinstance(data, dict) else str(data.kind)


if TYPE_CHECKING:
    AnyWorkload = AnySpec
else:
    AnyWorkload = Annotated[
        Union[tuple(Annotated[k.spec, Tag(name)] for name, k in KINDS.items())],  # noqa: UP007
        Discriminator(_tag),
    ]

__all__ = [
    "DEFAULT_KIND",
    "KINDS",
    "AnySpec",
    "AnyWorkload",
    "Kind",
    "RunContext",
    "RunStatus",
    "kind_of",
]
