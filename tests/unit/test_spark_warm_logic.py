"""When a data command attaches to the warm Spark server, and the settings that choose it
(offsetkeeper.spark.warm; the server's life: tests/integration/test_spark_warm.py)."""

from __future__ import annotations

import json
import os
import stat

import pytest

from offsetkeeper.backup.config import build_backup_config
from offsetkeeper.config.file import ConfigFile
from offsetkeeper.errors import ConfigError, UsageError
from offsetkeeper.spark import background, warm
from offsetkeeper.spark.session import hide_token
from offsetkeeper.storage import absolute


@pytest.mark.parametrize(("value", "on"), [(None, True), ("1", True), ("yes", True),
                                           ("0", False), ("false", False), (" OFF ", False)])
def test_enabled_by_the_variable(monkeypatch, value, on):
    if value is None:
        monkeypatch.delenv(warm.WARM_ENV, raising=False)
    else:
        monkeypatch.setenv(warm.WARM_ENV, value)
    assert warm.enabled() is on


def test_idle_timeout(monkeypatch):
    monkeypatch.delenv(warm.IDLE_ENV, raising=False)
    assert warm.idle_timeout() == 1800
    monkeypatch.setenv(warm.IDLE_ENV, "2.5")
    assert warm.idle_timeout() == 2.5
    for bad in ("soon", "-1"):
        monkeypatch.setenv(warm.IDLE_ENV, bad)
        with pytest.raises(ConfigError, match=f"{warm.IDLE_ENV}='{bad}' is not a number"):
            warm.idle_timeout()


@pytest.mark.spark_oldest
def test_connect_client_check_on_every_supported_pyspark():
    """Regression: pyspark 4.0's check_dependencies takes the caller's module name (4.1 takes
    none); calling it without one raised TypeError in the warm path's import thread, a traceback
    on every command's stderr. With the client installed, the check finds nothing missing."""
    assert warm._import_client() is None


def test_settings_of_its_own_keep_spark_in_process():
    """A command with Spark settings (or the Kafka connector) cannot use the warm server,
    which was started with its own; with none it can."""
    assert warm.why_not({}, False) is None
    assert "Spark settings" in warm.why_not({"spark.driver.memory": "4g"}, False)
    assert "Kafka connector" in warm.why_not({}, True)


def test_config_master_only_when_named_and_the_warm_switch():
    """The main config's default master (local[*]) does not count as a choice (the warm server
    and SPARK_REMOTE stay possible); a master it names does; spark.warm reaches the run."""
    args = {"bootstrap_server": "k:9092", "include": ("t",), "destination": "/b", "backup_id": "x"}
    assert build_backup_config(config=ConfigFile(), **args).master is None
    assert build_backup_config(config=ConfigFile(), **args).spark_warm is True
    named = ConfigFile.model_validate({"spark": {"master": "local[*]", "warm": False}})
    cfg = build_backup_config(config=named, **args)
    assert cfg.master == "local[*]" and cfg.spark_warm is False


def test_local_paths_made_absolute(tmp_path, monkeypatch):
    """Spark tasks on the warm server run in its directory: a relative path must not follow."""
    monkeypatch.chdir(tmp_path)
    assert absolute("backups") == os.path.join(str(tmp_path), "backups")
    assert absolute("s3://bucket/backups") == "s3://bucket/backups"
    assert absolute("/abs/path") == "/abs/path"


# --- the server's token (offsetkeeper.spark.background; the server refusing sessions without it:
# tests/integration/test_spark_warm.py)


def test_token_file_is_owner_only_from_its_creation(tmp_path):
    """Invariant: the token file is created 0600 (a temporary file made 0600, then renamed), so
    it is never readable by others, even with a umask that lets everything through; every start
    makes a new random token, and no temporary file stays behind."""
    d = tmp_path / "state"
    background.private_dir(d)
    old = os.umask(0)
    try:
        first = background.write_token(d)
        second = background.write_token(d)
    finally:
        os.umask(old)
    f = d / background.TOKEN_FILE
    assert stat.S_IMODE(f.stat().st_mode) == 0o600
    assert f.read_text() == second and first != second and len(second) >= 43
    assert sorted(p.name for p in d.iterdir()) == [background.TOKEN_FILE]


def test_state_dir_made_owner_only(tmp_path):
    """Invariant: the state directory (token, logs) is 0700, also when it existed with a wider
    mode (an older offsetkeeper's); a shared directory is refused, not re-moded."""
    fresh, existing = tmp_path / "a" / "state", tmp_path / "b"
    existing.mkdir(mode=0o755)
    os.chmod(existing, 0o755)
    for d in (fresh, existing):
        background.private_dir(d)
        assert stat.S_IMODE(d.stat().st_mode) == 0o700
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)  # as /tmp: refused, never re-moded
    with pytest.raises(UsageError, match="is not yours alone"):
        background.private_dir(shared)
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777


def test_a_server_without_a_token_file_is_not_one_to_use(tmp_path):
    """A state file of an older offsetkeeper (no token file) or whose token file is gone reads
    as a server that takes no token (`token_file` empty: replaced, never attached to)."""
    d = tmp_path / "s"
    d.mkdir()
    state = {"pid": os.getpid(), "port": 1, "url": "sc://127.0.0.1:1", "identity": {}}
    (d / "state.json").write_text(json.dumps(state))
    st = background.server_status(d)
    assert st.token_file == "" and background.read_token(st) is None
    (d / "state.json").write_text(json.dumps({**state, "token_file": str(d / "token")}))
    assert background.server_status(d).token_file == ""  # named, but missing
    (d / "token").write_text("t0k\n")
    st = background.server_status(d)
    assert st.token_file == str(d / "token") and background.read_token(st) == "t0k"
    assert "t0k" not in json.dumps(st.to_dict())


def test_client_url_and_hidden_token():
    """The token rides in the URL pyspark's client gets, never in one that is shown."""
    assert background.client_url("sc://localhost:15002", "abc") == "sc://localhost:15002/;token=abc"
    assert background.client_url("sc://localhost:15002/", None) == "sc://localhost:15002/"
    assert hide_token("sc://localhost:1/;token=abc", "abc") == "sc://localhost:1/;token=***"
    assert hide_token("sc://h:1/;user_id=u;Token=xyz;use_ssl=true") == \
        "sc://h:1/;user_id=u;Token=***;use_ssl=true"
    assert hide_token("failed: bearer abc rejected", "abc") == "failed: bearer *** rejected"


def test_token_setting_refused(tmp_path):
    """`--conf spark.connect.authenticate.token=...` would win over the token of the start (and
    put it on the JVM's command line): bad input, refused before anything starts."""
    with pytest.raises(UsageError, match="spark.connect.authenticate.token cannot be given"):
        background.start_background(1, conf={background.TOKEN_CONF: "x"}, state_dir=tmp_path / "s")
    assert not (tmp_path / "s").exists()


def test_server_refuses_to_start_without_a_token(monkeypatch, capsys):
    """Invariant: the server process never listens without a token to check."""
    from offsetkeeper.spark import server

    monkeypatch.delenv(background.TOKEN_ENV, raising=False)
    with pytest.raises(SystemExit) as exc:
        server.main(["--port", "1"])
    assert exc.value.code == 2
    assert f"{background.TOKEN_ENV} is not set" in capsys.readouterr().err
