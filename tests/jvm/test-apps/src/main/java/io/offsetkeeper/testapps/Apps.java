package io.offsetkeeper.testapps;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Produced;

/**
 * Real clients for tests and benchmarks: a KafkaShareConsumer and a Kafka
 * Streams application with group.protocol=streams. Both write JSON events, one per line, and run
 * until stdin is closed (the caller's way to stop them), then close cleanly.
 */
final class Apps {
    private Apps() {
    }

    static void event(PrintStream out, String name, long count) {
        ObjectNode o = Main.JSON.createObjectNode();
        o.put("event", name);
        o.put("count", count);
        out.println(o.toString());
        out.flush();
    }

    /** Signals once stdin reaches end of file. */
    static AtomicBoolean stopOnEof(BufferedReader in) {
        AtomicBoolean stop = new AtomicBoolean(false);
        Thread t = new Thread(() -> {
            try {
                while (in.readLine() != null) {
                    // ignore input; only the end matters
                }
            } catch (Exception ignored) {
                // treat as end
            }
            stop.set(true);
        }, "stdin-watch");
        t.setDaemon(true);
        t.start();
        return stop;
    }

    /** args: group, topics[], max_records (stop acknowledging after this many; -1 = all). */
    static void shareConsume(Properties props, JsonNode args, PrintStream out, BufferedReader in) {
        props.put("group.id", args.path("group").asText());
        props.putIfAbsent("client.id", "offsetkeeper-share-consumer");
        props.putIfAbsent("share.acknowledgement.mode", "explicit");
        List<String> topics = new ArrayList<>();
        for (JsonNode t : args.path("topics")) {
            topics.add(t.asText());
        }
        long max = args.path("max_records").asLong(-1);
        AtomicBoolean stop = stopOnEof(in);
        long count = 0;
        try (KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(props,
                new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            c.subscribe(topics);
            event(out, "subscribed", 0);
            while (!stop.get()) {
                if (max >= 0 && count >= max) {
                    // keep the membership alive (heartbeats run in the background) without
                    // acquiring more records
                    try {
                        Thread.sleep(100);
                    } catch (InterruptedException e) {
                        break;
                    }
                    continue;
                }
                ConsumerRecords<byte[], byte[]> records = c.poll(Duration.ofMillis(200));
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    c.acknowledge(r);
                    count++;
                }
                if (!records.isEmpty()) {
                    c.commitSync();
                    event(out, "acknowledged", count);
                }
            }
            event(out, "closing", count);
        }
    }

    /**
     * args: application_id, input, output: a stateless mapValues topology; replace_thread (a
     * stream thread that dies, e.g. of a missing source topic, is replaced: the application keeps
     * rejoining its group, which the broker then reports NotReady while it is a member).
     */
    static void streamsApp(Properties props, JsonNode args, PrintStream out, BufferedReader in)
            throws InterruptedException {
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args.path("application_id").asText());
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.STATE_DIR_CONFIG, args.path("state_dir").asText(
                System.getProperty("java.io.tmpdir") + "/offsetkeeper-streams"));
        props.putIfAbsent(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
        props.putIfAbsent("consumer.auto.offset.reset", "earliest");
        StreamsBuilder b = new StreamsBuilder();
        b.stream(args.path("input").asText(), Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
                .mapValues(v -> v)
                .to(args.path("output").asText(), Produced.with(Serdes.ByteArray(), Serdes.ByteArray()));
        AtomicBoolean stop = stopOnEof(in);
        try (KafkaStreams streams = new KafkaStreams(b.build(), props)) {
            streams.setStateListener((now, before) -> event(out, "state-" + now.name().toLowerCase(), 0));
            if (args.path("replace_thread").asBoolean(false)) {
                streams.setUncaughtExceptionHandler(e -> {
                    event(out, "thread-replaced", 0);
                    return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
                });
            }
            streams.start();
            while (!stop.get()) {
                Thread.sleep(100);
            }
            streams.close(Duration.ofSeconds(10));
            event(out, "closing", 0);
        }
    }
}
