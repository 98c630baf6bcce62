"""The `fslab` command group itself: its help lists every command without importing them."""

from __future__ import annotations

import importlib
import subprocess
import sys

import click
import pytest

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
        "print(sorted(m for m in sys.modules if m.startswith('fslab.cli.')), file=sys.stderr)\n"
        "print('numpy' in sys.modules, file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    listed, numpy = done.stderr.strip().splitlines()[-2:]
    assert listed == "[]" and numpy == "False"
    for name in _COMMANDS:
        assert f"  {name} " in done.stdout
