"""Projections of the ledger: the Claim Store, the graph, export; refresh brings the
store, then the graph's knowledge-base blocks, up to date."""
