"""Reports of stored results: the same `Comparison` as a terminal table, Markdown, CSV or
JSON (`fslab.report.terminal`)."""

from fslab.report.terminal import render_csv, render_json, render_markdown, render_table

__all__ = ["render_csv", "render_json", "render_markdown", "render_table"]
