"""The lab reads the engine's JSON through hand-written models (`fslab.engine`); these
tests hold them to the committed JSON Schema the engine generates (`schemas/`, checked
against the engine by `cargo test`), so a key the engine adds or renames fails here
instead of being dropped without a word."""

from __future__ import annotations

import json
import subprocess
import sys
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from fslab import engine
from fslab.engine import report as engine_report

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"

IGNORED: dict[tuple[str, str], str] = {}
"""(model, key) of the schema that the lab does not read, each with the reason."""


def _models(annotation: Any) -> Iterator[type[BaseModel]]:
    """The models an annotation holds (through `X | None`, tuples, `Annotated`)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    for arg in typing.get_args(annotation):
        yield from _models(arg)
    origin = typing.get_origin(annotation)
    if origin is not None and origin not in (typing.Union, types.UnionType, tuple):
        yield from _models(origin)


def _refs(node: Any) -> Iterator[str]:
    """The `$defs` names a property's schema refers to (through anyOf, items, ...)."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            yield ref.removeprefix("#/$defs/")
        for key, value in node.items():
            if key != "$ref":
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _is_map(node: dict[str, Any]) -> bool:
    return "properties" not in node and isinstance(node.get("additionalProperties"), dict)


def _objects(node: dict[str, Any], defs: dict[str, Any]) -> list[dict[str, Any]]:
    """The object schemas a schema node stands for (an enum stands for none; a map of
    objects for itself)."""
    if _is_map(node) and list(_refs(node["additionalProperties"])):
        return [node]
    if node.get("type") == "object" or "properties" in node:
        return [node]
    return [o for name in _refs(node) for o in _objects(defs[name], defs)]


def _pairs(root: dict[str, Any], model: type[BaseModel]) -> Iterator[tuple[str, Any, Any]]:
    """(path, schema object, model) for the model and every model below it, walking the
    schema along the model's fields."""
    defs = root.get("$defs", {})
    todo: list[tuple[str, dict[str, Any], type[BaseModel]]] = [(model.__name__, root, model)]
    seen: set[tuple[int, type[BaseModel]]] = set()
    while todo:
        path, node, m = todo.pop()
        if (id(node), m) in seen:
            continue
        seen.add((id(node), m))
        yield path, node, m
        if _is_map(node):
            # A JSON map with fixed names (`files`: `data`, `log`): each field is a value.
            for name, field in m.model_fields.items():
                for sub in _models(field.annotation):
                    for obj in _objects(node["additionalProperties"], defs):
                        todo.append((f"{path}.{name}", obj, sub))
            continue
        props = node.get("properties", {})
        for name, field in m.model_fields.items():
            key = field.alias or name
            if key not in props:
                continue
            below = list(_models(field.annotation))
            objects = _objects(props[key], defs)
            if below and objects:
                for sub in below:
                    for obj in objects:
                        todo.append((f"{path}.{key}", obj, sub))


@pytest.mark.parametrize(
    ("schema", "model"),
    [
        ("report.schema.json", engine.Report),
        ("progress.schema.json", engine.SeriesPoint),
        ("steady.schema.json", engine.SteadyAnswer),
    ],
)
def test_every_key_of_the_engine_schema_reaches_a_python_model(
    schema: str, model: type[BaseModel]
) -> None:
    root = json.loads((SCHEMAS / schema).read_text())
    problems: list[str] = []
    for path, node, m in _pairs(root, model):
        if _is_map(node):
            continue  # its values are checked on their own
        props = node.get("properties", {})
        required = set(node.get("required", []))
        fields = {f.alias or n: f for n, f in m.model_fields.items()}
        for key in props:
            if key not in fields and (m.__name__, key) not in IGNORED:
                problems.append(f"{path}: the schema's `{key}` has no field in {m.__name__}")
        for key, f in fields.items():
            if key not in props:
                problems.append(f"{path}: {m.__name__}.{key} is not in the schema")
            elif f.is_required() and key not in required:
                problems.append(
                    f"{path}: {m.__name__}.{key} is required but the engine may leave it out"
                )
    assert not problems, "\n".join(problems)


def test_the_walk_reaches_every_model_of_the_reports() -> None:
    reached = set()
    for schema, model in (("report.schema.json", engine.Report),
                          ("steady.schema.json", engine.SteadyAnswer)):  # fmt: skip
        root = json.loads((SCHEMAS / schema).read_text())
        reached |= {m for _, _, m in _pairs(root, model)}
    models = {
        m
        for m in vars(engine_report).values()
        if isinstance(m, type)
        and issubclass(m, BaseModel)
        and m.__module__ == engine_report.__name__
    }
    models.discard(engine_report._Model)
    assert reached == models


@pytest.mark.engine
def test_a_files_job_report_reaches_the_lab_whole(tmp_path: Path) -> None:
    """The files section and the series' files field, read from real engine runs."""
    tree = tmp_path / "tree"
    base = {"kind": "files", "directory": str(tree)}
    made = engine.run_job(
        {
            **base,
            "op": "create",
            "nr_files": 30,
            "dup_share": 0.5,
            "size_buckets": [["4k", 3], ["16k", 1]],
        }
    )
    assert made.report.job.size_buckets == ((4096, 3.0), (16384, 1.0))
    assert made.report.files is not None and made.report.files.created == 30
    assert made.report.series.points[-1].files is not None
    scan = engine.run_job({**base, "op": "scan"}).report.files
    assert scan is not None and scan.scan_totals is not None
    assert sum(t.files for t in scan.scan_totals.values()) == 30
    dupes = engine.run_job({**base, "op": "dupes"}).report.files
    assert dupes is not None and dupes.dupe_group_count and dupes.dupe_groups
    assert all(len(g) >= 2 for g in dupes.dupe_groups)


FAKES = Path(__file__).resolve().parent / "fakes"


def _shape(doc: Any, at: str = "") -> set[str]:
    """Every key path of a JSON document (a list stands for its first item)."""
    if isinstance(doc, dict):
        return {p for k, v in doc.items() for p in {f"{at}.{k}", *_shape(v, f"{at}.{k}")}}
    if isinstance(doc, list) and doc:
        return _shape(doc[0], f"{at}[]")
    return set()


@pytest.mark.parametrize("kind", ["block", "files", "oltp", "mailstore"])
def test_the_fake_engines_reports_are_reports_the_lab_reads(kind: str) -> None:
    doc = json.loads((FAKES / "reports" / f"{kind}.json").read_text())
    report = engine.Report.from_json(doc)
    assert report.status == "ok" and report.series.points


@pytest.mark.engine
def test_the_fake_engines_reports_have_the_shape_of_the_real_engines(tmp_path: Path) -> None:
    """When the engine's report changes, `make fake-reports` brings the fake along."""
    done = subprocess.run(
        [sys.executable, str(FAKES / "make-reports"), "--out", str(tmp_path)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for kind in ("block", "files", "oltp", "mailstore"):
        fresh = json.loads((tmp_path / f"{kind}.json").read_text())
        canned = json.loads((FAKES / "reports" / f"{kind}.json").read_text())
        assert _shape(fresh) == _shape(canned), f"{kind}: run `make fake-reports`"
