"""The Decision Ledger: an append-only, hash-chained JSONL file (docs/ledger.md)."""
