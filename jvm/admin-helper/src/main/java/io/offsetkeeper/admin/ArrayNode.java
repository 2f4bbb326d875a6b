package io.offsetkeeper.admin;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/** A JSON array. */
final class ArrayNode extends JsonNode {
    final List<JsonNode> items = new ArrayList<>();

    ArrayNode() {
        super(null);
    }

    @Override
    boolean isArray() {
        return true;
    }

    @Override
    public Iterator<JsonNode> iterator() {
        return items.iterator();
    }

    ArrayNode add(JsonNode v) {
        items.add(v == null ? NULL : v);
        return this;
    }

    ArrayNode add(String v) {
        return add(text(v));
    }

    ArrayNode add(long v) {
        return add(new JsonNode(v));
    }

    ObjectNode addObject() {
        ObjectNode o = new ObjectNode();
        add(o);
        return o;
    }

    ArrayNode addArray() {
        ArrayNode a = new ArrayNode();
        add(a);
        return a;
    }
}
