"""fslab.engine: finding the engine, running jobs, and reading its report."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hdr import decode_hist, hist_percentile

from fslab.engine import (
    SCHEMA_VERSION,
    EngineRun,
    Report,
    SeriesPoint,
    check_job,
    find,
    find_engine,
    run_job,
)
from fslab.errors import EngineError, ExitStatus, JobError

NULL_JOB = {"ioengine": "null", "runtime": "200ms"}

pytestmark = pytest.mark.engine  # they run the real engine: what it measures and says


@pytest.fixture(scope="module")
def null_run() -> EngineRun:
    return run_job(NULL_JOB)


def test_find_engine_honours_fslab_engine(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, engine: Path
) -> None:
    named = tmp_path / "my-engine"
    named.symlink_to(engine)
    monkeypatch.setenv("FSLAB_ENGINE", str(named))
    assert find_engine() == named


def test_find_engine_fails_clearly_when_fslab_engine_points_nowhere(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-engine"
    monkeypatch.setenv("FSLAB_ENGINE", str(missing))
    with pytest.raises(EngineError) as err:
        find_engine()
    assert str(missing) in err.value.message
    assert err.value.hint is not None and "FSLAB_ENGINE" in err.value.hint


def test_find_engine_lists_every_place_it_looked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("FSLAB_ENGINE", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(find, "_candidate_dirs", lambda: iter([tmp_path / "a", tmp_path / "b"]))
    with pytest.raises(EngineError) as err:
        find_engine()
    message = err.value.message
    for place in ("$FSLAB_ENGINE", str(tmp_path / "a"), str(tmp_path / "b"), "PATH"):
        assert place in message
    assert err.value.hint is not None and "make setup" in err.value.hint


def test_run_job_returns_a_typed_report(null_run: EngineRun) -> None:
    report = null_run.report
    assert null_run.exit_code == 0
    assert report.schema_version == SCHEMA_VERSION
    assert report.status == "ok" and not report.interrupted
    assert report.job.ioengine == "null" and report.target.kind == "none"
    read = report.result("read")
    assert read is not None and report.result("write") is None
    assert read.ios > 0 and read.bytes == read.ios * report.job.bs
    assert read.lat_ns.min <= read.lat_ns.p50 <= read.lat_ns.p99 <= read.lat_ns.max
    assert report.series.points and report.series.points[-1].read is not None


def test_run_job_streams_each_interval_to_the_callback() -> None:
    points: list[SeriesPoint] = []
    run = run_job({**NULL_JOB, "runtime": "350ms", "interval": "100ms"}, progress_cb=points.append)
    assert len(points) >= 3
    assert all(p.read is not None and p.read.ios > 0 for p in points)
    # The same intervals as the report's series, and none of them among the messages.
    # The report's series has the same intervals (its last one takes in the sliver past
    # the last boundary, which the live lines do not show).
    series = run.report.series.points
    assert len(points) == len(series) and tuple(points[:-1]) == series[:-1]
    assert "t_s" not in run.stderr


def test_run_job_raises_job_error_with_the_engines_words() -> None:
    with pytest.raises(JobError) as err:
        run_job({"rww": "read", "ioengine": "null"})
    assert err.value.exit_status == ExitStatus.USAGE
    assert "error: <stdin>: `rww`: unknown key" in err.value.stderr
    assert "did you mean `rw`" in err.value.stderr
    assert "`rww`" in err.value.message


def test_report_from_json_refuses_a_newer_schema_version(null_run: EngineRun) -> None:
    doc = {**null_run.document, "schema_version": 999}
    with pytest.raises(EngineError) as err:
        Report.from_json(doc)
    assert "999" in err.value.message
    assert err.value.hint is not None and "upgrade fslab" in err.value.hint


def test_report_from_json_names_the_malformed_field(null_run: EngineRun) -> None:
    doc: dict[str, Any] = copy.deepcopy(dict(null_run.document))
    doc["results"][0]["lat_ns"]["p99"] = "fast"
    with pytest.raises(EngineError, match=r"`results\[0\]\.lat_ns\.p99`: expected an integer"):
        Report.from_json(doc)
    doc = copy.deepcopy(dict(null_run.document))
    del doc["cpu"]
    with pytest.raises(EngineError, match="`cpu`: missing"):
        Report.from_json(doc)


def test_report_from_json_round_trips_the_engines_document(null_run: EngineRun) -> None:
    assert Report.from_json(null_run.document) == null_run.report


def _assert_hist_matches(run: EngineRun) -> None:
    assert run.report.results
    for result in run.report.results:
        hist = decode_hist(result.hist)
        lat = result.lat_ns
        assert hist.get_total_count() == result.ios
        # The package's own readings agree exactly where its rank rule cannot differ...
        assert hist.get_value_at_percentile(50) == lat.p50
        assert hist.get_max_value() == lat.max
        assert hist.get_min_value() == lat.min
        assert hist.get_mean_value() == pytest.approx(lat.mean, rel=1e-9)
        # ...and every percentile is identical with the engine's rank, ceil(q x count);
        # the package rounds the rank to nearest and may land one bucket lower.
        for name, pct in (("p50", 50), ("p90", 90), ("p95", 95), ("p99", 99)):
            assert hist_percentile(hist, pct) == getattr(lat, name), name
        assert hist_percentile(hist, 99.9) == lat.p999
        assert hist_percentile(hist, 99.99) == lat.p9999


def test_hist_decodes_to_the_reports_latencies_on_the_null_engine(null_run: EngineRun) -> None:
    _assert_hist_matches(null_run)


def test_hist_decodes_to_the_reports_latencies_on_a_tmpfs_file(shm_file: Path) -> None:
    run = run_job(
        {
            "filename": str(shm_file),
            "size": "8m",
            "rw": "randrw",
            "ioengine": "sync",
            "runtime": "300ms",
        }
    )
    assert {r.op for r in run.report.results} == {"read", "write"}
    _assert_hist_matches(run)


def test_run_job_reads_a_job_file(tmp_path: Path) -> None:
    job = tmp_path / "job.toml"
    job.write_text('ioengine = "null"\nruntime = "100ms"\nbs = "8k"\n')
    run = run_job(job)
    assert run.report.job.bs == 8192
    assert run.report.job.name == "job"


def test_report_from_json_ignores_keys_it_does_not_know(null_run: EngineRun) -> None:
    # The engine may add keys without a schema bump (`fslab-engine schema report`).
    doc: dict[str, Any] = copy.deepcopy(dict(null_run.document))
    doc["new_key"] = 1
    doc["job"]["new_job_key"] = "x"
    doc["results"][0]["lat_ns"]["p99999"] = 5
    assert Report.from_json(doc) == null_run.report


def test_report_from_json_is_strict_about_scalar_types(null_run: EngineRun) -> None:
    for where, key, value, problem in (
        ("job", "bs", True, "expected an integer"),
        ("job", "bs", 4096.0, "expected an integer"),
        ("job", "direct", 0, "expected true or false"),
        ("cpu", "user_s", False, "expected a number"),
        ("cpu", "user_s", "0.1", "expected a number"),
        ("engine", "name", 7, "expected a string"),
    ):
        doc: dict[str, Any] = copy.deepcopy(dict(null_run.document))
        doc[where][key] = value
        with pytest.raises(EngineError, match=rf"`{where}\.{key}`: {problem}"):
            Report.from_json(doc)


def test_report_from_json_reads_absent_or_null_optional_fields_as_none(
    null_run: EngineRun,
) -> None:
    doc: dict[str, Any] = copy.deepcopy(dict(null_run.document))
    doc["job"].pop("size")
    doc["target"]["dio_align_bytes"] = None
    doc.pop("layout", None)
    report = Report.from_json(doc)
    assert report.job.size is None and report.target.dio_align_bytes is None
    assert report.layout is None
    assert isinstance(report.cpu.user_s, float) and isinstance(report.results, tuple)


def test_report_from_json_checks_the_version_before_the_layout(null_run: EngineRun) -> None:
    doc: dict[str, Any] = {**null_run.document, "schema_version": SCHEMA_VERSION + 1}
    del doc["results"]  # a newer layout: refused as newer, not as malformed
    with pytest.raises(EngineError, match="newer than this fslab understands"):
        Report.from_json(doc)
    for version, problem in ((0, "expected 1 or more"), (True, "expected an integer")):
        with pytest.raises(EngineError, match=f"`schema_version`: {problem}"):
            Report.from_json({**null_run.document, "schema_version": version})


def test_run_job_reads_an_application_models_answers(tmp_path: Path) -> None:
    job = {
        "kind": "mailstore",
        "directory": str(tmp_path),
        "runtime": "1s",
        "data_size": "8MiB",
        "log_size": "1MiB",
        "cache_size": "1MiB",
        "direct": False,
        "read_lat_ms_max": 50,
    }
    run = run_job(job)
    report, app = run.report, run.report.app
    assert app is not None and app.model == "mailstore"
    assert report.job.kind == "mailstore" and report.job.op is None
    assert report.job.page_size == 32768 and report.job.read_lat_ms_max == 50.0
    assert app.txn > 0 and app.files.data.read.ios > 0 and app.files.log.write.ios > 0
    assert app.commits.count == app.commits.sync + app.commits.lazy
    assert app.cache.pages == 32 and 0 <= app.cache.hit_ratio <= 1
    assert app.checkpoints and app.checkpoints[-1].last
    assert app.ops is not None and set(app.ops) == {"insert", "delete", "replace", "read"}
    assert app.maintenance is not None and app.jetstress is not None and app.scans is None
    assert app.verdict is not None and app.verdict.passed is (
        all(c.passed for c in app.verdict.checks)
    )
    assert [(c.name, c.max) for c in app.verdict.checks] == [
        ("db_read_lat_ms_mean", 50.0),
        ("log_write_lat_ms_mean", 10.0),
    ]
    # Strict like the rest of the report.
    doc: dict[str, Any] = copy.deepcopy(dict(run.document))
    doc["app"]["verdict"]["checks"][0]["pass"] = 1
    with pytest.raises(EngineError, match=r"`app\.verdict\.checks\[0\]\.pass`: expected true"):
        Report.from_json(doc)


def test_block_and_files_reports_have_no_app_section(null_run: EngineRun) -> None:
    assert null_run.report.app is None
    assert null_run.report.job.kind == "block" and null_run.report.job.op is None


def test_check_job_answers_every_problem_with_its_key() -> None:
    assert check_job(NULL_JOB) == ()
    [depth] = check_job({**NULL_JOB, "iodepth": 0})
    assert depth.key == "iodepth" and "out of range" in depth.message and depth.hint
    [rw] = check_job({**NULL_JOB, "rw": "randomread"})
    assert rw.key == "rw" and rw.hint == "did you mean `randread`?"
    [missing] = check_job({"runtime": "1s"})
    assert missing.key is None and "target" in missing.message


def test_check_job_of_an_engine_without_the_json_answer_is_an_engine_error(
    tmp_path: Path,
) -> None:
    fake = tmp_path / "engine.sh"
    fake.write_text("#!/bin/sh\necho 'error: nope' >&2\nexit 2\n")
    fake.chmod(0o755)
    with pytest.raises(EngineError) as e:
        check_job(NULL_JOB, engine=fake, what="the job `x`")
    assert "refused the job without the JSON answer" in e.value.message
    assert "while checking the job `x`" in e.value.message and "error: nope" in e.value.message
