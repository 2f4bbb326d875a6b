"""Kafka Connect connectors' offsets: see, plan, move, snapshot and roll back.

    rest           ConnectClient: the worker's REST API (KIP-875 offsets endpoints), URL,
                   basic auth and TLS; secrets masked like store URLs
    model          ConnectorOffsets (validated partition/offset maps), parsing hostile JSON
    plan           plan_connector_reset: pure (current offsets + target -> ConnectorPlan)
    apply          apply_connector_plans: stop, alter/reset, read back, resume -> ConnectReport
    offsets_topic  read a source connector's positions from the worker's offsets topic
                   (the independent read-back)
    snapshots      ConnectSnapshot files in the snapshot store (`connect/` beside group ones)
"""
