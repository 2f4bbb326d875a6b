"""Secrets from configs never appear in output, logs or errors."""

import pytest

from tests.cli import run_cli

pytestmark = pytest.mark.integration

SECRET = "hunter2-very-secret"


def test_password_not_shown_on_failure(capsys, tmp_path):
    props = tmp_path / "client.properties"
    props.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
                     f"sasl.username=ops\nsasl.password={SECRET}\nsocket.timeout.ms=1500\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"clusters:\n  prod:\n    bootstrap_servers: 127.0.0.1:1\n    command_config: {props}\n"
                   f"    properties:\n      ssl.key.password: {SECRET}\n")
    r = run_cli(capsys, "groups", "list", "--config", cfg, "--cluster", "prod")
    assert r.code == 1
    assert SECRET not in r.out + r.err


def test_unknown_config_key_error_does_not_echo_values(capsys, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"clusters:\n  prod:\n    bootstrap_servers: x:1\n    pasword: {SECRET}\n")
    r = run_cli(capsys, "groups", "list", "--config", cfg, "--cluster", "prod")
    assert r.code == 2 and "unknown key 'clusters.prod.pasword'" in r.err
    assert SECRET not in r.out + r.err
