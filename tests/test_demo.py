"""`make demo`'s driver: every section's rows in one table, each figure's path printed, and
one failing section reported without hiding the others (the sections are stubbed here;
their own tests run them for real)."""

from __future__ import annotations

import importlib

import pytest

from rlsuite import demo


@pytest.fixture
def stubbed(monkeypatch):
    from rlsuite.platform import cluster

    monkeypatch.setattr(cluster, "init", lambda *a, **k: None)
    monkeypatch.setattr(cluster, "shutdown", lambda *a, **k: None)
    ran = []

    def section(name, pngs=()):
        def run():
            ran.append(name)
            return [dict(app=name, task="t", controller="c", metric="m", value=1.5,
                         pngs=list(pngs))]  # fmt: skip

        return run

    monkeypatch.setattr(demo, "platform_demo", section("platform", ["runs/x/curve.png"]))
    modules = ["rlsuite.apps.traffic.demo", "rlsuite.apps.queryopt.demo",
               "rlsuite.apps.queryopt.spark_demo", "rlsuite.apps.hierarchy.demo"]  # fmt: skip
    for m in modules:
        monkeypatch.setattr(importlib.import_module(m), "run", section(m, [f"{m}.png"]))
    return ran, modules


def test_every_section_runs_and_every_figure_is_listed(stubbed, capsys):
    ran, modules = stubbed
    assert demo.main() == 0
    assert ran == ["platform", *modules]  # Spark's section right after PostgreSQL's
    out = capsys.readouterr().out
    listed = out.split("figures written:")[1]
    for p in ["curve.png", *[f"{m}.png" for m in modules]]:
        assert p in listed
    assert "rlsuite.apps.queryopt.spark_demo" in out.split("figures written:")[0]  # its row


def test_a_failing_section_is_reported_and_the_others_still_shown(stubbed, monkeypatch, capsys):
    ran, modules = stubbed

    def broken():
        raise RuntimeError("Java is missing")

    monkeypatch.setattr(importlib.import_module("rlsuite.apps.queryopt.spark_demo"), "run", broken)
    assert demo.main() == 1
    out = capsys.readouterr().out
    assert "queryopt on Spark demo failed" in out and "Java is missing" in out
    assert "failed: queryopt on Spark" in out
    assert ran == ["platform", modules[0], modules[1], modules[3]]
