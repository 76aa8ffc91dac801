"""Infrastructure that knows nothing of reviews: durable writes, locks, workers, SQLite."""
