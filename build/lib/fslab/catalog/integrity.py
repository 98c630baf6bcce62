"""The integrity kind's read side: a run's result is a word (what the file system did
with a fault: table `integrity`, `fslab.integrity_words`), shown in tables of its own,
never in a comparison's rows."""

from fslab.catalog import Entry
from fslab.integrity_words import KIND

ENTRY: Entry = Entry(
    KIND,
    size_keys=("file_size", "bs"),
    count_keys=("blocks",),
    compared=False,
    outcome_rows=True,
    stored="integrity",
)
