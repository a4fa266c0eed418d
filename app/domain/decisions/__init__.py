"""The decision feature: price comparisons, recommendations (stored and read back) and batch evaluations,
as JSON or spreadsheets."""
