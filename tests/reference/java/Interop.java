// Apache Kafka's Java clients against a broker: one scenario per argument, one JSON line each.
//
// Usage: java -cp <kafka jars>:<classes> Interop <bootstrap> <prefix> <scenario>...
// Each scenario prints {"scenario": NAME, ...what the client observed...} or
// {"scenario": NAME, "error": "Class: message"}.  Compiled and run by
// tests/reference/test_java_clients_against_sharetxn.py; the assertions live there.

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public final class Interop {
    private static final Duration POLL = Duration.ofMillis(200);
    private static final long DEADLINE_MS = 20_000;

    private final String bootstrap;
    private final String prefix;
    private final Admin admin;

    private Interop(String bootstrap, String prefix) {
        this.bootstrap = bootstrap;
        this.prefix = prefix;
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        this.admin = Admin.create(p);
    }

    public static void main(String[] args) throws Exception {
        Interop it = new Interop(args[0], args[1]);
        try {
            for (int i = 2; i < args.length; i++) {
                it.run(args[i]);
            }
        } finally {
            it.admin.close(Duration.ofSeconds(5));
        }
    }

    private void run(String scenario) {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("scenario", scenario);
        long start = System.nanoTime();
        try {
            switch (scenario) {
                case "producer_idempotent" -> producerIdempotent(out);
                case "producer_transactions" -> producerTransactions(out);
                case "producer_fencing" -> producerFencing(out);
                case "consumer_group_classic" -> consumerGroup(out, "classic");
                case "consumer_group_consumer" -> consumerGroup(out, "consumer");
                case "consumer_group_pattern" -> consumerGroupPattern(out);
                case "share_implicit" -> shareImplicit(out);
                case "share_explicit" -> shareExplicit(out);
                case "share_lock_timeout" -> shareLockTimeout(out);
                case "admin_topics_configs" -> adminTopicsConfigs(out);
                case "admin_share_offsets" -> adminShareOffsets(out);
                case "admin_transactions" -> adminTransactions(out);
                default -> throw new IllegalArgumentException("unknown scenario " + scenario);
            }
        } catch (Throwable t) {
            Throwable cause = t instanceof ExecutionException && t.getCause() != null ? t.getCause() : t;
            out.put("error", cause.getClass().getName() + ": " + cause.getMessage());
        }
        out.put("ms", (System.nanoTime() - start) / 1_000_000);
        System.out.println(json(out));
        System.out.flush();
    }

    // ------------------------------------------------------------------ producers

    private void producerIdempotent(Map<String, Object> out) throws Exception {
        String topic = topic("idem", 3);
        Map<Integer, Integer> perPartition = new TreeMap<>();
        try (KafkaProducer<String, String> producer = producer(Map.of("enable.idempotence", "true", "acks", "all"))) {
            List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < 300; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, i % 3, "k" + i, "v" + i)));
            }
            producer.flush();
            for (var f : sent) {
                perPartition.merge(f.get().partition(), 1, Integer::sum);
            }
        }
        out.put("acked_per_partition", perPartition);
        List<String> values = readAll(topic, 3, "read_committed", 300);
        out.put("read", values.size());
        out.put("distinct", new java.util.HashSet<>(values).size());
        out.put("end_offsets", endOffsets(topic, 3));
    }

    private void producerTransactions(Map<String, Object> out) throws Exception {
        String topic = topic("txn", 2);
        try (KafkaProducer<String, String> producer = producer(Map.of("transactional.id", prefix + "-txn"))) {
            producer.initTransactions();
            producer.beginTransaction();
            for (int i = 0; i < 4; i++) producer.send(new ProducerRecord<>(topic, i % 2, null, "commit1-" + i));
            producer.commitTransaction();
            producer.beginTransaction();
            for (int i = 0; i < 4; i++) producer.send(new ProducerRecord<>(topic, i % 2, null, "abort-" + i));
            producer.flush();
            producer.abortTransaction();
            producer.beginTransaction();
            for (int i = 0; i < 4; i++) producer.send(new ProducerRecord<>(topic, i % 2, null, "commit2-" + i));
            producer.commitTransaction();
        }
        List<String> committed = readAll(topic, 2, "read_committed", 8);
        List<String> uncommitted = readAll(topic, 2, "read_uncommitted", 12);
        out.put("read_committed", committed.size());
        out.put("read_committed_aborted", committed.stream().filter(v -> v.startsWith("abort")).count());
        out.put("read_uncommitted", uncommitted.size());
        // 12 records and 3 markers per partition, 2 partitions.
        out.put("end_offsets", endOffsets(topic, 2));
    }

    private void producerFencing(Map<String, Object> out) throws Exception {
        String topic = topic("fence", 1);
        String tid = prefix + "-fence";
        KafkaProducer<String, String> first = producer(Map.of("transactional.id", tid));
        try {
            first.initTransactions();
            first.beginTransaction();
            first.send(new ProducerRecord<>(topic, "zombie")).get();
            try (KafkaProducer<String, String> second = producer(Map.of("transactional.id", tid))) {
                second.initTransactions(); // aborts the first producer's open transaction
                second.beginTransaction();
                second.send(new ProducerRecord<>(topic, "live")).get();
                second.commitTransaction();
            }
            try {
                first.send(new ProducerRecord<>(topic, "zombie-2")).get();
                first.commitTransaction();
                out.put("zombie", "committed");
            } catch (Exception e) {
                Throwable c = e instanceof ExecutionException ? e.getCause() : e;
                out.put("zombie", c.getClass().getSimpleName());
            }
        } finally {
            first.close(Duration.ofSeconds(5));
        }
        out.put("read_committed", readAll(topic, 1, "read_committed", 1));
    }

    // ------------------------------------------------------------------ consumers

    private void consumerGroup(Map<String, Object> out, String protocol) throws Exception {
        String topic = topic("cg-" + protocol, 2);
        produce(topic, 2, 10);
        String group = prefix + "-cg-" + protocol;
        Map<String, Object> cfg = new HashMap<>(consumerConfig("read_committed"));
        cfg.put("group.id", group);
        cfg.put("group.protocol", protocol);
        cfg.put("auto.offset.reset", "earliest");
        cfg.put("enable.auto.commit", "false");
        int seen = 0;
        Set<TopicPartition> assigned;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cfg)) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (seen < 10 && System.currentTimeMillis() < deadline) {
                seen += c.poll(POLL).count();
            }
            assigned = c.assignment();
            c.commitSync();
        }
        out.put("consumed", seen);
        out.put("assigned", assigned.size());
        Map<TopicPartition, OffsetAndMetadata> committed =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        Map<Integer, Long> offsets = new TreeMap<>();
        committed.forEach((tp, om) -> offsets.put(tp.partition(), om.offset()));
        out.put("committed", offsets);
        // A second member resumes from the commit: nothing left to read.
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cfg)) {
            c.subscribe(List.of(topic));
            int again = 0;
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (c.assignment().isEmpty() && System.currentTimeMillis() < deadline) {
                again += c.poll(POLL).count();
            }
            for (int i = 0; i < 3; i++) again += c.poll(POLL).count();
            out.put("after_restart", again);
            out.put("restart_assigned", c.assignment().size());
        }
    }

    /** KIP-848 regex subscription: subscribe(SubscriptionPattern) sends SubscribedTopicRegex. */
    private void consumerGroupPattern(Map<String, Object> out) throws Exception {
        String eu = topic("rx-eu", 2);
        String us = topic("rx-us", 1);
        String other = topic("rx-other-x", 1);
        produce(eu, 2, 6);
        produce(us, 1, 4);
        produce(other, 1, 3);
        Map<String, Object> cfg = new HashMap<>(consumerConfig("read_committed"));
        cfg.put("group.id", prefix + "-cg-pattern");
        cfg.put("group.protocol", "consumer");
        cfg.put("auto.offset.reset", "earliest");
        cfg.put("enable.auto.commit", "false");
        int seen = 0;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cfg)) {
            c.subscribe(new SubscriptionPattern(prefix + "-rx-[a-z]{2}"));
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (seen < 10 && System.currentTimeMillis() < deadline) {
                seen += c.poll(POLL).count();
            }
            List<String> topics = new ArrayList<>();
            for (TopicPartition tp : c.assignment()) {
                topics.add(tp.topic().substring(prefix.length() + 1) + "-" + tp.partition());
            }
            java.util.Collections.sort(topics);
            out.put("assigned", topics);
        }
        out.put("consumed", seen);
        cfg.put("group.id", prefix + "-cg-bad-pattern");
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cfg)) {
            c.subscribe(new SubscriptionPattern("rx-(?=eu)"));
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            String error = "none";
            while (System.currentTimeMillis() < deadline) {
                try {
                    c.poll(POLL);
                } catch (RuntimeException e) {
                    error = e.getClass().getSimpleName() + ": " + e.getMessage();
                    break;
                }
            }
            out.put("invalid_pattern", error);
        }
    }

    private KafkaShareConsumer<String, String> shareConsumer(String group, String mode) {
        Map<String, Object> cfg = new HashMap<>();
        cfg.put("bootstrap.servers", bootstrap);
        cfg.put("group.id", group);
        cfg.put("key.deserializer", StringDeserializer.class.getName());
        cfg.put("value.deserializer", StringDeserializer.class.getName());
        cfg.put("share.acknowledgement.mode", mode);
        return new KafkaShareConsumer<>(cfg);
    }

    private void groupConfig(String group, Map<String, String> settings) throws Exception {
        ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
        List<AlterConfigOp> ops = new ArrayList<>();
        settings.forEach((k, v) -> ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
        admin.incrementalAlterConfigs(Map.of(res, ops)).all().get();
    }

    private void shareImplicit(Map<String, Object> out) throws Exception {
        String topic = topic("share-impl", 1);
        produce(topic, 1, 10);
        String group = prefix + "-share-impl";
        groupConfig(group, Map.of("share.auto.offset.reset", "earliest"));
        int seen = 0;
        try (KafkaShareConsumer<String, String> c = shareConsumer(group, "implicit")) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (seen < 10 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(POLL)) {
                    seen++;
                    out.put("first_delivery_count", r.deliveryCount().orElse((short) -1));
                }
            }
            out.put("lock_timeout_ms", c.acquisitionLockTimeoutMs().orElse(-1));
            out.put("commit_errors", c.commitSync().values().stream().filter(o -> o.isPresent()).count());
        }
        out.put("consumed", seen);
        out.put("start_offsets", shareStartOffsets(group, topic, 1));
        // A second consumer finds nothing left: every record was accepted.
        try (KafkaShareConsumer<String, String> c = shareConsumer(group, "implicit")) {
            c.subscribe(List.of(topic));
            int again = 0;
            long deadline = System.currentTimeMillis() + 2_000;
            while (System.currentTimeMillis() < deadline) again += c.poll(POLL).count();
            out.put("after_restart", again);
        }
    }

    private void shareExplicit(Map<String, Object> out) throws Exception {
        String topic = topic("share-expl", 1);
        produce(topic, 1, 6);
        String group = prefix + "-share-expl";
        groupConfig(group, Map.of("share.auto.offset.reset", "earliest", "share.delivery.count.limit", "2"));
        Map<Long, String> firstRound = new TreeMap<>();
        Map<Long, Integer> redelivered = new TreeMap<>();
        try (KafkaShareConsumer<String, String> c = shareConsumer(group, "explicit")) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            // Offsets 0,1 accepted; 2,3 released; 4,5 rejected.
            while (firstRound.size() < 6 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(POLL)) {
                    AcknowledgeType t = r.offset() < 2 ? AcknowledgeType.ACCEPT
                            : r.offset() < 4 ? AcknowledgeType.RELEASE : AcknowledgeType.REJECT;
                    c.acknowledge(r, t);
                    firstRound.put(r.offset(), t.name());
                }
                c.commitSync();
            }
            // The released ones come back with delivery count 2; release them again: the
            // delivery count limit (2) archives them.
            deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (redelivered.size() < 2 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(POLL)) {
                    redelivered.put(r.offset(), (int) r.deliveryCount().orElse((short) -1));
                    c.acknowledge(r, AcknowledgeType.RELEASE);
                }
                c.commitSync();
            }
            int third = 0;
            deadline = System.currentTimeMillis() + 1_500;
            while (System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(POLL)) {
                    third++;
                    c.acknowledge(r, AcknowledgeType.ACCEPT);
                }
            }
            c.commitSync();
            out.put("after_limit", third);
        }
        out.put("first_round", firstRound.size());
        out.put("redelivered", redelivered);
        out.put("start_offsets", shareStartOffsets(group, topic, 1));
    }

    private void shareLockTimeout(Map<String, Object> out) throws Exception {
        String topic = topic("share-lock", 1);
        produce(topic, 1, 3);
        String group = prefix + "-share-lock";
        groupConfig(group, Map.of("share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "1000"));
        int held = 0;
        KafkaShareConsumer<String, String> idle = shareConsumer(group, "explicit");
        try {
            idle.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (held < 3 && System.currentTimeMillis() < deadline) held += idle.poll(POLL).count();
            out.put("lock_timeout_ms", idle.acquisitionLockTimeoutMs().orElse(-1));
            // idle never acknowledges: its locks lapse after 1 s and another member gets them.
            Map<Long, Integer> counts = new TreeMap<>();
            try (KafkaShareConsumer<String, String> other = shareConsumer(group, "explicit")) {
                other.subscribe(List.of(topic));
                deadline = System.currentTimeMillis() + DEADLINE_MS;
                while (counts.size() < 3 && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, String> r : other.poll(POLL)) {
                        counts.put(r.offset(), (int) r.deliveryCount().orElse((short) -1));
                        other.acknowledge(r, AcknowledgeType.ACCEPT);
                    }
                    other.commitSync();
                }
            }
            out.put("held", held);
            out.put("redelivered", counts);
        } finally {
            idle.close(Duration.ofSeconds(5));
        }
    }

    // ------------------------------------------------------------------ admin

    private void adminTopicsConfigs(Map<String, Object> out) throws Exception {
        String topic = topic("admin", 1);
        admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(3))).all().get();
        TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        out.put("partitions", d.partitions().size());
        out.put("listed", admin.listTopics().names().get().contains(topic));
        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        admin.incrementalAlterConfigs(Map.of(res, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET))))
                .all().get();
        // Kafka applies an altered config when the broker replays the metadata record, so a
        // describe right after the alter may still show the old value: wait as a user would.
        long applied = System.currentTimeMillis() + 5_000;
        String retention;
        do {
            Config cfg = admin.describeConfigs(List.of(res)).all().get().get(res);
            retention = cfg.get("retention.ms").value();
            if (!"3600000".equals(retention)) {
                Thread.sleep(50);
            }
        } while (!"3600000".equals(retention) && System.currentTimeMillis() < applied);
        out.put("retention.ms", retention);
        admin.deleteTopics(List.of(topic)).all().get();
        long deadline = System.currentTimeMillis() + 5_000;
        boolean gone = false;
        while (!gone && System.currentTimeMillis() < deadline) {
            gone = !admin.listTopics().names().get().contains(topic);
        }
        out.put("deleted", gone);
    }

    private void adminShareOffsets(Map<String, Object> out) throws Exception {
        String topic = topic("admin-share", 1);
        produce(topic, 1, 5);
        String group = prefix + "-admin-share";
        groupConfig(group, Map.of("share.auto.offset.reset", "earliest"));
        try (KafkaShareConsumer<String, String> c = shareConsumer(group, "implicit")) {
            c.subscribe(List.of(topic));
            int seen = 0;
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (seen < 5 && System.currentTimeMillis() < deadline) seen += c.poll(POLL).count();
            c.commitSync();
            ShareGroupDescription g = admin.describeShareGroups(List.of(group)).describedGroups().get(group).get();
            out.put("state_active", g.groupState().toString());
            out.put("members", g.members().size());
        }
        out.put("offsets_after_consume", shareStartOffsets(group, topic, 1));
        ShareGroupDescription g = admin.describeShareGroups(List.of(group)).describedGroups().get(group).get();
        out.put("state_empty", g.groupState().toString());
        admin.alterShareGroupOffsets(group, Map.of(new TopicPartition(topic, 0), 2L)).all().get();
        out.put("offsets_after_alter", shareStartOffsets(group, topic, 1));
        // Consuming again starts at the altered offset.
        try (KafkaShareConsumer<String, String> c = shareConsumer(group, "implicit")) {
            c.subscribe(List.of(topic));
            List<Long> got = new ArrayList<>();
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (got.size() < 3 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(POLL)) got.add(r.offset());
            }
            c.commitSync();
            out.put("after_alter", got);
        }
        admin.deleteShareGroupOffsets(group, Set.of(topic)).all().get();
        out.put("offsets_after_delete", shareStartOffsets(group, topic, 1));
        admin.deleteShareGroups(List.of(group)).all().get();
        out.put("group_deleted", true);
    }

    private void adminTransactions(Map<String, Object> out) throws Exception {
        String topic = topic("admin-txn", 1);
        String tid = prefix + "-admin-txn";
        KafkaProducer<String, String> open = producer(Map.of("transactional.id", tid));
        try {
            open.initTransactions();
            open.beginTransaction();
            open.send(new ProducerRecord<>(topic, 0, null, "open")).get();
            boolean listed = false;
            for (TransactionListing l : admin.listTransactions().all().get()) {
                if (l.transactionalId().equals(tid)) {
                    listed = true;
                    out.put("listed_state", l.state().toString());
                }
            }
            out.put("listed", listed);
            TransactionDescription d = admin.describeTransactions(List.of(tid)).description(tid).get();
            out.put("described_state", d.state().toString());
            out.put("described_partitions", d.topicPartitions().size());
            TopicPartition tp = new TopicPartition(topic, 0);
            List<ProducerState> producers = admin.describeProducers(List.of(tp)).partitionResult(tp).get().activeProducers();
            out.put("producers", producers.size());
            ProducerState ps = producers.get(0);
            out.put("producer_matches", ps.producerId() == d.producerId());
            out.put("txn_start_offset", ps.currentTransactionStartOffset().orElse(-1));
            try {
                admin.abortTransaction(new AbortTransactionSpec(tp, ps.producerId(), (short) ps.producerEpoch(),
                        ps.coordinatorEpoch().orElse(0))).all().get();
                out.put("abort", "ok");
            } catch (ExecutionException e) {
                out.put("abort", e.getCause().getClass().getSimpleName());
            }
            admin.fenceProducers(List.of(tid)).all().get();
            TransactionDescription after = admin.describeTransactions(List.of(tid)).description(tid).get();
            out.put("fenced_epoch_bumped", after.producerEpoch() > d.producerEpoch());
            out.put("after_fence_state", after.state().toString());
            try {
                open.commitTransaction();
                out.put("zombie", "committed");
            } catch (Exception e) {
                out.put("zombie", e.getClass().getSimpleName());
            }
        } finally {
            open.close(Duration.ofSeconds(5));
        }
        out.put("read_committed", readAll(topic, 1, "read_committed", 0).size());
    }

    // ------------------------------------------------------------------ helpers

    private String topic(String name, int partitions) throws Exception {
        String topic = prefix + "-" + name;
        admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
        return topic;
    }

    private KafkaProducer<String, String> producer(Map<String, Object> extra) {
        Map<String, Object> cfg = new HashMap<>(extra);
        cfg.put("bootstrap.servers", bootstrap);
        cfg.put("key.serializer", StringSerializer.class.getName());
        cfg.put("value.serializer", StringSerializer.class.getName());
        cfg.put("linger.ms", "5");
        return new KafkaProducer<>(cfg);
    }

    private void produce(String topic, int partitions, int n) throws Exception {
        try (KafkaProducer<String, String> p = producer(Map.of("enable.idempotence", "true"))) {
            for (int i = 0; i < n; i++) p.send(new ProducerRecord<>(topic, i % partitions, "k" + i, "v" + i));
            p.flush();
        }
    }

    private Map<String, Object> consumerConfig(String isolation) {
        Map<String, Object> cfg = new HashMap<>();
        cfg.put("bootstrap.servers", bootstrap);
        cfg.put("key.deserializer", StringDeserializer.class.getName());
        cfg.put("value.deserializer", StringDeserializer.class.getName());
        cfg.put("isolation.level", isolation);
        return cfg;
    }

    /** Every record up to the end offsets (assign, no group), waiting for at least `expect`. */
    private List<String> readAll(String topic, int partitions, String isolation, int expect) {
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerConfig(isolation))) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < partitions; i++) tps.add(new TopicPartition(topic, i));
            c.assign(tps);
            c.seekToBeginning(tps);
            long deadline = System.currentTimeMillis() + 10_000;
            while (System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> rs = c.poll(POLL);
                rs.forEach(r -> values.add(r.value()));
                if (values.size() >= expect && rs.isEmpty() && caughtUp(c, tps)) break;
            }
        }
        return values;
    }

    private static boolean caughtUp(KafkaConsumer<String, String> c, Collection<TopicPartition> tps) {
        Map<TopicPartition, Long> end = c.endOffsets(tps);
        for (TopicPartition tp : tps) {
            if (c.position(tp) < end.get(tp)) return false;
        }
        return true;
    }

    private Map<Integer, Long> endOffsets(String topic, int partitions) {
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(consumerConfig("read_uncommitted"))) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < partitions; i++) tps.add(new TopicPartition(topic, i));
            Map<Integer, Long> out = new TreeMap<>();
            c.endOffsets(tps).forEach((tp, o) -> out.put(tp.partition(), o));
            return out;
        }
    }

    private Map<Integer, Object> shareStartOffsets(String group, String topic, int partitions) throws Exception {
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = 0; i < partitions; i++) tps.add(new TopicPartition(topic, i));
        Map<TopicPartition, SharePartitionOffsetInfo> info = admin
                .listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec().topicPartitions(tps)))
                .partitionsToOffsetInfo(group).get();
        Map<Integer, Object> out = new TreeMap<>();
        info.forEach((tp, i) -> out.put(tp.partition(), i == null ? null : i.startOffset()));
        return out;
    }

    // A small JSON writer: maps, lists, strings, numbers, booleans, null.
    private static String json(Object v) {
        if (v == null) return "null";
        if (v instanceof String s) {
            StringBuilder b = new StringBuilder("\"");
            for (char ch : s.toCharArray()) {
                if (ch == '"' || ch == '\\') b.append('\\').append(ch);
                else if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch));
                else b.append(ch);
            }
            return b.append('"').toString();
        }
        if (v instanceof Number || v instanceof Boolean) return v.toString();
        if (v instanceof Map<?, ?> m) {
            StringBuilder b = new StringBuilder("{");
            for (var e : m.entrySet()) {
                if (b.length() > 1) b.append(", ");
                b.append(json(String.valueOf(e.getKey()))).append(": ").append(json(e.getValue()));
            }
            return b.append('}').toString();
        }
        if (v instanceof Collection<?> c) {
            StringBuilder b = new StringBuilder("[");
            for (Object o : c) {
                if (b.length() > 1) b.append(", ");
                b.append(json(o));
            }
            return b.append(']').toString();
        }
        return json(v.toString());
    }
}
