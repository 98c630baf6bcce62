"""The `fslab` command group itself: its help lists every command without importing them."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from conftest import REPO, fslab_command, fslab_env, run_fslab

from fslab.cli import _COMMANDS, _MODULES


@pytest.mark.parametrize("name", list(_COMMANDS))
def test_the_help_sentence_of_each_command_is_its_own(name: str) -> None:
    command = importlib.import_module(f"fslab.cli.{_MODULES.get(name, name)}").command
    assert isinstance(command, click.Command)
    assert command.get_short_help_str(limit=1000) == _COMMANDS[name]


def test_the_command_list_imports_no_command() -> None:
    code = (
        "import sys; from fslab.cli import main\n"
        "try: main(['--help'])\n"
        "except SystemExit: pass\n"
        "from fslab.cli import _COMMANDS, _MODULES\n"
        "cmds = {f'fslab.cli.{_MODULES.get(n, n)}' for n in _COMMANDS}\n"
        "print(sorted(m for m in sys.modules if m in cmds), file=sys.stderr)\n"
        "print('numpy' in sys.modules, file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    listed, numpy = done.stderr.strip().splitlines()[-2:]
    assert listed == "[]" and numpy == "False"
    for name in _COMMANDS:
        assert f"  {name} " in done.stdout


def _bash_completes(words: str, bin_: Path) -> list[str]:
    """What bash offers for `words` (the last one being completed) with the script that
    `fslab completion bash` prints loaded, as a user's shell would have it."""
    # the script runs `fslab` from PATH: the one under test is the first there
    shim = bin_ / "fslab"
    shim.write_text("#!/bin/sh\nexec " + " ".join(fslab_command()) + ' "$@"\n')
    shim.chmod(0o755)
    env = fslab_env(PATH=f"{bin_}:{os.environ['PATH']}")
    run = (
        'eval "$(fslab completion bash)"\n'
        f"COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))\n"
        "_fslab_completion fslab\n"
        "printf '%s\\n' \"${COMPREPLY[@]}\"\n"
    )
    done = subprocess.run(["bash", "-c", run], capture_output=True, text=True, env=env,
                          check=True, timeout=60)  # fmt: skip
    return done.stdout.split()


def test_bash_completes_commands_and_their_options(tmp_path: Path) -> None:
    assert _bash_completes("fslab com", tmp_path) == ["compare", "completion"]
    assert "--where" in _bash_completes("fslab compare --", tmp_path)
    assert _bash_completes("fslab compare --format ''", tmp_path) == ["table", "md", "csv", "json"]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_completion_scripts_for_zsh_and_fish(shell: str) -> None:
    done = run_fslab("completion", shell)
    assert done.returncode == 0
    assert "_FSLAB_COMPLETE" in done.stdout and f"{shell}_complete" in done.stdout


def test_completion_of_an_unknown_shell_is_a_usage_error() -> None:
    done = run_fslab("completion", "tcsh")
    assert done.returncode == 2 and "tcsh" in done.stderr


def _doc_table(marker: str) -> list[list[str]]:
    """The rows of docs/cli.md's table between `<!-- marker` and `<!-- end marker -->`."""
    text = (REPO / "docs" / "cli.md").read_text()
    body = text.split(f"<!-- {marker}")[1].split(f"<!-- end {marker} -->")[0]
    rows = [line.strip("|").split("|") for line in body.splitlines() if line.startswith("|")]
    return [[c.strip() for c in r] for r in rows[2:]]


def test_the_exit_code_table_of_both_programs_is_the_codes() -> None:
    from fslab.errors import ExitStatus

    rows = {int(r[0]): r for r in _doc_table("exit-codes")}
    assert {code for code, r in rows.items() if r[1] != "—"} == {s.value for s in ExitStatus}
    main_rs = (REPO / "engine" / "src" / "main.rs").read_text()
    engine = {0} | {int(v) for v in re.findall(r"const EXIT_\w+: \w+ = (\d+);", main_rs)}
    assert {code for code, r in rows.items() if r[2] != "—"} == engine


def test_the_schema_versions_table_is_the_codes() -> None:
    from fslab.doctor import SCHEMA_VERSION as DOCTOR
    from fslab.engine.report import SCHEMA_VERSION as ENGINE
    from fslab.report.export import EXPORT_SCHEMA_VERSION
    from fslab.report.history import HISTORY_SCHEMA_VERSION
    from fslab.report.render.json import JSON_SCHEMA_VERSION

    said = {
        r[0].strip("`").split(" (")[0].strip("`"): int(r[1]) for r in _doc_table("schema-versions")
    }
    assert said == {
        "fslab compare --format json": JSON_SCHEMA_VERSION,
        "fslab export --format json": EXPORT_SCHEMA_VERSION,
        "fslab history --format json": HISTORY_SCHEMA_VERSION,
        "fslab doctor --format json": DOCTOR,
        "fslab-engine run": ENGINE,
    }
