package io.offsetkeeper.testapps;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.protocol.Errors;

/**
 * Test aids of offsetkeeper, never shipped (tests/jvm_apps.py runs them). The admin helper's line
 * protocol: stdin, first line {"op", "config": {java client properties}, "args"}.
 *
 * <p>share-consume and streams-app write one JSON event per line ({"event", "count"}) and run
 * until stdin is closed. mm2-translate answers once: {"ok": true, "result": ...} or
 * {"ok": false, "error": {"code", "exception", "message"}}.
 */
public final class Main {
    static final ObjectMapper JSON = new ObjectMapper();

    private Main() {
    }

    public static void main(String[] argv) throws Exception {
        // Nothing but events and answers may reach stdout: System.out goes to stderr.
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out),
                true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line = in.readLine();
        JsonNode req = JSON.readTree(line == null ? "" : line);
        if (req == null || !req.isObject() || !req.path("op").isTextual()) {
            out.println(error("INVALID_REQUEST", "", "malformed request: expected one JSON object with an op"));
            System.exit(2);
            return;
        }
        Properties props = properties(req.path("config"));
        JsonNode args = req.path("args");
        ObjectNode answer;
        try {
            switch (req.get("op").asText()) {
                case "share-consume" -> {
                    Apps.shareConsume(props, args, out, in);
                    System.exit(0);
                    return;
                }
                case "streams-app" -> {
                    Apps.streamsApp(props, args, out, in);
                    System.exit(0);
                    return;
                }
                case "mm2-translate" -> answer = ok(Mirror.translate(props, args));
                default -> answer = error("INVALID_REQUEST", "", "unknown op " + req.get("op").asText());
            }
        } catch (Throwable t) {
            Throwable c = t;
            while ((c instanceof ExecutionException || c instanceof java.util.concurrent.CompletionException)
                    && c.getCause() != null) {
                c = c.getCause();
            }
            String code = c instanceof ApiException ? Errors.forException(c).name()
                    : c instanceof IllegalArgumentException ? "INVALID_REQUEST" : "UNKNOWN_SERVER_ERROR";
            answer = error(code, c.getClass().getSimpleName(),
                    c.getMessage() == null ? c.getClass().getSimpleName() : c.getMessage());
        }
        out.println(JSON.writeValueAsString(answer));
        out.flush();
        System.exit(0);
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
        ObjectNode n = JSON.createObjectNode();
        n.put("ok", true);
        n.set("result", result);
        return n;
    }

    static ObjectNode error(String code, String exception, String message) {
        ObjectNode n = JSON.createObjectNode();
        n.put("ok", false);
        ObjectNode e = n.putObject("error");
        e.put("code", code);
        e.put("exception", exception);
        e.put("message", message);
        return n;
    }
}
