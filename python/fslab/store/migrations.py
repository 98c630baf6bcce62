"""Forward migrations of the results database: `MIGRATIONS[n]` turns version n-1 into n.

Version 1 is schema.sql as first released, so there is nothing to migrate yet; the
next change to schema.sql adds `MIGRATIONS[2]` and bumps `db.SCHEMA_VERSION`, and a
test opens a version-1 file and checks it arrives intact.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {}
