"""The capacity plan feature: a demand over the horizon in, portfolios of options out, as JSON, a chart or a
spreadsheet."""
