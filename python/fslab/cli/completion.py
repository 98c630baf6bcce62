"""`fslab completion SHELL`: the completion script of bash, zsh or fish, from click's own
(commands, options, file names and choices complete; nothing is installed for you)."""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class

_SHELLS = ("bash", "zsh", "fish")
# click's protocol: the script calls `fslab` again with this variable set.
_COMPLETE_VAR = "_FSLAB_COMPLETE"


@click.command("completion")
@click.argument("shell", type=click.Choice(_SHELLS))
def command(shell: str) -> None:
    """Print the shell completion script for bash, zsh or fish.

    \b
    bash: fslab completion bash > /etc/bash_completion.d/fslab
          (or add `eval "$(fslab completion bash)"` to ~/.bashrc)
    zsh:  fslab completion zsh > "${fpath[1]}/_fslab"
    fish: fslab completion fish > ~/.config/fish/completions/fslab.fish
    """
    from fslab.cli import main

    cls = get_completion_class(shell)
    assert cls is not None  # every choice is one of click's shells
    click.echo(cls(main, {}, "fslab", _COMPLETE_VAR).source())
