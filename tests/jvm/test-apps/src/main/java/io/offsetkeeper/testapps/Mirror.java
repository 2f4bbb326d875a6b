package io.offsetkeeper.testapps;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.mirror.RemoteClusterUtils;

/**
 * MirrorMaker 2's own translation of a group's offsets (the oracle of offsetkeeper's
 * `--from-mm2`): RemoteClusterUtils.translateOffsets against the target cluster the request.s
 * properties name, for the source alias and groups given.
 *
 * <p>args: {"source_alias": "A", "groups": ["g1", ...], "timeout_ms": 15000}; answer:
 * {"g1": [{"topic": "A.orders", "partition": 0, "offset": 42}], ...}.
 */
final class Mirror {
    private Mirror() {
    }

    static JsonNode translate(Properties props, JsonNode args) throws Exception {
        String alias = args.path("source_alias").asText("");
        if (alias.isEmpty() || !args.path("groups").isArray()) {
            throw new IllegalArgumentException("mm2-translate needs source_alias and groups");
        }
        Duration timeout = Duration.ofMillis(args.path("timeout_ms").asLong(15000));
        Map<String, Object> conf = new HashMap<>();
        props.forEach((k, v) -> conf.put((String) k, v));
        ObjectNode out = Main.JSON.createObjectNode();
        for (JsonNode g : args.get("groups")) {
            Map<TopicPartition, OffsetAndMetadata> got =
                    RemoteClusterUtils.translateOffsets(conf, alias, g.asText(), timeout);
            ArrayNode list = out.putArray(g.asText());
            got.forEach((tp, om) -> {
                ObjectNode n = list.addObject();
                n.put("topic", tp.topic());
                n.put("partition", tp.partition());
                n.put("offset", om.offset());
            });
        }
        return out;
    }
}
