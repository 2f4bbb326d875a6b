"""The dashboard's streaming checkpoint pages against the real broker: status codes, the JSON
against checkpoints in the format of Spark's JVM Kafka source (tests/streaming_support.py) and
one written by a real Spark streaming query, error rows for missing or corrupt checkpoints,
names as data, the `ui.checkpoints` config and `--checkpoint` flag."""

from __future__ import annotations

import warnings

import pytest

from offsetkeeper.errors import UsageError
from offsetkeeper.web.checkpoints import CheckpointEntry, entries, entry_from_flag
from tests.backup_support import delete_records
from tests.streaming_support import jvm_checkpoint, minute_topic
from tests.web_support import make_app

warnings.filterwarnings("ignore", message=".*httpx.*", category=DeprecationWarning)
from starlette.testclient import TestClient  # noqa: E402

pytestmark = pytest.mark.integration
EVIL = "<script>alert(1)</script>[/]"


def client(app) -> TestClient:
    return TestClient(app, base_url="http://127.0.0.1")


@pytest.fixture
def topic(bootstrap, unique):
    """2 partitions x 20 records, one a minute up to about now; log start of partition 1 is 4."""
    t = minute_topic(bootstrap, unique("ck"))
    delete_records(bootstrap, t, 1, 4)
    return t


@pytest.fixture
def setup(bootstrap, topic, tmp_path):
    """A healthy checkpoint (batch 1 committed at 12/9, batch 2 pending), a missing one, a
    corrupt one, one named like an XSS attempt, one on an unknown cluster."""
    good = jvm_checkpoint(tmp_path / "good", {0: {topic: {"0": 5, "1": 7}},
                                              1: {topic: {"0": 12, "1": 9}},
                                              2: {topic: {"0": 15, "1": 15}}}, commits=[0, 1])
    bad = tmp_path / "corrupt"
    (bad / "offsets").mkdir(parents=True)
    (bad / "metadata").write_text('{"id":"q-1"}')
    (bad / "offsets" / "0").write_text("this is not an offset log")
    evil = jvm_checkpoint(tmp_path / "evil", {0: {topic: {"0": 20, "1": 20}}}, commits=[0])
    cks = (CheckpointEntry("orders-job", good), CheckpointEntry("gone", str(tmp_path / "nope")),
           CheckpointEntry("corrupt", str(bad)), CheckpointEntry(EVIL, evil),
           CheckpointEntry("elsewhere", good, cluster="dr"),
           CheckpointEntry("s3-no-s3fs", "nosuch://bucket/ck"))
    return client(make_app(bootstrap, tmp_path, checkpoints=cks))


def test_checkpoints_list_json_and_error_rows(setup, topic):
    """Invariant: every configured checkpoint gets a row; a missing, corrupt or unreachable
    one is a row with its error (HTTP 200), never a failed page; lag = log end - position."""
    r = setup.get("/checkpoints?format=json")
    assert r.status_code == 200
    rows = {c["name"]: c for c in r.json()["checkpoints"]}
    assert list(rows) == ["orders-job", "gone", "corrupt", EVIL, "elsewhere", "s3-no-s3fs"]
    odd = rows["s3-no-s3fs"]
    assert odd["status"] == "ERROR" and "cannot open checkpoint nosuch://bucket/ck" in odd["error"]
    good = rows["orders-job"]
    assert good["status"] == "PENDING" and good["error"] is None
    assert (good["latest_batch"], good["last_committed_batch"], good["pending_batch"]) == (2, 1, 2)
    assert good["query_id"] == "0c3a1d2e-5f6a-4b7c-8d9e-0f1a2b3c4d5e"
    assert good["total_lag"] == (20 - 12) + (20 - 9)
    assert good["topics"] == [{"topic": topic, "partitions": 2, "lag": 19}]
    assert good["cluster"] == "default" and good["last_change"]
    assert rows[EVIL]["status"] == "OK" and rows[EVIL]["total_lag"] == 0
    gone, corrupt = rows["gone"], rows["corrupt"]
    assert gone["status"] == "ERROR" and "does not exist" in gone["error"]
    assert corrupt["status"] == "ERROR" and "not a Spark offset log file" in corrupt["error"]
    assert gone["total_lag"] is None and gone["topics"] == []
    # The checkpoint is readable, its cluster is not configured: its facts plus the error.
    other = rows["elsewhere"]
    assert other["status"] == "ERROR" and "cluster 'dr' is not configured" in other["error"]
    assert other["latest_batch"] == 2 and other["total_lag"] is None


def test_checkpoints_html_escapes_names_and_shows_errors(setup):
    page = setup.get("/checkpoints")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "<script>alert(1)" not in page.text and "&lt;script&gt;alert(1)&lt;/script&gt;[/]" in page.text
    assert page.text.count('class="error-row"') == 4 and "does not exist" in page.text
    assert 'href="/checkpoints">Checkpoints</a>' in page.text           # in the nav
    assert 'href="/checkpoints/0"' in page.text and ">19<" in page.text   # total lag


def test_checkpoint_detail(setup, topic):
    """Per partition: the committed batch's end offset, log start/end, lag, time lag."""
    r = setup.get("/checkpoints/0?format=json")
    assert r.status_code == 200
    d = r.json()["checkpoint"]
    assert d["batch"] == 1 and d["position_from"] == "offsets/1 (committed)"
    assert d["batch_time"] == "2023-11-14T22:13:20.000Z"   # batchTimestampMs of the batch
    parts = {p["partition"]: p for p in d["partitions"]}
    assert parts[0] | {"time_lag_s": None} == {
        "topic": topic, "partition": 0, "offset": 12, "pending_offset": 15, "log_start": 0,
        "log_end": 20, "lag": 8, "time_lag_s": None}
    assert (parts[1]["offset"], parts[1]["log_start"], parts[1]["lag"]) == (9, 4, 11)
    # record 12 of partition 0 was written ~8 minutes before now
    assert 7 * 60 < parts[0]["time_lag_s"] < 9 * 60 + 60
    assert "offsetkeeper streaming reset" in d["commands"]["reset"]
    html = setup.get("/checkpoints/0").text
    assert 'id="partitions-table"' in html and "offsets/1 (committed)" in html
    assert "batch 2 was planned but not committed" in html


def test_checkpoint_detail_errors_and_status_codes(setup):
    gone = setup.get("/checkpoints/1?format=json")
    assert gone.status_code == 200
    d = gone.json()["checkpoint"]
    assert d["line"]["status"] == "ERROR" and "does not exist" in d["line"]["error"]
    assert d["partitions"] == [] and d["commands"]["lag"].startswith("offsetkeeper streaming lag")
    page = setup.get("/checkpoints/2")
    assert page.status_code == 200 and 'id="checkpoint-error"' in page.text
    evil = setup.get("/checkpoints/3").text
    assert "<script>alert(1)" not in evil and "&lt;script&gt;" in evil
    # Unreachable cluster: the checkpoint's own offsets, no log positions.
    other = setup.get("/checkpoints/4?format=json").json()["checkpoint"]
    assert [p["offset"] for p in other["partitions"]] == [12, 9]
    assert {p["lag"] for p in other["partitions"]} == {None}
    for bad in ("/checkpoints/9", "/checkpoints/x", "/checkpoints/-1"):
        r = setup.get(bad + "?format=json")
        assert r.status_code == 404 and "not configured" in r.json()["error"], bad
    assert setup.post("/checkpoints").status_code == 405


def test_no_checkpoints_configured(bootstrap, tmp_path):
    c = client(make_app(bootstrap, tmp_path))
    assert c.get("/checkpoints?format=json").json() == {"checkpoints": []}
    page = c.get("/checkpoints")
    assert page.status_code == 200 and "No checkpoint configured" in page.text
    assert 'href="/checkpoints"' not in c.get("/c/default/snapshots").text   # not in the nav
    assert c.get("/checkpoints/0").status_code == 404


def test_token_required_for_checkpoints(bootstrap, tmp_path, setup):
    c = client(make_app(bootstrap, tmp_path, token="tok-x1",
                        checkpoints=(CheckpointEntry("a", str(tmp_path / "good")),)))
    assert c.get("/checkpoints?format=json").status_code == 401
    assert c.get("/checkpoints/0?format=json").status_code == 401
    assert c.get("/checkpoints?format=json",
                 headers={"Authorization": "Bearer tok-x1"}).status_code == 200


@pytest.mark.spark
def test_checkpoint_of_a_real_spark_query(spark, bootstrap, topic, tmp_path):
    """A checkpoint written by a real Structured Streaming query (offsetkeeper-kafka source,
    AvailableNow, 10 offsets per batch): the page shows Spark's last batch and zero lag."""
    from offsetkeeper.spark.kafka import register

    register(spark)
    ck, out = str(tmp_path / "spark-ck"), str(tmp_path / "out")
    q = (spark.readStream.format("offsetkeeper-kafka").option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", topic).option("startingOffsets", "earliest")
         .option("maxOffsetsPerTrigger", "10").load().select("partition", "offset")
         .writeStream.format("parquet").option("path", out).option("checkpointLocation", ck)
         .trigger(availableNow=True).start())
    q.awaitTermination()
    last = max(p["batchId"] for p in q.recentProgress)
    c = client(make_app(bootstrap, tmp_path, checkpoints=(CheckpointEntry("spark-job", ck),)))
    (row,) = c.get("/checkpoints?format=json").json()["checkpoints"]
    assert row["status"] == "OK" and row["query_id"] == q.id
    assert row["last_committed_batch"] == row["latest_batch"] >= last
    assert row["total_lag"] == 0
    d = c.get("/checkpoints/0?format=json").json()["checkpoint"]
    ends = {p["partition"]: (p["offset"], p["log_start"], p["log_end"]) for p in d["partitions"]}
    assert ends == {0: (20, 0, 20), 1: (20, 4, 20)}


def test_checkpoint_settings_from_config_and_flag(tmp_path):
    """`ui.checkpoints` entries then `--checkpoint [NAME=]PATH`; bad settings exit 2."""
    from offsetkeeper.config import UiCheckpointModel

    assert entry_from_flag("/data/ck/orders/") == CheckpointEntry("orders", "/data/ck/orders/")
    assert entry_from_flag("job=s3://b/ck") == CheckpointEntry("job", "s3://b/ck")
    assert entry_from_flag("s3://b/dt=1/ck") == CheckpointEntry("ck", "s3://b/dt=1/ck")
    cfg = [UiCheckpointModel(path="/chk/orders", cluster="prod"),
           UiCheckpointModel(path="/chk/x", name="x-job", source=1)]
    got = entries(cfg, ("/chk/payments",), ["prod"])
    assert got == (CheckpointEntry("orders", "/chk/orders", "prod"),
                   CheckpointEntry("x-job", "/chk/x", None, 1),
                   CheckpointEntry("payments", "/chk/payments"))
    with pytest.raises(UsageError, match="cluster 'dr' is not configured"):
        entries([UiCheckpointModel(path="/a", cluster="dr")], (), ["prod"])
    with pytest.raises(UsageError, match="'orders' is given twice"):
        entries(cfg, ("/other/orders",), ["prod"])
    with pytest.raises(UsageError, match="names no path"):
        entry_from_flag("job=")
    with pytest.raises(UsageError, match="empty path"):
        entries([UiCheckpointModel(path=" ")], (), [])
