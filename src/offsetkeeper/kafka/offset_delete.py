"""OffsetDelete (KIP-496) through librdkafka's C API.

confluent-kafka's Python AdminClient does not expose rd_kafka_DeleteConsumerGroupOffsets, but
the librdkafka it ships does. Rather than speak the wire protocol, call that function through
ctypes on the very library confluent-kafka loaded.
"""

from __future__ import annotations

import ctypes
import glob
import os
from collections.abc import Iterable, Mapping

import confluent_kafka

from offsetkeeper.errors import ConfigError, KafkaOperationError
from offsetkeeper.kafka.errors import translate_code
from offsetkeeper.models import TopicPartition

_EVENT_TIMEOUT_MS = 200


class _TP(ctypes.Structure):
    _fields_ = [("topic", ctypes.c_char_p), ("partition", ctypes.c_int32), ("offset", ctypes.c_int64),
                ("metadata", ctypes.c_void_p), ("metadata_size", ctypes.c_size_t),
                ("opaque", ctypes.c_void_p), ("err", ctypes.c_int), ("_private", ctypes.c_void_p)]


class _TPList(ctypes.Structure):
    _fields_ = [("cnt", ctypes.c_int), ("size", ctypes.c_int), ("elems", ctypes.POINTER(_TP))]


def _library() -> ctypes.CDLL:
    pkg = os.path.dirname(confluent_kafka.__file__)
    candidates = sorted(glob.glob(os.path.join(pkg, "..", "confluent_kafka.libs", "librdkafka*.so*")))
    lib = ctypes.CDLL(candidates[0] if candidates else "librdkafka.so.1")
    vp, cp, sz = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
    sigs = {
        "rd_kafka_conf_new": ([], vp),
        "rd_kafka_conf_set": ([vp, cp, cp, cp, sz], ctypes.c_int),
        "rd_kafka_new": ([ctypes.c_int, vp, cp, sz], vp),
        "rd_kafka_destroy": ([vp], None),
        "rd_kafka_queue_new": ([vp], vp),
        "rd_kafka_queue_destroy": ([vp], None),
        "rd_kafka_queue_poll": ([vp, ctypes.c_int], vp),
        "rd_kafka_topic_partition_list_new": ([ctypes.c_int], vp),
        "rd_kafka_topic_partition_list_add": ([vp, cp, ctypes.c_int32], vp),
        "rd_kafka_topic_partition_list_destroy": ([vp], None),
        "rd_kafka_DeleteConsumerGroupOffsets_new": ([cp, vp], vp),
        "rd_kafka_DeleteConsumerGroupOffsets_destroy": ([vp], None),
        "rd_kafka_DeleteConsumerGroupOffsets": ([vp, ctypes.POINTER(vp), sz, vp, vp], None),
        "rd_kafka_AdminOptions_new": ([vp, ctypes.c_int], vp),
        "rd_kafka_AdminOptions_destroy": ([vp], None),
        "rd_kafka_AdminOptions_set_request_timeout": ([vp, ctypes.c_int, cp, sz], ctypes.c_int),
        "rd_kafka_event_error": ([vp], ctypes.c_int),
        "rd_kafka_event_error_string": ([vp], cp),
        "rd_kafka_event_destroy": ([vp], None),
        "rd_kafka_event_DeleteConsumerGroupOffsets_result": ([vp], vp),
        "rd_kafka_DeleteConsumerGroupOffsets_result_groups": ([vp, ctypes.POINTER(sz)], ctypes.POINTER(vp)),
        "rd_kafka_group_result_error": ([vp], vp),
        "rd_kafka_group_result_partitions": ([vp], ctypes.POINTER(_TPList)),
        "rd_kafka_error_name": ([vp], cp),
        "rd_kafka_error_string": ([vp], cp),
        "rd_kafka_err2name": ([ctypes.c_int], cp),
    }
    for name, (args, res) in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    return lib


_RD_KAFKA_PRODUCER = 0
_RD_KAFKA_ADMIN_OP_ANY = 0  # rd_kafka_admin_op_t: options valid for any operation


def delete_group_offsets(
    client_config: Mapping[str, str], group: str, tps: Iterable[TopicPartition], *, timeout_s: float = 15.0
) -> dict[TopicPartition, str | None]:
    """Delete `group`'s committed offsets for `tps`; per partition the error name or None."""
    lib = _library()
    err = ctypes.create_string_buffer(512)
    conf = lib.rd_kafka_conf_new()
    for k, v in client_config.items():
        if lib.rd_kafka_conf_set(conf, k.encode(), str(v).encode(), err, 512) != 0:
            raise ConfigError(f"client property '{k}' is not valid: {err.value.decode()}")
    rk = lib.rd_kafka_new(_RD_KAFKA_PRODUCER, conf, err, 512)
    if not rk:
        raise KafkaOperationError(f"delete offsets: cannot create client: {err.value.decode()}")
    queue = lib.rd_kafka_queue_new(rk)
    tplist = lib.rd_kafka_topic_partition_list_new(8)
    req = opts = None
    try:
        for tp in tps:
            lib.rd_kafka_topic_partition_list_add(tplist, tp.topic.encode(), tp.partition)
        req = lib.rd_kafka_DeleteConsumerGroupOffsets_new(group.encode(), tplist)
        opts = lib.rd_kafka_AdminOptions_new(rk, _RD_KAFKA_ADMIN_OP_ANY)
        lib.rd_kafka_AdminOptions_set_request_timeout(opts, int(timeout_s * 1000), err, 512)
        arr = (ctypes.c_void_p * 1)(req)
        lib.rd_kafka_DeleteConsumerGroupOffsets(rk, arr, 1, opts, queue)
        ev = None
        waited = 0
        while not ev and waited < timeout_s * 1000 + 5000:
            ev = lib.rd_kafka_queue_poll(queue, _EVENT_TIMEOUT_MS)
            waited += _EVENT_TIMEOUT_MS
        if not ev:
            raise translate_code("_TIMED_OUT", action="delete offsets", group=group)
        try:
            code = lib.rd_kafka_event_error(ev)
            if code:
                name = lib.rd_kafka_err2name(code).decode()
                raise translate_code(name, action="delete offsets", group=group,
                                     detail=lib.rd_kafka_event_error_string(ev).decode())
            res = lib.rd_kafka_event_DeleteConsumerGroupOffsets_result(ev)
            cnt = ctypes.c_size_t(0)
            groups = lib.rd_kafka_DeleteConsumerGroupOffsets_result_groups(res, ctypes.byref(cnt))
            out: dict[TopicPartition, str | None] = {}
            for i in range(cnt.value):
                gerr = lib.rd_kafka_group_result_error(groups[i])
                if gerr:
                    name = lib.rd_kafka_error_name(gerr).decode()
                    raise translate_code(name, action="delete offsets", group=group,
                                         detail=lib.rd_kafka_error_string(gerr).decode())
                parts = lib.rd_kafka_group_result_partitions(groups[i])
                if parts:
                    for j in range(parts.contents.cnt):
                        e = parts.contents.elems[j]
                        tp = TopicPartition(e.topic.decode(), e.partition)
                        out[tp] = lib.rd_kafka_err2name(e.err).decode() if e.err else None
            return out
        finally:
            lib.rd_kafka_event_destroy(ev)
    finally:
        if opts:
            lib.rd_kafka_AdminOptions_destroy(opts)
        if req:
            lib.rd_kafka_DeleteConsumerGroupOffsets_destroy(req)
        lib.rd_kafka_topic_partition_list_destroy(tplist)
        lib.rd_kafka_queue_destroy(queue)
        lib.rd_kafka_destroy(rk)
