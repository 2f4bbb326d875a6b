package io.offsetkeeper.admin;

import java.util.Collections;
import java.util.Iterator;
import java.util.Map;

/**
 * A JSON value of the helper's line protocol: a string, number, boolean, null, or missing (what
 * {@link #path} gives for an absent key). The helper's JSON is small and comes from
 * offsetkeeper itself, so it is read and written here (Json.java) instead of by Jackson, whose
 * 2.4 MB of jars were a sixth of the wheel. The method names follow Jackson's tree model.
 */
class JsonNode implements Iterable<JsonNode> {
    static final JsonNode MISSING = new JsonNode(null);
    static final JsonNode NULL = new JsonNode(null);

    /** String, Long, Double or Boolean; null for NULL, MISSING and containers. */
    final Object value;

    JsonNode(Object value) {
        this.value = value;
    }

    static JsonNode text(String s) {
        return s == null ? NULL : new JsonNode(s);
    }

    /** The member `key`, or MISSING. */
    JsonNode path(String key) {
        return MISSING;
    }

    /** The member `key`, or null. */
    JsonNode get(String key) {
        return null;
    }

    boolean isTextual() {
        return value instanceof String;
    }

    boolean isObject() {
        return false;
    }

    boolean isArray() {
        return false;
    }

    boolean isMissingNode() {
        return this == MISSING;
    }

    boolean isNull() {
        return this == NULL;
    }

    /** Text of a scalar ("" for missing, "null" for null, like Jackson). */
    String asText() {
        if (this == MISSING) {
            return "";
        }
        if (value == null) {
            return "null";
        }
        return String.valueOf(value);
    }

    String asText(String missing) {
        return value == null ? missing : asText();
    }

    long asLong() {
        return asLong(0L);
    }

    long asLong(long missing) {
        if (value instanceof Long l) {
            return l;
        }
        if (value instanceof Double d) {
            return d.longValue();
        }
        if (value instanceof Boolean b) {
            return b ? 1L : 0L;
        }
        if (value instanceof String s) {
            try {
                return Long.parseLong(s.trim());
            } catch (NumberFormatException e) {
                return missing;
            }
        }
        return missing;
    }

    int asInt() {
        return (int) asLong(0L);
    }

    int asInt(int missing) {
        return (int) asLong(missing);
    }

    boolean asBoolean(boolean missing) {
        if (value instanceof Boolean b) {
            return b;
        }
        if (value instanceof String s) {
            return "true".equals(s.trim()) || (!"false".equals(s.trim()) && missing);
        }
        if (value instanceof Long l) {
            return l != 0;
        }
        return missing;
    }

    /** The elements of an array (nothing for any other value). */
    @Override
    public Iterator<JsonNode> iterator() {
        return Collections.emptyIterator();
    }

    /** The members of an object (nothing for any other value). */
    Iterator<Map.Entry<String, JsonNode>> fields() {
        return Collections.emptyIterator();
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder();
        Json.write(this, b);
        return b.toString();
    }
}
