"""What can go wrong, as types. Library code raises these; only `fslab.cli` turns them
into an exit status and an `error: ...` / `hint: ...` message on stderr."""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    """Exit statuses of the `fslab` command; the same table is in `fslab --help`."""

    OK = 0
    FAILED = 1
    """The work failed: an I/O error, a point that did not complete, an engine crash."""
    USAGE = 2
    """A bad command line, study or job."""
    REFUSED = 3
    """The safety gate refused a device."""
    INTERRUPTED = 130
    """Stopped by SIGINT or SIGTERM; what ran is still reported."""


class FslabError(Exception):
    """An error the user can act on: a one-line `message` (no final period) and an
    optional `hint` saying what to do next."""

    exit_status: ExitStatus = ExitStatus.FAILED

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class EngineError(FslabError):
    """`fslab-engine` could not be found or run, or it failed without a report.

    `stderr` is what the engine itself said. When `verbatim` is true the engine's words
    already are the whole message (`error: ...` / `hint: ...` lines), and the CLI shows
    them as they are instead of `message`.
    """

    def __init__(
        self,
        message: str,
        hint: str | None = None,
        *,
        stderr: str = "",
        verbatim: bool = False,
        exit_status: ExitStatus | None = None,
    ) -> None:
        super().__init__(message, hint)
        self.stderr = stderr
        self.verbatim = verbatim
        if exit_status is not None:
            self.exit_status = exit_status


class JobError(EngineError):
    """The engine refused the job (its exit status 2): an unknown key, a value out of
    range, a job that does not fit its target. `stderr` holds every problem it found."""

    exit_status = ExitStatus.USAGE


class TargetError(FslabError):
    """A target could not be provisioned, inspected or torn down: a tool failed, the
    kernel lacks a feature, something fslab made is still in use."""


class SafetyError(FslabError):
    """The safety gate refused a device: mounted, claimed, swap, or carrying data."""

    exit_status = ExitStatus.REFUSED
