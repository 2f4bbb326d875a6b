"""Notifications of status changes to an HTTP webhook, Burrow's notifier way: an **open** event
when a group's status reaches its threshold, a **close** event when it falls back below it (an
open incident whose status changes, WARN to ERR, sends another open with the new status).

    rules      `PATTERN=LEVEL` (fnmatch on the group id; the first match wins, `*=warn` last by
               default): LEVEL is `warn` (WARN or ERR open an incident), `err` (ERR only) or
               `off` (never notify about these groups)
    templates  `slack` (a Slack-compatible body: `text` and one attachment colored by status),
               `generic` (event, cluster, group, status, reason, totals, time), or a file: a JSON
               body with `$group`, `$status`, `$event`, `$reason`, `$cluster`, `$total_lag`,
               `$max_time_lag_s`, `$time` placeholders (`string.Template`; each value is put in
               JSON-escaped, so write `"$group"` inside quotes for strings)
    state      per group the last status notified (`HistoryStore.notify_state` /
               `save_notify_state`): a restarted sampler sends nothing it sent already. A
               delivery that fails (no answer, not 2xx) changes no state: the event is sent
               again next cycle, so nothing is lost either.

Pure decisions (`decide`) apart from delivery (`post`), tested with a real HTTP server.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from offsetkeeper.errors import UsageError
from offsetkeeper.history.status import GroupStatus, Status
from offsetkeeper.times import iso_ms

log = logging.getLogger("offsetkeeper.history.notify")

LEVELS = ("warn", "err", "off")
TEMPLATES = ("slack", "generic")
_RANK = {Status.OK: 0, Status.WARN: 1, Status.ERR: 2}
_COLORS = {"OK": "good", "WARN": "warning", "ERR": "danger"}


@dataclass(frozen=True)
class Rule:
    pattern: str
    level: str  # warn, err, off


def parse_rules(texts: Iterable[str]) -> tuple[Rule, ...]:
    """`PATTERN=LEVEL` rules (UsageError naming the bad one); `*=warn` is always the last."""
    out = []
    for t in texts:
        pattern, sep, level = t.rpartition("=")
        level = level.strip().lower()
        if not sep or not pattern.strip() or level not in LEVELS:
            raise UsageError(f"--notify-threshold '{t}' is not PATTERN=LEVEL (LEVEL: "
                             f"{', '.join(LEVELS)}; e.g. 'payments-*=err')")
        out.append(Rule(pattern.strip(), level))
    return (*out, Rule("*", "warn"))


def level_for(group: str, rules: Sequence[Rule]) -> str:
    return next((r.level for r in rules if fnmatch.fnmatchcase(group, r.pattern)), "warn")


@dataclass(frozen=True)
class Event:
    """One notification: `open` (status reached the threshold, or changed while open) or
    `close` (back below it)."""

    event: str
    status: GroupStatus

    @property
    def group(self) -> str:
        return self.status.group


def decide(statuses: Iterable[GroupStatus], notified: Mapping[str, str],
           rules: Sequence[Rule]) -> list[Event]:
    """The events to send, given each group's last notified status (`notified`: group ->
    "WARN"/"ERR" while an incident is open; absent or "OK" when none is). A group without a
    verdict yet (a young window) opens nothing."""
    out = []
    for st in statuses:
        level = level_for(st.group, rules)
        need = {"warn": 1, "err": 2}.get(level)
        rank = _RANK.get(st.status, 0)
        open_now = need is not None and rank >= need and not st.undecided
        before = notified.get(st.group, "OK")
        if open_now and before != str(st.status):
            out.append(Event("open", st))
        elif not open_now and before != "OK" and not st.undecided:
            out.append(Event("close", st))
    return out


def _fields(ev: Event, cluster: str) -> dict:
    st = ev.status
    return {"event": ev.event, "cluster": cluster, "group": st.group, "status": str(st.status),
            "reason": st.reason, "total_lag": st.total_lag,
            "max_time_lag_s": round(st.max_time_lag_s, 3), "time": iso_ms(st.last_sample)}


def render(ev: Event, cluster: str, template: str) -> bytes:
    """The request body of one event for `template` (slack, generic, or a template file)."""
    f = _fields(ev, cluster)
    if template == "generic":
        return json.dumps(f).encode()
    if template == "slack":
        verb = "resolved" if ev.event == "close" else f["status"]
        return json.dumps({
            "text": f"[{cluster}] consumer group {f['group']}: {verb}",
            "attachments": [{"color": _COLORS.get(f["status"], "warning"),
                             "title": f"{f['group']} is {f['status']}",
                             "text": f["reason"],
                             "fields": [{"title": "total lag", "value": str(f["total_lag"]),
                                         "short": True},
                                        {"title": "time lag (s)", "value": str(f["max_time_lag_s"]),
                                         "short": True}],
                             "ts": (ev.status.last_sample or 0) // 1000}]}).encode()
    text = Path(template).read_text(encoding="utf-8")
    # values go in JSON-escaped, without their quotes: "$group" in the file is a JSON string
    values = {k: json.dumps(v)[1:-1] if isinstance(v, str) else json.dumps(v) for k, v in f.items()}
    return string.Template(text).safe_substitute(values).encode()


def check_template(template: str) -> str:
    """`slack`, `generic` or a readable template file (UsageError otherwise)."""
    if template in TEMPLATES:
        return template
    p = Path(template)
    if not p.is_file():
        raise UsageError(f"--notify-template '{template}' is neither slack, generic nor a file")
    return str(p)


def post(url: str, body: bytes, *, timeout: float = 10.0) -> str | None:
    """POST the body as JSON; None when the server answered 2xx, else why not."""
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return None if 200 <= resp.status < 300 else f"HTTP {resp.status}"
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError) as exc:
        return str(getattr(exc, "reason", exc))


@dataclass
class Notifier:
    """Sends the events of each evaluation and keeps what it sent in the store."""

    url: str
    store: object  # a HistoryStore
    cluster: str
    template: str = "slack"
    rules: tuple[Rule, ...] = (Rule("*", "warn"),)

    def observe(self, statuses: Sequence[GroupStatus]) -> list[Event]:
        """Send what changed; the events delivered (a failed one is tried again next time)."""
        notified = self.store.notify_state()  # type: ignore[attr-defined]
        sent = []
        for ev in decide(statuses, notified, self.rules):
            why = post(self.url, render(ev, self.cluster, self.template))
            if why is not None:
                from offsetkeeper.redact import mask_url

                log.warning("notification %s of group %r not delivered to %s: %s", ev.event,
                            ev.group, mask_url(self.url), why)
                continue
            self.store.save_notify_state(  # type: ignore[attr-defined]
                ev.group, "OK" if ev.event == "close" else str(ev.status.status))
            sent.append(ev)
        return sent
