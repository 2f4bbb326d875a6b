package io.offsetkeeper.admin;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.protocol.Errors;

/**
 * offsetkeeper's JVM admin helper: one request, one answer.
 *
 * <p>stdin, first line: {"op": NAME, "config": {java client properties}, "args": {...}}.
 * stdout: {"ok": true, "result": ...} or {"ok": false, "error": {"code", "exception", "message"}}.
 * Exit code 0 when an answer was written (even an error answer), 2 for a malformed request.
 *
 * <p>{"op": "session", "config": {...}} keeps one Admin client for many requests: every further
 * stdin line is a request {"op", "args"} (its config is the session's), answered by one line, in
 * order, until stdin is closed. A JVM start and an Admin client cost about a second; a request on
 * a warm session costs what the cluster takes to answer it.
 *
 * <p>Client properties arrive on stdin only (never argv), and the error answer never echoes them.
 */
public final class Main {
    private Main() {
    }

    public static void main(String[] argv) throws Exception {
        // Nothing but the answer may reach stdout: keep the real stream, send System.out to stderr.
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out),
                true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line = in.readLine();
        JsonNode req;
        try {
            req = Json.parse(line == null ? "" : line);
            if (req == null || !req.isObject() || !req.path("op").isTextual()) {
                throw new IllegalArgumentException("no op");
            }
        } catch (Exception e) {
            out.println(error("INVALID_REQUEST", e.getClass().getSimpleName(),
                    "malformed request: expected one JSON object with an op"));
            System.exit(2);
            return;
        }
        String op = req.get("op").asText();
        Properties props = properties(req.path("config"));
        JsonNode args = req.path("args");
        ObjectNode answer;
        try {
            switch (op) {
                case "ping" -> answer = ok(JsonNode.text("pong"));
                case "session" -> {
                    session(props, in, out);
                    System.exit(0);
                    return;
                }
                default -> {
                    try (Admin admin = Admin.create(props)) {
                        answer = ok(Ops.run(admin, op, args));
                    }
                }
            }
        } catch (Throwable t) {
            answer = error(t);
        }
        out.println(Json.write(answer));
        out.flush();
        System.exit(0);
    }

    /** Answers requests on one Admin client until stdin ends; a malformed line is an error answer. */
    static void session(Properties props, BufferedReader in, PrintStream out) throws Exception {
        try (Admin admin = Admin.create(props)) {
            out.println(Json.write(ok(JsonNode.text("ready"))));
            String line;
            while ((line = in.readLine()) != null) {
                ObjectNode answer;
                try {
                    JsonNode req = Json.parse(line);
                    if (req == null || !req.isObject() || !req.path("op").isTextual()) {
                        answer = error("INVALID_REQUEST", "", "malformed request: expected one JSON object with an op");
                    } else {
                        answer = ok(Ops.run(admin, req.get("op").asText(), req.path("args")));
                    }
                } catch (Throwable t) {
                    answer = error(t);
                }
                out.println(Json.write(answer));
                out.flush();
            }
        }
    }

    static Properties properties(JsonNode config) {
        Properties p = new Properties();
        Iterator<Map.Entry<String, JsonNode>> it = config.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            p.setProperty(e.getKey(), e.getValue().asText());
        }
        return p;
    }

    static ObjectNode ok(JsonNode result) {
        ObjectNode n = new ObjectNode();
        n.put("ok", true);
        n.set("result", result);
        return n;
    }

    static ObjectNode error(String code, String exception, String message) {
        ObjectNode n = new ObjectNode();
        n.put("ok", false);
        ObjectNode e = n.putObject("error");
        e.put("code", code);
        e.put("exception", exception);
        e.put("message", message);
        return n;
    }

    static Throwable unwrap(Throwable t) {
        while ((t instanceof ExecutionException || t instanceof java.util.concurrent.CompletionException
                || (t instanceof org.apache.kafka.common.KafkaException && !(t instanceof ApiException)
                    && t.getCause() != null && t.getCause() != t))
                && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    static ObjectNode error(Throwable t) {
        Throwable c = unwrap(t);
        String code;
        if (c instanceof ApiException) {
            code = Errors.forException(c).name();
        } else if (c instanceof IllegalArgumentException) {
            code = "INVALID_REQUEST";
        } else if (c instanceof org.apache.kafka.common.config.ConfigException) {
            code = "INVALID_CONFIG";
        } else {
            code = "UNKNOWN_SERVER_ERROR";
        }
        String msg = c.getMessage() == null ? c.getClass().getSimpleName() : c.getMessage();
        return error(code, c.getClass().getSimpleName(), msg);
    }

    /** The error of one item (group, partition, topic) inside a successful answer. */
    static ObjectNode itemError(Throwable t) {
        return (ObjectNode) error(t).get("error");
    }

    static ArrayNode array() {
        return new ArrayNode();
    }
}
