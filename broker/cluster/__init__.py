"""The cluster as a whole: its overview, its KRaft quorum or ZooKeeper mode, the brokers' configs and their log dirs."""
