"""`offsetkeeper exporter`: Prometheus metrics with kafka-lag-exporter's names."""

from __future__ import annotations

from typing import Annotated

import typer

from offsetkeeper.cli.common import (
    BootstrapOpt,
    ClusterOpt,
    CommandConfigOpt,
    ConfigOpt,
    connection,
    duration_option,
)
from offsetkeeper.cli.history import (
    ConnectCaOpt,
    ConnectInsecureOpt,
    ConnectPasswordOpt,
    ConnectUrlOpt,
    ConnectUserOpt,
    GroupAllowOpt,
    GroupDenyOpt,
    TopicAllowOpt,
    TopicDenyOpt,
)


def run(
    listen: Annotated[str, typer.Option("--listen", help="HOST:PORT to serve /metrics on.")] = "127.0.0.1:9308",
    group: Annotated[list[str] | None, typer.Option("--group", "-g", help="Group to export (repeatable).",
                                                    show_default=False)] = None,
    all_groups: Annotated[bool, typer.Option("--all-groups/--named-groups",
                                             help="Every group of the cluster (the default).")] = True,
    interval: Annotated[str, duration_option("--interval", help="Time between samples.")] = "30s",
    store: Annotated[str | None, typer.Option("--store", show_default=False,
                                              help="Also record the samples in this history store "
                                                   "(default: keep them in memory only).")] = None,
    retain: Annotated[str, duration_option("--retain", help="Retention when --store is given "
                                           "('forever': keep every sample).", words=("forever",))] = "30d",
    window: Annotated[int, typer.Option("--window", help="Samples per status window.")] = 10,
    allowed_lag: Annotated[int, typer.Option("--allowed-lag", help="Lag that never counts as a problem.")] = 0,
    time_lag: Annotated[bool, typer.Option("--time-lag/--no-time-lag",
                                           help="Exact time lag from next-record timestamps.")] = True,
    group_allow: GroupAllowOpt = None, group_deny: GroupDenyOpt = None,
    topic_allow: TopicAllowOpt = None, topic_deny: TopicDenyOpt = None,
    track_allow: Annotated[list[str] | None, typer.Option(
        "--track-allow", metavar="REGEX", show_default=False,
        help="Sample only groups whose name fully matches one of these (repeatable).")] = None,
    track_deny: Annotated[list[str] | None, typer.Option(
        "--track-deny", metavar="REGEX", show_default=False,
        help="Never sample groups whose name fully matches one of these (repeatable).")] = None,
    notify_url: Annotated[str | None, typer.Option(
        "--notify-url", metavar="URL", show_default=False,
        help="POST status changes (open/close events) to this webhook.")] = None,
    notify_template: Annotated[str, typer.Option(
        "--notify-template", metavar="slack|generic|PATH",
        help="Body of the notifications: Slack's JSON, a generic JSON, or a template file.")] = "slack",
    notify_threshold: Annotated[list[str] | None, typer.Option(
        "--notify-threshold", metavar="PATTERN=warn|err|off", show_default=False,
        help="Which status opens an incident, per group pattern (repeatable, first match wins; "
             "default warn).")] = None,
    connect_url: ConnectUrlOpt = None, connect_user: ConnectUserOpt = None,
    connect_password: ConnectPasswordOpt = None, connect_ca: ConnectCaOpt = None,
    connect_insecure: ConnectInsecureOpt = False,
    bootstrap: BootstrapOpt = None, command_config: CommandConfigOpt = None,
    cluster: ClusterOpt = None, config: ConfigOpt = None,
) -> None:
    """Serve consumer-group lag, time lag and status as Prometheus metrics (kafka-lag-exporter's
    metric names), sampling the cluster every --interval until SIGTERM/SIGINT. Per-group series
    can be limited to groups and topics matching --group-allow/--topic-allow regexes (and not
    --group-deny/--topic-deny), like kafka-lag-exporter's allow/deny lists; --track-allow and
    --track-deny decide which groups are sampled at all. `lag status` as JSON is served on
    /status and /status/GROUP; --notify-url sends open/close events of status changes;
    --connect-url adds Kafka Connect source connectors' positions as gauges.

    Example: offsetkeeper exporter --listen 0.0.0.0:9308 -b kafka:9092 --group-deny 'console-consumer-.*'
    """
    from dataclasses import replace

    from offsetkeeper.cli.history import sampler_settings
    from offsetkeeper.ops.history import ExporterRequest, NotifySettings, serve_exporter

    settings = replace(sampler_settings(group, all_groups and not group, interval, retain,
                                        time_lag, window, group_allow, group_deny,
                                        topic_allow, topic_deny, connect_url,
                                        (connect_user, connect_password, connect_ca,
                                         connect_insecure)),
                       track_allow=tuple(track_allow or ()), track_deny=tuple(track_deny or ()))
    notify = NotifySettings(notify_url, notify_template, tuple(notify_threshold or ())) \
        if notify_url else None
    req = ExporterRequest(settings, listen=listen, store=store, allowed_lag=allowed_lag,
                          log_to_stderr=True, notify=notify)
    serve_exporter(connection(bootstrap, command_config, cluster, config), req)
