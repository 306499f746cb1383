"""deploy/prometheus/alerts.yml and deploy/grafana/memoryadmin.json: valid, and every metric
they name is one this application exports."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from memoryadmin.observability import gauges, metrics

ROOT = Path(__file__).resolve().parents[2]
ALERTS = ROOT / "deploy/prometheus/alerts.yml"
ALERT_TESTS = Path(__file__).resolve().parent / "alerts_test.yml"
DASHBOARD = ROOT / "deploy/grafana/memoryadmin.json"
NAMED = re.compile(r"\bmemoryadmin_[a-z0-9_]+")


def exported_names() -> set[str]:
    """What a scrape can hold: the gauges, each counter's `_total`, the histogram's series."""
    names = set(gauges.GAUGES)
    histogram = "memoryadmin_agent_request_seconds"
    names.update(histogram + suffix for suffix in ("_bucket", "_count", "_sum"))
    for metric in (
        metrics.EXTRACTION_JOBS,
        metrics.EXTRACTION_FACTS,
        metrics.ERASURES,
        metrics.WRITE_FILTER_BLOCKED,
        metrics.WEBHOOK_DELIVERIES,
    ):
        for family in metric.collect():
            names.add(family.name + "_total")
    return names


def test_every_alert_expression_names_metrics_that_exist():
    rules = [
        rule for group in yaml.safe_load(ALERTS.read_text())["groups"] for rule in group["rules"]
    ]
    names = exported_names()
    assert {rule["alert"] for rule in rules} >= {
        "MemoryTierOneSlow",
        "MemoryExtractionQueueOld",
        "MemorySweepLagging",
        "MemoryPrivacyRequestsOverdue",
        "MemoryWebhookRecipientFailing",
        "MemoryQualityLow",
    }
    for rule in rules:
        used = set(NAMED.findall(rule["expr"]))
        assert used and used <= names, (rule["alert"], used - names)
        assert rule["labels"]["severity"] and rule["annotations"]["summary"]
    by_name = {rule["alert"]: rule for rule in rules}
    assert "> 0.05" in by_name["MemoryTierOneSlow"]["expr"]
    assert by_name["MemoryTierOneSlow"]["for"] == "5m"
    assert "> 600" in by_name["MemoryExtractionQueueOld"]["expr"]
    assert "> 7200" in by_name["MemorySweepLagging"]["expr"]
    assert by_name["MemoryQualityLow"]["expr"] == "memoryadmin_memory_precision_upper < 0.9"


def _promtool(*args: str, cwd: Path | None = None) -> str:
    """promtool's output, asserted successful. promtool comes with Debian's `prometheus`
    package (`bash .ci/run` puts it on PATH)."""
    promtool = os.environ.get("PROMTOOL") or shutil.which("promtool")
    if not promtool:
        pytest.skip("promtool is not installed here; `bash .ci/run` installs it")
    result = subprocess.run(  # noqa: S603 - a fixed argv
        [promtool, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def test_promtool_accepts_the_alert_rules():
    assert "SUCCESS" in _promtool("check", "rules", str(ALERTS))


def test_promtool_unit_tests_of_the_alert_rules_pass():
    """alerts_test.yml: MemoryQualityLow fires once the upper bound has stayed under 0.9 for
    an hour, and not for a bound of 0.94."""
    assert "SUCCESS" in _promtool("test", "rules", ALERT_TESTS.name, cwd=ALERT_TESTS.parent)


def test_the_dashboard_shows_its_panels_over_metrics_that_exist():
    dashboard = json.loads(DASHBOARD.read_text())
    names = exported_names()
    titles = [panel["title"] for panel in dashboard["panels"]]
    for wanted in (
        "p50",
        "p99",
        "Extraction outcomes",
        "queue",
        "sweep lag",
        "Erasures",
        "Privacy requests due",
        "Memory precision",
    ):
        assert any(wanted.lower() in title.lower() for title in titles), wanted
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            used = set(NAMED.findall(target["expr"]))
            assert used and used <= names, (panel["title"], used - names)
    # Portable: the data source is chosen on import, not a uid of someone's Grafana.
    assert dashboard["templating"]["list"][0]["type"] == "datasource"
