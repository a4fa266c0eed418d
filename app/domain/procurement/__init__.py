"""Procurement: an organisation's private price book (its own quotes, in the seed files' price-row format,
pricing its answers in place of the list's rows: ``app.kb.books``), the drift of a stored recommendation on
today's knowledge, and the watches that deliver it."""
