"""`offsetkeeper dev-broker start|status|stop` runs and stops a real Apache Kafka (KRaft)."""

import pytest

from offsetkeeper.devbroker import free_port
from tests.cli import run_cli

pytestmark = pytest.mark.integration


def test_start_status_stop(capsys, tmp_path):
    port = free_port()
    d = tmp_path / "b"
    r = run_cli(capsys, "dev-broker", "start", "--port", port, "--data-dir", d, "-o", "json")
    try:
        assert r.code == 0, r.err
        assert r.json()["bootstrap"] == f"127.0.0.1:{port}" and r.json()["running"]
        r = run_cli(capsys, "groups", "list", "-b", f"127.0.0.1:{port}", "-o", "json")
        assert r.code == 0 and r.json() == []
        r = run_cli(capsys, "dev-broker", "status", "--data-dir", d, "-o", "json")
        assert r.code == 0 and r.json()["running"]
    finally:
        r = run_cli(capsys, "dev-broker", "stop", "--data-dir", d, "-o", "json")
    assert r.code == 0 and not r.json()["running"]
    r = run_cli(capsys, "dev-broker", "status", "--data-dir", d)
    assert r.code == 1


def test_bad_port(capsys, tmp_path):
    r = run_cli(capsys, "dev-broker", "start", "--port", "70000", "--data-dir", tmp_path)
    assert r.code == 2 and "--port 70000" in r.err
