"""What the console is pointed at: typed readers of the environment, the Kafka clusters and their Kafka
Connect clusters. Nothing here imports the rest of the console."""
