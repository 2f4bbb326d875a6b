"""Dashboard items of issue 31 (found by an attacker): the wizard accepts only the targets it
documents (G), a hostile snapshot store freezes nobody (F), and a backup destination whose
filesystem package is missing is a clear page (K). Against the real broker."""

from __future__ import annotations

import os
import socket
import threading
import warnings

import pytest

from tests.kafkatools import commit, create_topic
from tests.web_support import csrf_of, make_app

warnings.filterwarnings("ignore", message=".*httpx.*", category=DeprecationWarning)
from starlette.testclient import TestClient  # noqa: E402

pytestmark = pytest.mark.integration


def client(app) -> TestClient:
    return TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False)


class _Listener:
    """A TCP port that counts the connections made to it (what the server would dial)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(50)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._t.join(5)
        self.sock.close()


@pytest.mark.parametrize("kind, field", [("from-zookeeper", "value_from-zookeeper"),
                                         ("to-commit-time", "value_to-commit-time")])
def test_the_wizard_refuses_targets_it_does_not_offer(bootstrap, unique, tmp_path, kind, field):
    """Invariant (issue 31 G): the wizard accepts only the targets docs/dashboard.md lists; a
    form naming another (--from-zookeeper HOST:PORT) is a 400 that names the offered targets,
    and the server opens no connection to the address the browser gave."""
    t, g = unique("wiz"), unique("g")
    create_topic(bootstrap, t, 1)
    commit(bootstrap, g, {(t, 0): 0})
    lst = _Listener()
    try:
        c = client(make_app(bootstrap, tmp_path))
        page = c.get(f"/c/default/reset?g={g}")
        assert page.status_code == 200
        assert f'value="{kind}"' not in page.text  # not offered
        r = c.post("/c/default/reset/preview",
                   data={"csrf": csrf_of(page.text), "groups": g, "topics": t, "kind": kind,
                         field: f"127.0.0.1:{lst.port}"})
        assert r.status_code == 400, r.text
        assert "is not offered here" in r.text and "to-earliest" in r.text
    finally:
        lst.close()
    assert lst.accepted == 0


def test_a_fifo_in_the_snapshot_store_freezes_no_page(bootstrap, unique, tmp_path):
    """Invariant (issue 31 F): a FIFO (and a symlink to /dev/zero) in the snapshot store is an
    error row on the snapshots page; the wizard's page, /api/csrf and /login still answer."""
    store = tmp_path / "snapshots"
    store.mkdir()
    os.mkfifo(store / "snap-20261121T194501.123Z-1a2b.json")
    (store / "snap-20261121T194501.124Z-1a2b.json").symlink_to("/dev/zero")
    c = client(make_app(bootstrap, tmp_path))
    r = c.get("/c/default/snapshots")
    assert r.status_code == 200
    assert "not a regular file" in r.text and "symbolic link" in r.text
    assert c.get(f"/c/default/reset?g={unique('g')}").status_code == 200
    assert c.get("/api/csrf").status_code == 200 and c.get("/login").status_code == 200


def test_a_backup_on_a_store_without_its_package_is_a_clear_page(bootstrap, tmp_path):
    """Invariant (issue 31 K): /backups/0/ID for an s3:// destination without s3fs installed is a
    503 page saying a filesystem package is missing, never "internal error"."""
    try:
        import s3fs  # noqa: F401
        pytest.skip("s3fs is installed: the missing-package case cannot happen here")
    except ImportError:
        pass
    c = client(make_app(bootstrap, tmp_path, backup_destinations=("s3://bucket/backups",)))
    r = c.get("/backups/0/b1")
    assert r.status_code == 503, r.text
    assert "filesystem package is missing" in r.text and "internal error" not in r.text
