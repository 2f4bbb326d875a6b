"""The data pipeline on Apache Spark (PySpark): Kafka data source, sessions."""
