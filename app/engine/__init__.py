"""The engine: the decision over the options' assessments, scoring, rules, batches, insights, plans."""
