"""Reports of stored results: the same `Comparison` as a terminal table, Markdown, CSV or
JSON (`fslab.report.render`), and as the HTML and Markdown reports; the words and numbers
they share are `fslab.report.format`'s."""

from fslab.report.render import render_csv, render_json, render_markdown, render_table

__all__ = ["render_csv", "render_json", "render_markdown", "render_table"]
