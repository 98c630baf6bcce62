"""`fslab compare`'s renderers, one module per format, each one function of a `Comparison`
to text: `render_table` (the terminal), `render_markdown` (pipe tables), `render_csv` and
`render_json` (tidy: one row per group, target, operation and metric). The words and
numbers they share are `fslab.report.format`'s; the HTML and Markdown reports, which show
more than a comparison, are `fslab.report.html` and `fslab.report.markdown`."""

from fslab.report.render.csv import render_csv
from fslab.report.render.json import render_json
from fslab.report.render.markdown_table import render_markdown
from fslab.report.render.terminal import render_table

__all__ = ["render_csv", "render_json", "render_markdown", "render_table"]
