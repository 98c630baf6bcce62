"""The README's demo: a small study across ext4, xfs and btrfs on loop devices that ends
in the comparison table and an HTML report. Everything it makes (images, loop devices,
mounts) is removed by `fslab run` itself; the results stay in demo-out/demo.db for
`fslab compare`, and the report is demo-out/report.html.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STUDY = ROOT / "examples" / "demo.toml"
OUT = ROOT / "demo-out"


def fslab(*args: str) -> None:
    exe = Path(sys.executable).with_name("fslab")
    cmd = [str(exe), *args]
    print("$ fslab " + " ".join(args), file=sys.stderr, flush=True)
    done = subprocess.run(cmd, check=False)
    if done.returncode != 0:
        sys.exit(done.returncode)


def main() -> int:
    if os.geteuid() != 0:
        print("demo: needs root (it makes loop devices and file systems)", file=sys.stderr)
        print("hint: run `sudo make demo`", file=sys.stderr)
        return 2
    # A fresh database, so the demo measures instead of resuming an earlier run.
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir()
    db = str(OUT / "demo.db")
    fslab("plan", str(STUDY), "--results", db)
    fslab("run", str(STUDY), "--results", db)
    fslab("compare", "--results", db)
    report = OUT / "report.html"
    fslab("report", "--results", db, "-o", str(report))
    print(
        f"demo: the report is {report} (open it in a browser; it needs no network)", file=sys.stderr
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
