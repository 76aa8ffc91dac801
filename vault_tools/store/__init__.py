"""Projections of the ledger: the Claim Store, the graph, export."""
