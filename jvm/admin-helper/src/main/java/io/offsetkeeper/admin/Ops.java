package io.offsetkeeper.admin;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterShareGroupOffsetsResult;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.DeleteShareGroupOffsetsResult;
import org.apache.kafka.clients.admin.DescribeConsumerGroupsOptions;
import org.apache.kafka.clients.admin.DescribeShareGroupsOptions;
import org.apache.kafka.clients.admin.DescribeStreamsGroupsOptions;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListStreamsGroupOffsetsSpec;
import org.apache.kafka.clients.admin.MemberAssignment;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.admin.StreamsGroupDescription;
import org.apache.kafka.clients.admin.StreamsGroupMemberAssignment;
import org.apache.kafka.clients.admin.StreamsGroupMemberDescription;
import org.apache.kafka.clients.admin.StreamsGroupSubtopologyDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;

/** The admin operations: each turns a JSON request into one or a few Admin calls, and back. */
final class Ops {
    private Ops() {
    }

    static JsonNode run(Admin admin, String op, JsonNode args) throws Exception {
        long timeoutMs = args.path("timeout_ms").asLong(15000);
        return switch (op) {
            case "ping" -> JsonNode.text("pong");
            case "list-groups" -> listGroups(admin, args, timeoutMs);
            case "describe-consumer-groups" -> describeConsumerGroups(admin, groups(args), timeoutMs);
            case "describe-share-groups" -> describeShareGroups(admin, groups(args), timeoutMs);
            case "list-share-group-offsets" -> listShareGroupOffsets(admin, groups(args), timeoutMs);
            case "alter-share-group-offsets" -> alterShareGroupOffsets(admin, args, timeoutMs);
            case "delete-share-group-offsets" -> deleteShareGroupOffsets(admin, args, timeoutMs);
            case "describe-streams-groups" -> describeStreamsGroups(admin, groups(args), timeoutMs);
            case "list-streams-group-offsets" -> listStreamsGroupOffsets(admin, groups(args), timeoutMs);
            case "list-consumer-group-offsets" -> listConsumerGroupOffsets(admin, groups(args), timeoutMs);
            case "alter-consumer-group-offsets" -> alterConsumerGroupOffsets(admin, args, timeoutMs);
            default -> throw new IllegalArgumentException("unknown op " + op);
        };
    }

    static List<String> groups(JsonNode args) {
        List<String> out = new ArrayList<>();
        for (JsonNode g : args.path("groups")) {
            out.add(g.asText());
        }
        return out;
    }

    // -- names as Kafka prints them -----------------------------------------------------------

    static String state(GroupState s) {
        return s == null ? "Unknown" : s.toString();  // Stable, Assigning, NotReady ...
    }

    static String type(Optional<GroupType> t) {
        return t.map(GroupType::toString).orElse("Unknown");  // Classic, Consumer, Share, Streams
    }

    static String node(Node n) {
        return n == null ? "" : n.host() + ":" + n.port() + " (" + n.idString() + ")";
    }

    static ArrayNode tps(Collection<TopicPartition> tps) {
        ArrayNode a = Main.array();
        tps.stream().sorted(Comparator.comparing(TopicPartition::topic)
                .thenComparingInt(TopicPartition::partition)).forEach(tp -> {
                    ObjectNode o = a.addObject();
                    o.put("topic", tp.topic());
                    o.put("partition", tp.partition());
                });
        return a;
    }

    static TopicPartition tp(JsonNode n) {
        return new TopicPartition(n.path("topic").asText(), n.path("partition").asInt());
    }

    static <T> Map<String, Object> await(Map<String, KafkaFuture<T>> futures, long timeoutMs) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Map.Entry<String, KafkaFuture<T>> e : futures.entrySet()) {
            try {
                out.put(e.getKey(), e.getValue().get(timeoutMs, TimeUnit.MILLISECONDS));
            } catch (Exception ex) {
                out.put(e.getKey(), ex);
            }
        }
        return out;
    }

    static ObjectNode groupError(String group, Object ex) {
        ObjectNode o = new ObjectNode();
        o.put("group", group);
        o.set("error", Main.itemError((Throwable) ex));
        return o;
    }

    // -- every group type (KIP-1043) ----------------------------------------------------------

    static JsonNode listGroups(Admin admin, JsonNode args, long timeoutMs) throws Exception {
        ListGroupsOptions opts = new ListGroupsOptions().timeoutMs((int) timeoutMs);
        Collection<GroupListing> all = admin.listGroups(opts).all().get(timeoutMs, TimeUnit.MILLISECONDS);
        ArrayNode a = Main.array();
        all.stream().sorted(Comparator.comparing(GroupListing::groupId)).forEach(g -> {
            ObjectNode o = a.addObject();
            o.put("group", g.groupId());
            o.put("type", type(g.type()));
            o.put("protocol", g.protocol());
            o.put("state", g.groupState().map(Ops::state).orElse("Unknown"));
        });
        return a;
    }

    // -- consumer groups with KIP-848 states and KIP-1099 epochs --------------------------------

    static JsonNode describeConsumerGroups(Admin admin, List<String> ids, long timeoutMs) {
        var res = admin.describeConsumerGroups(ids,
                new DescribeConsumerGroupsOptions().timeoutMs((int) timeoutMs)).describedGroups();
        ArrayNode a = Main.array();
        for (Map.Entry<String, Object> e : await(res, timeoutMs).entrySet()) {
            if (e.getValue() instanceof Throwable) {
                a.add(groupError(e.getKey(), e.getValue()));
                continue;
            }
            ConsumerGroupDescription d = (ConsumerGroupDescription) e.getValue();
            ObjectNode o = a.addObject();
            o.put("group", d.groupId());
            o.put("type", d.type() == null ? "Unknown" : d.type().toString());
            o.put("state", state(d.groupState()));
            o.put("coordinator", node(d.coordinator()));
            o.put("assignor", d.partitionAssignor());
            putOpt(o, "group_epoch", d.groupEpoch());
            putOpt(o, "target_assignment_epoch", d.targetAssignmentEpoch());
            ArrayNode members = o.putArray("members");
            for (MemberDescription m : d.members()) {
                ObjectNode mo = members.addObject();
                mo.put("member_id", m.consumerId());
                mo.put("instance_id", m.groupInstanceId().orElse(null));
                mo.put("client_id", m.clientId());
                mo.put("host", m.host());
                putOpt(mo, "member_epoch", m.memberEpoch());
                mo.set("assignment", tps(m.assignment().topicPartitions()));
                Optional<MemberAssignment> target = m.targetAssignment();
                mo.set("target_assignment", target.isPresent() ? tps(target.get().topicPartitions()) : null);
                if (m.upgraded().isPresent()) {
                    mo.put("upgraded", m.upgraded().get());
                } else {
                    mo.putNull("upgraded");
                }
            }
        }
        return a;
    }

    static void putOpt(ObjectNode o, String key, Optional<Integer> v) {
        if (v.isPresent()) {
            o.put(key, v.get());
        } else {
            o.putNull(key);
        }
    }

    // -- share groups (KIP-932) --------------------------------------------------------------

    static JsonNode describeShareGroups(Admin admin, List<String> ids, long timeoutMs) {
        var res = admin.describeShareGroups(ids,
                new DescribeShareGroupsOptions().timeoutMs((int) timeoutMs)).describedGroups();
        ArrayNode a = Main.array();
        for (Map.Entry<String, Object> e : await(res, timeoutMs).entrySet()) {
            if (e.getValue() instanceof Throwable) {
                a.add(groupError(e.getKey(), e.getValue()));
                continue;
            }
            ShareGroupDescription d = (ShareGroupDescription) e.getValue();
            ObjectNode o = a.addObject();
            o.put("group", d.groupId());
            o.put("state", state(d.groupState()));
            o.put("coordinator", node(d.coordinator()));
            o.put("group_epoch", d.groupEpoch());
            o.put("target_assignment_epoch", d.targetAssignmentEpoch());
            ArrayNode members = o.putArray("members");
            for (ShareMemberDescription m : d.members()) {
                ObjectNode mo = members.addObject();
                mo.put("member_id", m.consumerId());
                mo.put("client_id", m.clientId());
                mo.put("host", m.host());
                mo.put("rack", m.rackId().orElse(null));
                mo.put("member_epoch", m.memberEpoch());
                mo.set("assignment", tps(m.assignment().topicPartitions()));
            }
        }
        return a;
    }

    static JsonNode listShareGroupOffsets(Admin admin, List<String> ids, long timeoutMs) {
        Map<String, ListShareGroupOffsetsSpec> specs = new LinkedHashMap<>();
        for (String g : ids) {
            specs.put(g, new ListShareGroupOffsetsSpec());
        }
        var result = admin.listShareGroupOffsets(specs);
        Map<String, KafkaFuture<Map<TopicPartition, SharePartitionOffsetInfo>>> futures = new LinkedHashMap<>();
        for (String g : ids) {
            futures.put(g, result.partitionsToOffsetInfo(g));
        }
        ArrayNode a = Main.array();
        for (Map.Entry<String, Object> e : await(futures, timeoutMs).entrySet()) {
            if (e.getValue() instanceof Throwable) {
                a.add(groupError(e.getKey(), e.getValue()));
                continue;
            }
            @SuppressWarnings("unchecked")
            Map<TopicPartition, SharePartitionOffsetInfo> offs = (Map<TopicPartition, SharePartitionOffsetInfo>) e.getValue();
            ObjectNode o = a.addObject();
            o.put("group", e.getKey());
            ArrayNode parts = o.putArray("partitions");
            Map<TopicPartition, SharePartitionOffsetInfo> sorted = new TreeMap<>(
                    Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
            sorted.putAll(offs);
            for (Map.Entry<TopicPartition, SharePartitionOffsetInfo> pe : sorted.entrySet()) {
                ObjectNode po = parts.addObject();
                po.put("topic", pe.getKey().topic());
                po.put("partition", pe.getKey().partition());
                if (pe.getValue() == null) {
                    // a partition of the group without a share-partition start offset yet
                    po.putNull("start_offset");
                    po.putNull("leader_epoch");
                    po.putNull("lag");
                    continue;
                }
                po.put("start_offset", pe.getValue().startOffset());
                putOpt(po, "leader_epoch", pe.getValue().leaderEpoch());
                if (pe.getValue().lag().isPresent()) {
                    po.put("lag", pe.getValue().lag().get());
                } else {
                    po.putNull("lag");
                }
            }
        }
        return a;
    }

    static JsonNode alterShareGroupOffsets(Admin admin, JsonNode args, long timeoutMs) throws Exception {
        String group = args.path("group").asText();
        Map<TopicPartition, Long> offsets = new HashMap<>();
        for (JsonNode n : args.path("offsets")) {
            offsets.put(tp(n), n.path("offset").asLong());
        }
        AlterShareGroupOffsetsResult res = admin.alterShareGroupOffsets(group, offsets);
        return partitionResults(offsets.keySet(), tp -> res.partitionResult(tp), timeoutMs);
    }

    /** Commit offsets with their metadata exactly (confluent-kafka appends a NUL byte to it). */
    static JsonNode alterConsumerGroupOffsets(Admin admin, JsonNode args, long timeoutMs) throws Exception {
        String group = args.path("group").asText();
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (JsonNode n : args.path("offsets")) {
            offsets.put(tp(n), new OffsetAndMetadata(n.path("offset").asLong(), n.path("metadata").asText("")));
        }
        var res = admin.alterConsumerGroupOffsets(group, offsets);
        return partitionResults(offsets.keySet(), tp -> res.partitionResult(tp), timeoutMs);
    }

    static JsonNode partitionResults(Set<TopicPartition> tps,
                                     java.util.function.Function<TopicPartition, KafkaFuture<Void>> result,
                                     long timeoutMs) {
        ArrayNode a = Main.array();
        tps.stream().sorted(Comparator.comparing(TopicPartition::topic)
                .thenComparingInt(TopicPartition::partition)).forEach(tp -> {
                    ObjectNode o = a.addObject();
                    o.put("topic", tp.topic());
                    o.put("partition", tp.partition());
                    try {
                        result.apply(tp).get(timeoutMs, TimeUnit.MILLISECONDS);
                        o.putNull("error");
                    } catch (Exception ex) {
                        o.set("error", Main.itemError(ex));
                    }
                });
        return a;
    }

    static JsonNode deleteShareGroupOffsets(Admin admin, JsonNode args, long timeoutMs) throws Exception {
        String group = args.path("group").asText();
        Set<String> topics = new HashSet<>();
        for (JsonNode t : args.path("topics")) {
            topics.add(t.asText());
        }
        DeleteShareGroupOffsetsResult res = admin.deleteShareGroupOffsets(group, topics);
        ArrayNode a = Main.array();
        for (String t : new java.util.TreeSet<>(topics)) {
            ObjectNode o = a.addObject();
            o.put("topic", t);
            try {
                res.topicResult(t).get(timeoutMs, TimeUnit.MILLISECONDS);
                o.putNull("error");
            } catch (Exception ex) {
                o.set("error", Main.itemError(ex));
            }
        }
        return a;
    }

    // -- streams groups (KIP-1071) -----------------------------------------------------------

    static JsonNode describeStreamsGroups(Admin admin, List<String> ids, long timeoutMs) {
        var res = admin.describeStreamsGroups(ids,
                new DescribeStreamsGroupsOptions().timeoutMs((int) timeoutMs)).describedGroups();
        ArrayNode a = Main.array();
        for (Map.Entry<String, Object> e : await(res, timeoutMs).entrySet()) {
            if (e.getValue() instanceof Throwable) {
                a.add(groupError(e.getKey(), e.getValue()));
                continue;
            }
            StreamsGroupDescription d = (StreamsGroupDescription) e.getValue();
            ObjectNode o = a.addObject();
            o.put("group", d.groupId());
            o.put("state", state(d.groupState()));
            o.put("coordinator", node(d.coordinator()));
            o.put("group_epoch", d.groupEpoch());
            o.put("target_assignment_epoch", d.targetAssignmentEpoch());
            o.put("topology_epoch", d.topologyEpoch());
            ArrayNode subs = o.putArray("subtopologies");
            d.subtopologies().stream()
                    .sorted(Comparator.comparing(StreamsGroupSubtopologyDescription::subtopologyId))
                    .forEach(s -> {
                        ObjectNode so = subs.addObject();
                        so.put("subtopology", s.subtopologyId());
                        ArrayNode src = so.putArray("source_topics");
                        s.sourceTopics().stream().sorted().forEach(src::add);
                        ArrayNode sink = so.putArray("repartition_sink_topics");
                        s.repartitionSinkTopics().stream().sorted().forEach(sink::add);
                        ArrayNode rsrc = so.putArray("repartition_source_topics");
                        new java.util.TreeSet<>(s.repartitionSourceTopics().keySet()).forEach(rsrc::add);
                        ArrayNode chg = so.putArray("state_changelog_topics");
                        new java.util.TreeSet<>(s.stateChangelogTopics().keySet()).forEach(chg::add);
                    });
            ArrayNode members = o.putArray("members");
            for (StreamsGroupMemberDescription m : d.members()) {
                ObjectNode mo = members.addObject();
                mo.put("member_id", m.memberId());
                mo.put("member_epoch", m.memberEpoch());
                mo.put("instance_id", m.instanceId().orElse(null));
                mo.put("rack", m.rackId().orElse(null));
                mo.put("client_id", m.clientId());
                mo.put("host", m.clientHost());
                mo.put("topology_epoch", m.topologyEpoch());
                mo.put("process_id", m.processId());
                mo.put("endpoint", m.userEndpoint().map(ep -> ep.host() + ":" + ep.port()).orElse(null));
                mo.put("is_classic", m.isClassic());
                mo.set("assignment", tasks(m.assignment()));
                mo.set("target_assignment", tasks(m.targetAssignment()));
            }
        }
        return a;
    }

    static ObjectNode tasks(StreamsGroupMemberAssignment a) {
        ObjectNode o = new ObjectNode();
        if (a == null) {
            return o;
        }
        o.set("active", taskIds(a.activeTasks()));
        o.set("standby", taskIds(a.standbyTasks()));
        o.set("warmup", taskIds(a.warmupTasks()));
        return o;
    }

    static ArrayNode taskIds(List<StreamsGroupMemberAssignment.TaskIds> ids) {
        ArrayNode a = Main.array();
        ids.stream().sorted(Comparator.comparing(StreamsGroupMemberAssignment.TaskIds::subtopologyId))
                .forEach(t -> {
                    ObjectNode o = a.addObject();
                    o.put("subtopology", t.subtopologyId());
                    ArrayNode p = o.putArray("partitions");
                    t.partitions().stream().sorted().forEach(p::add);
                });
        return a;
    }

    static JsonNode listStreamsGroupOffsets(Admin admin, List<String> ids, long timeoutMs) {
        Map<String, ListStreamsGroupOffsetsSpec> specs = new LinkedHashMap<>();
        for (String g : ids) {
            specs.put(g, new ListStreamsGroupOffsetsSpec());
        }
        var result = admin.listStreamsGroupOffsets(specs);
        Map<String, KafkaFuture<Map<TopicPartition, OffsetAndMetadata>>> futures = new LinkedHashMap<>();
        for (String g : ids) {
            futures.put(g, result.partitionsToOffsetAndMetadata(g));
        }
        ArrayNode a = Main.array();
        for (Map.Entry<String, Object> e : await(futures, timeoutMs).entrySet()) {
            if (e.getValue() instanceof Throwable) {
                a.add(groupError(e.getKey(), e.getValue()));
                continue;
            }
            @SuppressWarnings("unchecked")
            Map<TopicPartition, OffsetAndMetadata> offs = (Map<TopicPartition, OffsetAndMetadata>) e.getValue();
            ObjectNode o = a.addObject();
            o.put("group", e.getKey());
            ArrayNode parts = o.putArray("partitions");
            offs.entrySet().stream().filter(pe -> pe.getValue() != null)
                    .sorted(Map.Entry.comparingByKey(Comparator.comparing(TopicPartition::topic)
                            .thenComparingInt(TopicPartition::partition)))
                    .forEach(pe -> {
                        ObjectNode po = parts.addObject();
                        po.put("topic", pe.getKey().topic());
                        po.put("partition", pe.getKey().partition());
                        po.put("offset", pe.getValue().offset());
                    });
        }
        return a;
    }

    /**
     * Committed offsets with their metadata exactly as Kafka holds it (any group type that
     * commits offsets): confluent-kafka may hand over bytes past the end of the metadata.
     */
    static JsonNode listConsumerGroupOffsets(Admin admin, List<String> ids, long timeoutMs) {
        Map<String, ListConsumerGroupOffsetsSpec> specs = new LinkedHashMap<>();
        for (String g : ids) {
            specs.put(g, new ListConsumerGroupOffsetsSpec());
        }
        var result = admin.listConsumerGroupOffsets(specs);
        Map<String, KafkaFuture<Map<TopicPartition, OffsetAndMetadata>>> futures = new LinkedHashMap<>();
        for (String g : ids) {
            futures.put(g, result.partitionsToOffsetAndMetadata(g));
        }
        ArrayNode a = Main.array();
        for (Map.Entry<String, Object> e : await(futures, timeoutMs).entrySet()) {
            if (e.getValue() instanceof Throwable) {
                a.add(groupError(e.getKey(), e.getValue()));
                continue;
            }
            @SuppressWarnings("unchecked")
            Map<TopicPartition, OffsetAndMetadata> offs = (Map<TopicPartition, OffsetAndMetadata>) e.getValue();
            ObjectNode o = a.addObject();
            o.put("group", e.getKey());
            ArrayNode parts = o.putArray("partitions");
            offs.entrySet().stream().filter(pe -> pe.getValue() != null)
                    .sorted(Map.Entry.comparingByKey(Comparator.comparing(TopicPartition::topic)
                            .thenComparingInt(TopicPartition::partition)))
                    .forEach(pe -> {
                        ObjectNode po = parts.addObject();
                        po.put("topic", pe.getKey().topic());
                        po.put("partition", pe.getKey().partition());
                        po.put("offset", pe.getValue().offset());
                        po.put("metadata", pe.getValue().metadata());
                    });
        }
        return a;
    }
}
