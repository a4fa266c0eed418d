"""The catalog feature: the loaded options and the knowledge base's rows with their sources, read-only."""
