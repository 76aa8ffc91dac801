"""The Decision Ledger: an append-only, hash-chained JSONL file (docs/ledger.md).

events (canonical JSON, ids, hashes, the rules of a line) < lines (reading the file) <
index (the derived state in `.vt/`) < verify (`vt ledger verify`) < gate (the check before
any reader or appender trusts the file) < append (`Ledger`, `Transaction`). Beside them:
merge (of conflicting ledgers, on events and lines), heads (a claim's state from its
events) and crash (the crash tests' seam).
"""
