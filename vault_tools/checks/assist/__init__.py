"""Review assist: the mistakes a careful reviewer would catch, as `warning` findings."""
