package io.offsetkeeper.admin;

import java.util.Map;

/**
 * Reads and writes the helper's JSON (RFC 8259). Reading is strict: anything that is not one
 * JSON value is an IllegalArgumentException (the caller's "malformed request"). Writing escapes
 * what JSON requires and leaves other characters as they are: stdout is UTF-8.
 */
final class Json {
    private static final int MAX_DEPTH = 64;

    private final String s;
    private int i;

    private Json(String s) {
        this.s = s;
    }

    /** The value `text` holds (surrounding whitespace allowed, nothing else). */
    static JsonNode parse(String text) {
        Json p = new Json(text);
        JsonNode v = p.value(0);
        p.space();
        if (p.i != text.length()) {
            throw p.bad("text after the value");
        }
        return v;
    }

    static String write(JsonNode n) {
        StringBuilder b = new StringBuilder();
        write(n, b);
        return b.toString();
    }

    static void write(JsonNode n, StringBuilder b) {
        if (n instanceof ObjectNode o) {
            b.append('{');
            boolean first = true;
            for (Map.Entry<String, JsonNode> e : o.members.entrySet()) {
                if (!first) {
                    b.append(',');
                }
                first = false;
                string(e.getKey(), b);
                b.append(':');
                write(e.getValue(), b);
            }
            b.append('}');
        } else if (n instanceof ArrayNode a) {
            b.append('[');
            for (int k = 0; k < a.items.size(); k++) {
                if (k > 0) {
                    b.append(',');
                }
                write(a.items.get(k), b);
            }
            b.append(']');
        } else if (n.value instanceof String t) {
            string(t, b);
        } else if (n.value instanceof Double d && (d.isNaN() || d.isInfinite())) {
            b.append("null");  // JSON has no NaN or infinity
        } else if (n.value != null) {
            b.append(n.value);  // Long, Double, Boolean
        } else {
            b.append("null");  // NULL (and MISSING, which is never written inside a value)
        }
    }

    private static void string(String t, StringBuilder b) {
        b.append('"');
        for (int k = 0; k < t.length(); k++) {
            char c = t.charAt(k);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    // control characters, and the line separators some readers split lines on
                    if (c < 0x20 || c == '\u2028' || c == '\u2029') {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        b.append('"');
    }

    private IllegalArgumentException bad(String what) {
        return new IllegalArgumentException("malformed JSON at character " + i + ": " + what);
    }

    private void space() {
        while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) {
            i++;
        }
    }

    private JsonNode value(int depth) {
        if (depth > MAX_DEPTH) {
            throw bad("nested too deeply");
        }
        space();
        if (i >= s.length()) {
            throw bad("no value");
        }
        char c = s.charAt(i);
        switch (c) {
            case '{' -> {
                i++;
                ObjectNode o = new ObjectNode();
                space();
                if (i < s.length() && s.charAt(i) == '}') {
                    i++;
                    return o;
                }
                while (true) {
                    space();
                    if (i >= s.length() || s.charAt(i) != '"') {
                        throw bad("expected a member name");
                    }
                    String key = string();
                    space();
                    expect(':');
                    o.set(key, value(depth + 1));
                    space();
                    if (i < s.length() && s.charAt(i) == ',') {
                        i++;
                    } else {
                        expect('}');
                        return o;
                    }
                }
            }
            case '[' -> {
                i++;
                ArrayNode a = new ArrayNode();
                space();
                if (i < s.length() && s.charAt(i) == ']') {
                    i++;
                    return a;
                }
                while (true) {
                    a.add(value(depth + 1));
                    space();
                    if (i < s.length() && s.charAt(i) == ',') {
                        i++;
                    } else {
                        expect(']');
                        return a;
                    }
                }
            }
            case '"' -> {
                return new JsonNode(string());
            }
            case 't' -> {
                word("true");
                return new JsonNode(Boolean.TRUE);
            }
            case 'f' -> {
                word("false");
                return new JsonNode(Boolean.FALSE);
            }
            case 'n' -> {
                word("null");
                return JsonNode.NULL;
            }
            default -> {
                return number();
            }
        }
    }

    private void expect(char c) {
        if (i >= s.length() || s.charAt(i) != c) {
            throw bad("expected '" + c + "'");
        }
        i++;
    }

    private void word(String w) {
        if (!s.startsWith(w, i)) {
            throw bad("unexpected character");
        }
        i += w.length();
    }

    private String string() {
        i++;  // the opening quote
        StringBuilder b = new StringBuilder();
        while (true) {
            if (i >= s.length()) {
                throw bad("unterminated string");
            }
            char c = s.charAt(i++);
            if (c == '"') {
                return b.toString();
            }
            if (c < 0x20) {
                throw bad("control character in a string");
            }
            if (c != '\\') {
                b.append(c);
                continue;
            }
            if (i >= s.length()) {
                throw bad("unterminated escape");
            }
            char e = s.charAt(i++);
            switch (e) {
                case '"', '\\', '/' -> b.append(e);
                case 'b' -> b.append('\b');
                case 'f' -> b.append('\f');
                case 'n' -> b.append('\n');
                case 'r' -> b.append('\r');
                case 't' -> b.append('\t');
                case 'u' -> {
                    if (i + 4 > s.length()) {
                        throw bad("short \\u escape");
                    }
                    try {
                        // surrogate pairs arrive as two escapes and join in the UTF-16 string
                        b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                    } catch (NumberFormatException ex) {
                        throw bad("bad \\u escape");
                    }
                    i += 4;
                }
                default -> throw bad("bad escape");
            }
        }
    }

    private JsonNode number() {
        int start = i;
        if (i < s.length() && s.charAt(i) == '-') {
            i++;
        }
        boolean integral = true;
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c >= '0' && c <= '9') {
                i++;
            } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
                integral = false;
                i++;
            } else {
                break;
            }
        }
        String t = s.substring(start, i);
        if (t.isEmpty() || t.equals("-")) {
            throw bad("unexpected character");
        }
        try {
            if (integral) {
                try {
                    return new JsonNode(Long.parseLong(t));
                } catch (NumberFormatException tooBig) {
                    return new JsonNode(Double.parseDouble(t));
                }
            }
            return new JsonNode(Double.parseDouble(t));
        } catch (NumberFormatException ex) {
            throw bad("bad number");
        }
    }
}
