"""Security: ACLs and what they allow, SCRAM users, client quotas."""
