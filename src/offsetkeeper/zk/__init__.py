"""ZooKeeper-era consumer offsets (Kafka < 0.9): export them, and migrate them into Kafka."""
