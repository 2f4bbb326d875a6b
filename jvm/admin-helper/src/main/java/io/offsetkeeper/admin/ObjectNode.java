package io.offsetkeeper.admin;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/** A JSON object; members keep their insertion order. */
final class ObjectNode extends JsonNode {
    final Map<String, JsonNode> members = new LinkedHashMap<>();

    ObjectNode() {
        super(null);
    }

    @Override
    JsonNode path(String key) {
        JsonNode n = members.get(key);
        return n == null ? MISSING : n;
    }

    @Override
    JsonNode get(String key) {
        return members.get(key);
    }

    @Override
    boolean isObject() {
        return true;
    }

    @Override
    Iterator<Map.Entry<String, JsonNode>> fields() {
        return members.entrySet().iterator();
    }

    ObjectNode set(String key, JsonNode v) {
        members.put(key, v == null ? NULL : v);
        return this;
    }

    ObjectNode put(String key, String v) {
        return set(key, text(v));
    }

    ObjectNode put(String key, long v) {
        return set(key, new JsonNode(v));
    }

    ObjectNode put(String key, Long v) {
        return set(key, v == null ? NULL : new JsonNode(v));
    }

    ObjectNode put(String key, Integer v) {
        return set(key, v == null ? NULL : new JsonNode(v.longValue()));
    }

    ObjectNode put(String key, boolean v) {
        return set(key, new JsonNode(v));
    }

    ObjectNode putNull(String key) {
        return set(key, NULL);
    }

    ObjectNode putObject(String key) {
        ObjectNode o = new ObjectNode();
        set(key, o);
        return o;
    }

    ArrayNode putArray(String key) {
        ArrayNode a = new ArrayNode();
        set(key, a);
        return a;
    }
}
