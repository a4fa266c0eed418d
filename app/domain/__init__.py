"""The web features, a folder each: its controller, schemas and service (catalog, decisions, insights, planning,
capacity, procurement, audit, health, the explorer), and what they share (``app.domain.shared``)."""
